"""Laplacian (spectral) state features for linear value-function approximation, with certified bounds.

Giorgi, Olivieri, Jiang, Toni & Papini, *Impact of Connectivity on Laplacian Representations
in Reinforcement Learning*, ICML 2026 (arXiv 2603.08558).
"""

from .baselines import GraphDrawingFeatures, proto_value_functions, random_features
from .bounds import (bound_violations, connectivity_bounds, end_to_end_bounds, estimation_bounds,
                     projection_error, rho_norm, subspace_sin_theta)
from .estimation import (count_weights, estimate_laplacian_from_trajectories,
                         estimate_normalized_laplacian, sample_trajectories)
from .laplacian import (LaplacianFeatures, LinearValueApproximator, SpectralFeatures, edge_weights,
                        fiedler_value, laplacian_eigenpairs, misread_laplacian, normalized_laplacian,
                        symmetrized_laplacian)
from .mdp import (GridWorld, chain_period, check_transition_matrix, make_lazy, make_policy,
                  policy_transition_matrix, stationary_distribution, value_function)

__all__ = [
    "GridWorld", "make_policy", "policy_transition_matrix", "check_transition_matrix",
    "stationary_distribution", "value_function", "chain_period", "make_lazy",
    "symmetrized_laplacian", "misread_laplacian", "normalized_laplacian", "edge_weights",
    "laplacian_eigenpairs", "fiedler_value", "SpectralFeatures", "LaplacianFeatures",
    "LinearValueApproximator",
    "connectivity_bounds", "bound_violations", "estimation_bounds", "end_to_end_bounds",
    "projection_error", "rho_norm", "subspace_sin_theta",
    "sample_trajectories", "count_weights", "estimate_laplacian_from_trajectories",
    "estimate_normalized_laplacian",
    "proto_value_functions", "random_features", "GraphDrawingFeatures",
]
