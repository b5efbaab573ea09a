"""Baselines RACER is compared with (spec §3); no maintained library provides them.

Every function returns sets in RACER's layout: a boolean mask of shape (n, K + 1) whose
column 0 (the null / abstain option) is always False, so :func:`~icml26.racer.calibrator.set_metrics`
scores them like RACER's sets.

References
----------
Hao, Zeng, Wei, Jing. "RACER: Risk-Aware Calibrated Efficient Routing for Large Language
Models", arXiv:2603.06616, 2026.
"""

from __future__ import annotations

import math

import numpy as np

from icml26.core.validation import check_int, check_matrix, check_probability

__all__ = ["top_k_sets", "threshold_sets", "all_models_sets", "best_single_model",
           "naive_quantile_threshold"]

UNCALIBRATED_THRESHOLD = 0.5


def _with_null_column(routed: np.ndarray) -> np.ndarray:
    return np.column_stack([np.zeros(routed.shape[0], dtype=bool), routed])


def top_k_sets(scores, k: int = 1) -> np.ndarray:
    """Route every query to its ``k`` highest-scoring models (``k = 1``: the base router).

    Examples
    --------
    >>> top_k_sets([[0.1, 0.9, 0.5]], k=2).tolist()
    [[False, False, True, True]]
    """
    scores = check_matrix(scores, "scores")
    k = check_int(k, "k", min_value=1, max_value=scores.shape[1])
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    routed = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(routed, order, True, axis=1)
    return _with_null_column(routed)


def threshold_sets(scores, threshold: float = UNCALIBRATED_THRESHOLD) -> np.ndarray:
    """Uncalibrated threshold ``{k : r_k >= t}`` (an empty set is an abstention)."""
    scores = check_matrix(scores, "scores")
    threshold = check_probability(threshold, "threshold", open_interval=False)
    return _with_null_column(scores >= threshold)


def all_models_sets(scores) -> np.ndarray:
    """Every model for every query (cost K; the "all models vote" baseline)."""
    scores = check_matrix(scores, "scores")
    return _with_null_column(np.ones(scores.shape, dtype=bool))


def best_single_model(correct) -> tuple[int, float]:
    """Oracle best single model on the given labels: (index, accuracy)."""
    correct = check_matrix(correct, "correct")
    accuracy = correct.mean(axis=0)
    best = int(np.argmax(accuracy))
    return best, float(accuracy[best])


def naive_quantile_threshold(levels, alpha: float) -> float:
    """The empirical quantile ``l_(ceil(n(1 - alpha)))`` without the conformal (n + 1).

    A wrong calibrator kept as a negative control: its test risk exceeds alpha by about
    ``alpha / n`` (spec §6 small-n check: 0.109 vs 0.099 at n = 100, alpha = 0.1).
    """
    levels = np.asarray(levels, dtype=float)
    alpha = check_probability(alpha, "alpha")
    n = levels.shape[0]
    index = min(n, max(1, math.ceil(n * (1.0 - alpha) - 1e-9)))
    return float(np.partition(levels, index - 1)[index - 1])
