"""RACER: risk-controlled, set-valued routing of queries to LLMs, with abstention and vote aggregation.

Hao, Zeng, Wei, Jing. "RACER: Risk-Aware Calibrated Efficient Routing for Large Language
Models", arXiv:2603.06616, 2026.
"""

from .aggregation import aggregate_answers, normalize_answer, select_temperature, weighted_vote
from .calibrator import RACER, InfeasibleRiskWarning, RACERCalibrator, crc_threshold, pac_threshold
from .data import load_routellm_gsm8k, load_routellm_mmlu, make_routing_benchmark
from .routers import ScoreRouter, TextScoreRouter

__all__ = ["RACERCalibrator", "RACER", "InfeasibleRiskWarning", "crc_threshold", "pac_threshold",
           "aggregate_answers", "normalize_answer", "select_temperature", "weighted_vote",
           "make_routing_benchmark", "load_routellm_mmlu", "load_routellm_gsm8k", "ScoreRouter",
           "TextScoreRouter"]
