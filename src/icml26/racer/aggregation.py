"""Downstream answers from a routed model set: (weighted) vote over the models' answers.

References
----------
Hao, Zeng, Wei, Jing. "RACER: Risk-Aware Calibrated Efficient Routing for Large Language
Models", arXiv:2603.06616, 2026.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from icml26.core.validation import check_finite_array, check_scalar_in

__all__ = ["normalize_answer", "aggregate_answers", "weighted_vote", "select_temperature",
           "TEMPERATURE_GRID"]

TEMPERATURE_GRID = np.logspace(-3, 1, 100)
"""The paper code's grid of vote temperatures (chosen on a held-out split)."""

_TIE_TOLERANCE = 1e-12


def normalize_answer(answer):
    """Canonical form of a model's final answer (None when there is no answer).

    Strips whitespace, drops "," and "$" and a trailing ".", canonicalises numbers
    (``"1.0"``, ``"1"`` and ``1`` agree) and lower-cases.

    Examples
    --------
    >>> normalize_answer(" $1,000.00. "), normalize_answer("1.0"), normalize_answer("B")
    ('1000', '1', 'b')
    >>> normalize_answer(float("nan")) is None
    True
    """
    if answer is None:
        return None
    text = str(answer).strip().replace(",", "").replace("$", "").strip()
    while text.endswith("."):
        text = text[:-1].rstrip()
    if text == "" or text.lower() in {"nan", "none"}:
        return None
    try:
        value = float(text)
    except ValueError:
        return text.lower()
    if not math.isfinite(value):
        return text.lower()
    if value.is_integer():
        return str(int(value))
    return repr(value)


