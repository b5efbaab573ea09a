"""CDAL: fair multi-view clustering with causal disentangled (semantic / sensitive) anchors, O(n).

"Causal Disentangled Anchor Learning (CDAL)" for fair multi-view clustering, ICML 2026
(code: github.com/Tracesource/CDAL, not readable; the formulation here is our reconstruction
from the abstract — see the package README).
"""

from .cdal import CDAL, SlowProgressWarning, project_simplex
from .data import FairMultiviewData, load_reverse_digits, make_fair_multiview, make_preset
from .metrics import (balance, clustering_accuracy, fairness_entropy, hsic_linear, proportional_balance,
                      utility_scores)

__all__ = ["CDAL", "SlowProgressWarning", "project_simplex", "FairMultiviewData", "make_fair_multiview",
           "make_preset", "load_reverse_digits", "balance", "proportional_balance", "fairness_entropy",
           "hsic_linear", "clustering_accuracy", "utility_scores"]
