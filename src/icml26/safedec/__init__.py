"""SafeDec: STL-constrained decoding for autoregressive robot navigation policies.

Kapoor, Ganlath, Clifford, Liu, Scherer, Kang. "SafeDec: Constrained Decoding for Safe
Autoregressive Generalist Robot Navigation Policies", ICML 2026 (arXiv:2509.01728).
"""

from .baselines import FilterDecoder, RejectionDecoder, UnconstrainedDecoder
from .data import (Episode, LatticeDynamics, LatticeNavEnv, WorldConfig, expert_demos, make_spec,
                   sample_episode)
from .decoding import DynamicsModel, SafeDecLogitsProcessor, SafeDecoder, constrain_logits, sample_tokens

from .exact import exact_sequence_laws
from .policy import NavTransformer, train_bc
from .stl import (Always, And, Eventually, Formula, Implies, InfeasibleSpecError, Not, Or, Predicate,
                  SafetyMonitor, Until, is_satisfied)

__all__ = [
    "Formula", "Predicate", "Not", "And", "Or", "Implies", "Always", "Eventually", "Until",
    "SafetyMonitor", "InfeasibleSpecError", "is_satisfied",
    "DynamicsModel", "constrain_logits", "sample_tokens", "SafeDecoder", "SafeDecLogitsProcessor",
    "UnconstrainedDecoder", "FilterDecoder", "RejectionDecoder",
    "WorldConfig", "Episode", "sample_episode", "make_spec", "LatticeDynamics", "LatticeNavEnv",
    "expert_demos", "NavTransformer", "train_bc", "exact_sequence_laws",
]