def _softmax_weights(confidences, valid, temperature):
    """softmax_k(c_k / T) over the valid models; ``temperature`` may be an array (leading axis)."""
    t = np.asarray(temperature, dtype=float).reshape(-1, 1, 1)
    logits = np.where(valid, confidences / t, -np.inf)  # (T, n, K)
    top = logits.max(axis=2, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    w = np.where(valid, np.exp(logits - top), 0.0)
    total = w.sum(axis=2, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0)


def _vote_parts(codes, routed, tie_scores):
    """The temperature-free parts of a vote: validity, answer agreement, tie-break scores."""
    codes = np.asarray(codes)
    valid = np.asarray(routed, dtype=bool) & (codes >= 0)
    same = ((codes[:, :, None] == codes[:, None, :]) & valid[:, None, :]).astype(float)  # (n,K,K)
    if tie_scores is None:
        secondary = np.zeros(codes.shape)
    else:
        secondary = (np.einsum("nij,nj->ni", same, np.asarray(tie_scores, dtype=float))
                     / np.maximum(same.sum(axis=2), 1))
    return codes, valid, same, secondary


def _vote(codes, valid, same, secondary, weights):
    """Winning code per query for (T, n, K) weights -> (T, n); -1 where nothing is valid."""
    support = (same[None] @ weights[..., None])[..., 0]  # (T, n, K)
    support = np.where(valid, support, -np.inf)
    best = support.max(axis=2, keepdims=True)
    tied = valid & (support >= best - _TIE_TOLERANCE)
    choice = np.where(tied, secondary, -np.inf).argmax(axis=2)  # (T, n)
    winner = np.take_along_axis(np.broadcast_to(codes, support.shape), choice[..., None],
                                axis=2)[..., 0]
    return np.where(valid.any(axis=1), winner, -1)


def weighted_vote(codes, routed, confidences=None, temperature: float = 1.0,
                  tie_scores=None) -> np.ndarray:
    """Vectorised weighted vote over integer-coded answers.

    Parameters
    ----------
    codes : int array of shape (n, K)
        Answer codes; negative = no answer (never receives votes).
    routed : bool array of shape (n, K)
        The routed models of each query.
    confidences : array of shape (n, K), optional
        ``c_k``; weights are ``softmax_k(c_k / temperature)`` over the routed models with an
        answer. None: equal weights (majority vote).
    temperature : float
        Softmax temperature T > 0.
    tie_scores : array of shape (n, K), optional
        Ties between answers are broken by the higher mean of these scores over the models
        giving each answer (default: ``confidences``; None and no confidences: lowest index).

    Returns
    -------
    int array of shape (n,)
        The winning code; -1 where no routed model gave an answer (abstention).

    Examples
    --------
    >>> weighted_vote([[3, 3, 5]], [[True, True, True]], [[0.1, 0.2, 0.9]], 0.1).tolist()
    [5]
    >>> weighted_vote([[3, 3, 5]], [[True, True, True]]).tolist()
    [3]
    """
    tie_scores = confidences if tie_scores is None else tie_scores
    codes, valid, same, secondary = _vote_parts(codes, routed, tie_scores)
    if confidences is None:
        weights = (valid / np.maximum(valid.sum(axis=1, keepdims=True), 1))[None]
    else:
        weights = _softmax_weights(np.asarray(confidences, dtype=float), valid, temperature)
    return _vote(codes, valid, same, secondary, weights)[0]


def select_temperature(codes, routed, confidences, gold_codes, grid=TEMPERATURE_GRID) -> float:
    """The temperature of ``grid`` with the best weighted-vote accuracy (the first on ties).

    The paper code picks T on a held-out split from ``logspace(-3, 1, 100)``.
    """
    codes, valid, same, secondary = _vote_parts(codes, routed, confidences)
    grid = np.asarray(grid, dtype=float)
    weights = _softmax_weights(np.asarray(confidences, dtype=float), valid, grid)
    winners = _vote(codes, valid, same, secondary, weights)  # (T, n)
    accuracy = (winners == np.asarray(gold_codes)[None, :]).mean(axis=1)
    return float(grid[int(np.argmax(accuracy))])


def _routed_mask(sets, n: int, k: int) -> np.ndarray:
    as_indices = isinstance(sets, (list, tuple)) and not all(
        isinstance(v, (bool, np.bool_)) for row in sets for v in np.atleast_1d(row))
    if as_indices:
        if len(sets) != n:
            raise ValueError(f"sets has {len(sets)} entries but answers has {n} rows")
        mask = np.zeros((n, k), dtype=bool)
        for i, idx in enumerate(sets):
            idx = np.asarray(idx, dtype=int)
            if idx.size and (idx.min() < 0 or idx.max() >= k):
                raise ValueError(f"sets[{i}] holds model indices outside 0..{k - 1}")
            mask[i, idx] = True
        return mask
    mask = np.asarray(sets, dtype=bool)
    if mask.ndim != 2 or mask.shape[0] != n or mask.shape[1] not in (k, k + 1):
        raise ValueError(f"sets must be a list of index arrays or a boolean mask of shape "
                         f"({n}, {k}) or ({n}, {k + 1}) (column 0 = null option), got shape "
                         f"{mask.shape}")
    return mask[:, 1:] if mask.shape[1] == k + 1 else mask


def aggregate_answers(answers, sets, weights=None, temperature: float = 1.0,
                      tie_scores=None) -> np.ndarray:
    """Final answer per query by a (weighted) vote of the routed models' answers.

    Parameters
    ----------
    answers : array-like of shape (n, K)
        Each model's answer (str, number or None); normalised by :func:`normalize_answer`.
    sets : bool array of shape (n, K + 1) or (n, K), or list of index arrays
        Routed models, e.g. ``RACERCalibrator.predict_sets`` (column 0, the null option, is
        ignored) or ``predict_routes``. A list of lists counts as index lists unless all its
        entries are bools; numpy arrays count as masks.
    weights : array of shape (n, K), optional
        Per-model confidences ``c_k`` (router scores by default in the paper); the vote weight
        is ``softmax_k(c_k / temperature)`` over the routed models. None: majority vote.
    temperature : float
        Softmax temperature T > 0.
    tie_scores : array of shape (n, K), optional
        Scores whose mean over an answer's supporters breaks ties (default: ``weights``).

    Returns
    -------
    object array of shape (n,)
        The winning normalised answer, or None for an abstention.

    Examples
    --------
    >>> aggregate_answers([["4", "4.0", "5"]], [[False, True, True, True]]).tolist()
    ['4']
    >>> aggregate_answers([["4", "5"]], [[True, False, False]]).tolist()
    [None]
    """
    table = np.asarray(answers, dtype=object)
    if table.ndim != 2 or table.size == 0:
        raise ValueError(f"answers must be a non-empty 2-D array (n, K), got shape {table.shape}")
    n, k = table.shape
    routed = _routed_mask(sets, n, k)
    temperature = check_scalar_in(temperature, "temperature", low=0.0, low_inclusive=False)
    conf = None
    if weights is not None:
        conf = check_finite_array(weights, "weights", ndim=2)
        if conf.shape != (n, k):
            raise ValueError(f"weights has shape {conf.shape}; expected {(n, k)} like answers")
    normalised = [normalize_answer(a) for a in table.ravel()]
    codes, uniques = pd.factorize(pd.Series(normalised, dtype=object), use_na_sentinel=True)
    codes = codes.reshape(n, k)
    winner = weighted_vote(codes, routed, conf, temperature, tie_scores)
    out = np.full(n, None, dtype=object)
    has = winner >= 0
    out[has] = np.asarray(uniques, dtype=object)[winner[has]]
    return out
