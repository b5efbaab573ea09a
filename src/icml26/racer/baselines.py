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
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from icml26.core.validation import (check_int, check_matrix, check_probability,
                                    check_scalar_in)

from .calibrator import crc_threshold

__all__ = ["top_k_sets", "threshold_sets", "all_models_sets", "best_single_model",
           "naive_quantile_threshold", "mixed_top_k_sets", "CalibratedTopK"]

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


def _top_n_sets(scores: np.ndarray, n_routed: np.ndarray) -> np.ndarray:
    """Route query i to its ``n_routed[i]`` best models; an empty set abstains (column 0)."""
    rank = np.argsort(np.argsort(-scores, axis=1, kind="stable"), axis=1, kind="stable")
    routed = rank < np.asarray(n_routed)[:, None]
    return np.column_stack([~routed.any(axis=1), routed])


def _uniforms(random_state, n: int) -> np.ndarray:
    return np.random.default_rng(random_state).random(n)


def mixed_top_k_sets(scores, mean_size: float, random_state=None) -> np.ndarray:
    """Top-k routing with a fractional k: query i gets its ``floor(mean_size + u_i)`` best
    models, ``u_i ~ U[0, 1)``, so the expected set size is ``mean_size`` exactly.

    The cost-matched competitor of a variable-size router: a fixed-size set (k or k + 1)
    with the same mean number of routed models. An empty set (``mean_size < 1``) abstains.

    Examples
    --------
    >>> sets = mixed_top_k_sets(np.random.default_rng(0).random((4000, 5)), 2.3, random_state=0)
    >>> round(float(sets[:, 1:].sum(axis=1).mean()), 1)
    2.3
    """
    scores = check_matrix(scores, "scores")
    mean_size = check_scalar_in(mean_size, "mean_size", low=0.0, high=float(scores.shape[1]))
    n_routed = np.floor(mean_size + _uniforms(random_state, scores.shape[0])).astype(int)
    return _top_n_sets(scores, np.minimum(n_routed, scores.shape[1]))


class CalibratedTopK(BaseEstimator):
    """Top-k routing whose (fractional) k is calibrated for misrouting risk <= alpha.

    Query i is routed to its ``floor(lambda + u_i)`` best models (``u_i ~ U[0, 1)`` drawn per
    query), so ``lambda`` is the expected set size. The level of a calibration query is
    ``l_i = r_i + 1 - u_i`` (``r_i``: the 0-based rank of its best-ranked correct model;
    ``+inf`` when no model is correct) and ``lambda`` is the conformal-risk-control quantile
    of RACER (:func:`~icml26.racer.calibrator.crc_threshold`), so the marginal guarantee
    ``P(no correct model routed) <= alpha`` is RACER's. Without a null option top-k cannot
    cover queries no model answers: below their share the threshold is infinite (all models).

    The competitor "calibrated top-k at matched risk": the same calibration, a fixed-size
    (rank-based) set instead of RACER's score-gap sets with abstention.

    Parameters
    ----------
    alpha : float
        Target misrouting risk in (0, 1).
    random_state : int or None
        Seed of the per-query uniforms (fit and predict draw from independent streams).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.random((2000, 4)); correct = (rng.random((2000, 4)) < scores).astype(int)
    >>> top = CalibratedTopK(alpha=0.1, random_state=0).fit(scores, correct)
    >>> sets = top.predict_sets(scores)
    >>> bool(abs((~(sets[:, 1:] & (correct == 1)).any(axis=1)).mean() - 0.1) < 0.03)
    True
    """

    def __init__(self, alpha: float = 0.1, random_state=None):
        self.alpha = alpha
        self.random_state = random_state

    def _u(self, n: int, stage: int) -> np.ndarray:
        seed = None if self.random_state is None else [int(self.random_state), stage]
        return _uniforms(seed, n)

    def fit(self, scores, correct):
        """Calibrate the expected set size ``lambda_`` on held-out queries; returns self."""
        alpha = check_probability(self.alpha, "alpha")
        scores = check_matrix(scores, "scores")
        correct = check_matrix(correct, "correct")
        if correct.shape != scores.shape:
            raise ValueError(f"correct has shape {correct.shape} but scores has shape "
                             f"{scores.shape}")
        rank = np.argsort(np.argsort(-scores, axis=1, kind="stable"), axis=1, kind="stable")
        best = np.where(correct > 0, rank, np.inf).min(axis=1)
        levels = best + 1.0 - self._u(scores.shape[0], 0)
        self.lambda_ = float(crc_threshold(levels, alpha))
        self.n_models_ = int(scores.shape[1])
        return self

    def predict_sets(self, scores) -> np.ndarray:
        """(n, K + 1) boolean sets in RACER's layout (column 0: abstain, only when empty)."""
        check_is_fitted(self, "lambda_")
        scores = check_matrix(scores, "scores")
        if scores.shape[1] != self.n_models_:
            raise ValueError(f"scores has {scores.shape[1]} columns but the calibrator was "
                             f"fitted with K={self.n_models_} models")
        lam = min(self.lambda_, float(self.n_models_))
        n_routed = np.floor(lam + self._u(scores.shape[0], 1)).astype(int)
        return _top_n_sets(scores, np.minimum(n_routed, self.n_models_))
