"""Second-order bilevel optimization (FSBA, lazy LFSBA) and lazy minimax cubic Newton (LMCN).

Yang, Liu, Chen & Lui, *Second-Order Bilevel Optimization with Accelerated Convergence Rates*,
ICML 2026 (arXiv 2605.06431).
"""

from .baselines import AIDBA, F2BA, GDA, ExactCubicNewton, PerturbedF2BA
from .cubic import cubic_model, cubic_step, sosp_certificate
from .data import HyperCleaning, hyper_cleaning_digits, make_saddle_bilevel, make_saddle_minimax
from .optimizers import (FSBA, LFSBA, LMCN, MCN, BilevelResult, newton_solve, penalty_surrogate,
                         schur_complement)
from .problem import BilevelProblem, MinimaxProblem, NotStronglyConvexError

__all__ = ["BilevelProblem", "MinimaxProblem", "NotStronglyConvexError", "FSBA", "LFSBA", "MCN",
           "LMCN", "BilevelResult", "AIDBA", "F2BA", "PerturbedF2BA", "GDA", "ExactCubicNewton",
           "cubic_step", "cubic_model", "sosp_certificate", "penalty_surrogate", "schur_complement",
           "newton_solve", "make_saddle_bilevel", "make_saddle_minimax", "hyper_cleaning_digits",
           "HyperCleaning"]
