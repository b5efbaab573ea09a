"""Risk Awareness Injection (RAI): training-free calibration of vision-language models against
multimodal jailbreaks by amplifying the unsafe signal of the few highest-risk visual tokens.

Reference: Mengxuan Wang, Yuxin Chen, Gang Xu, Tao He, Hongjie Jiang, Ming Li, "Risk Awareness
Injection: Calibrating Vision-Language Models for Safety without Compromising Utility", ICML 2026
(arXiv:2602.03402).
"""

from .baselines import AdaShieldS, CoCA, ECSOLite, NoDefense, OracleReplacement, RAIDefense
from .glyphsafe import GlyphSafe, GlyphSafeConfig, Query, render
from .injection import (DEFAULT_KEYWORDS, RiskAwarenessInjection, TokenReplacement, UnsafePrototypeSubspace,
                        decoder_layers)
from .judge import REFUSAL, KeywordRefusalJudge, StepsJudge, asr

__all__ = ["UnsafePrototypeSubspace", "RiskAwarenessInjection", "DEFAULT_KEYWORDS", "decoder_layers",
           "GlyphSafe", "GlyphSafeConfig", "Query", "render", "KeywordRefusalJudge", "StepsJudge", "asr",
           "REFUSAL", "NoDefense", "RAIDefense", "AdaShieldS", "ECSOLite", "CoCA", "TokenReplacement",
           "OracleReplacement"]
