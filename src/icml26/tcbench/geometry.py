"""Latent-geometry diagnostics per pressure bin: participation ratio, feature spread, PC1 vs ``P_c``.

Paper §4.2 / Fig. 4 (repo ``probing/core/geometry.py``): inside each pressure bin, a
representation that collapses along the physical axis loses effective dimensionality and
spread, and its first principal component stops tracking ``P_c``.

References
----------
Yao et al., *The Perception–Physics Paradox: Probing Scientific Alignment with TC-Bench*,
ICML 2026, §4.2.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..core.validation import check_finite_array, check_int, check_matrix, check_same_length

__all__ = ["participation_ratio", "feature_spread", "pca_per_bin", "geometry_report",
           "standardize_features", "DEFAULT_EDGES"]

DEFAULT_EDGES = (875.0, 920.0, 960.0, 980.0, 990.0, 1000.0, 1020.0)
PR_EPS = 1e-12
MAX_PAIRS = 200_000


def _rows(Z: Any):
    """A finite 2-D matrix, or None when it has exactly 1 row (the caller returns nan).

    An empty ``Z`` (no rows or no features) is an error, not a nan: there is nothing to
    measure, and a silent nan would hide the caller's empty selection.
    """
    try:
        arr = np.asarray(Z, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError("Z must be a 2-D array of real numbers") from exc
    if arr.ndim != 2:
        raise ValueError(f"Z must be 2-dimensional (n_samples, n_features), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"Z is empty (shape {arr.shape}); expected at least one row and one "
                         "feature (a single row gives nan)")
    if arr.shape[0] < 2:
        return None
    return check_matrix(arr, "Z")


def participation_ratio(Z: Any) -> float:
    """Effective dimensionality ``(Σ λ)² / (Σ λ² + 1e-12)`` of the feature covariance.

    ``λ`` are the eigenvalues (negatives clipped to 0) of the covariance of the centred
    features; when ``d > n`` the Gram matrix (same non-zero spectrum) is used.  One row gives
    ``nan``; an empty ``Z`` (no rows or no features) raises ``ValueError``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> round(participation_ratio(rng.standard_normal((4000, 3))), 1)
    3.0
    """
    Z = _rows(Z)
    if Z is None:
        return float("nan")
    n, d = Z.shape
    centred = Z - Z.mean(axis=0)
    gram = centred @ centred.T if d > n else centred.T @ centred
    lam = np.clip(np.linalg.eigvalsh(gram / (n - 1)), 0.0, None)
    return float(lam.sum() ** 2 / (np.sum(lam ** 2) + PR_EPS))


def feature_spread(Z: Any, max_pairs: int = MAX_PAIRS, seed: int = 0) -> float:
    """Mean pairwise Euclidean distance between rows of ``Z``.

    When ``n(n−1)/2 > max_pairs``, ``max_pairs`` random pairs are drawn
    (``default_rng(seed)``; pairs with ``i = j`` dropped).  Fewer than 2 rows give ``nan``.

    Examples
    --------
    >>> feature_spread([[0.0, 0.0], [3.0, 4.0]])
    5.0
    """
    max_pairs = check_int(max_pairs, "max_pairs", min_value=1)
    Z = _rows(Z)
    if Z is None:
        return float("nan")
    n = Z.shape[0]
    if n * (n - 1) // 2 <= max_pairs:
        from scipy.spatial.distance import pdist
        return float(pdist(Z).mean())
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, max_pairs)
    j = rng.integers(0, n, max_pairs)
    keep = i != j
    return float(np.linalg.norm(Z[i[keep]] - Z[j[keep]], axis=1).mean())


def _bins(pressure: np.ndarray, edges: Sequence[float]):
    edges = check_finite_array(edges, "edges", ndim=1)
    if edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError(f"edges must be at least 2 strictly increasing values, got {edges}")
    for lo, hi in zip(edges[:-1], edges[1:]):
        yield float(lo), float(hi), (pressure >= lo) & (pressure < hi)


def _pc1(Z: np.ndarray, pressure: np.ndarray) -> tuple[float, float, float]:
    """|slope| and |Pearson r| of the PC1 score (within-bin standardized) vs P_c, and its EVR."""
    std = Z.std(axis=0)
    X = (Z - Z.mean(axis=0)) / np.where(std > 0, std, 1.0)
    _, s, vt = np.linalg.svd(X, full_matrices=False)
    score = X @ vt[0]
    evr = float(s[0] ** 2 / max(np.sum(s ** 2), PR_EPS))
    if np.ptp(pressure) == 0 or np.ptp(score) == 0:
        return float("nan"), float("nan"), evr
    slope = stats.linregress(pressure, score).slope
    r = stats.pearsonr(pressure, score)[0]
    return abs(float(slope)), abs(float(r)), evr


def pca_per_bin(Z: Any, pressure: Any, edges: Sequence[float] = DEFAULT_EDGES,
                min_count: int = 500) -> pd.DataFrame:
    """PC1 of the within-bin standardized features against ``P_c``, per pressure bin.

    Returns
    -------
    DataFrame with ``lo, hi, n, pc1_slope`` (|slope| of PC1 score per hPa), ``pc1_abs_r``
    and ``pc1_evr`` (explained-variance ratio); bins with ``n < max(min_count, 3)`` are ``nan``.
    """
    Z, pressure = _check_inputs(Z, pressure, min_count)
    rows = []
    for lo, hi, m in _bins(pressure, edges):
        n = int(m.sum())
        slope = r = evr = float("nan")
        if n >= max(min_count, 3):
            slope, r, evr = _pc1(Z[m], pressure[m])
        rows.append(dict(lo=lo, hi=hi, n=n, pc1_slope=slope, pc1_abs_r=r, pc1_evr=evr))
    return pd.DataFrame(rows)


def _check_inputs(Z, pressure, min_count):
    Z = check_matrix(Z, "Z")
    pressure = check_finite_array(pressure, "pressure", ndim=1)
    check_same_length(Z=Z, pressure=pressure)
    check_int(min_count, "min_count", min_value=0)
    return Z, pressure


def standardize_features(Z: Any) -> np.ndarray:
    """Z-score every feature over all rows (constant features are only centred).

    Examples
    --------
    >>> standardize_features([[1.0, 5.0], [3.0, 5.0]]).tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    Z = check_matrix(Z, "Z")
    scale = Z.std(axis=0)
    return (Z - Z.mean(axis=0)) / np.where(scale > 0, scale, 1.0)


