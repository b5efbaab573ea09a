"""Probabilistic elite membership for fixed-budget noisy evolution strategies (RB-PEM).

S. Wang, Z. Lu. *Depth over Fidelity in Fixed-Budget Noisy Evolution Strategies.*
ICML 2026 (arXiv 2606.06555).
"""

from .baselines import ResampleCMA, SepCMABaseline, UHCMA
from .objective import BudgetedObjective, BudgetExhausted, OptimizeResult
from .pem import (RBPEM, expected_rank_weights, log_rank_weights, power_rank_weights,
                  rank_disagreement)
from .probe_switch import ProbeSwitch, minimize

__all__ = ["RBPEM", "ProbeSwitch", "SepCMABaseline", "ResampleCMA", "UHCMA",
           "expected_rank_weights", "rank_disagreement", "power_rank_weights",
           "log_rank_weights", "BudgetedObjective", "BudgetExhausted", "OptimizeResult",
           "minimize"]