def geometry_report(Z: Any, pressure: Any, edges: Sequence[float] = DEFAULT_EDGES,
                    min_count: int = 500, max_pairs: int = MAX_PAIRS, seed: int = 0,
                    standardize: bool = False) -> pd.DataFrame:
    """Per-bin geometry: ``n, d_eff`` (participation ratio), ``spread`` and the PC1 columns.

    Bins are half-open ``[lo, hi)`` over ``edges`` (default the paper's
    ``(875, 920, 960, 980, 990, 1000, 1020)``); bins with fewer than ``min_count`` frames
    (paper: 500) report ``nan`` rather than raising. ``standardize=True`` z-scores every
    feature over all frames first (:func:`standardize_features`), so that ``d_eff`` and
    ``spread`` do not measure the units of the features (one high-variance feature, such as
    the overall brightness of pooled conv features, otherwise makes ``d_eff`` ≈ 1 in every
    bin); the default ``False`` is the official repository's raw-feature definition.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Z, p = rng.standard_normal((600, 4)), rng.uniform(960, 1000, 600)
    >>> geometry_report(Z, p, edges=(960, 980, 1000), min_count=10)[["n"]].sum().item()
    600
    """
    Z, pressure = _check_inputs(Z, pressure, min_count)
    if standardize:
        Z = standardize_features(Z)
    pcs = pca_per_bin(Z, pressure, edges, min_count)
    rows = []
    for lo, hi, m in _bins(pressure, edges):
        n = int(m.sum())
        ok = n >= max(min_count, 2)
        rows.append(dict(
            d_eff=participation_ratio(Z[m]) if ok else float("nan"),
            spread=feature_spread(Z[m], max_pairs, seed) if ok else float("nan")))
    out = pd.concat([pcs[["lo", "hi", "n"]], pd.DataFrame(rows),
                     pcs[["pc1_slope", "pc1_abs_r", "pc1_evr"]]], axis=1)
    out.insert(0, "bin", [f"[{lo:g}, {hi:g})" for lo, hi in zip(out.lo, out.hi)])
    return out
