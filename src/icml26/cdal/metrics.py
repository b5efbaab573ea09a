"""Utility and fairness metrics for (fair) clustering.

Utility: clustering accuracy (Hungarian matching), NMI and ARI (scikit-learn's), purity and the
pairwise F-score. Fairness: Chierichetti balance, proportional balance, fairness entropy, and the
linear-kernel HSIC between an anchor graph and the sensitive attribute.

References
----------
Chierichetti, Kumar, Lattanzi, Vassilvitskii. "Fair Clustering Through Fairlets", NeurIPS 2017
(balance). Bera, Chakrabarty, Flores, Negahbani. "Fair Algorithms for Clustering", NeurIPS 2019
(proportional balance). Gretton, Bousquet, Smola, Schölkopf. "Measuring Statistical Dependence
with Hilbert-Schmidt Norms", ALT 2005 (HSIC).

Examples
--------
>>> balance([0, 0, 1, 1], [0, 1, 0, 1])
1.0
>>> balance([0, 0, 1, 1], [0, 0, 1, 1])
0.0
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix, pair_confusion_matrix

from icml26.core.validation import check_same_length

__all__ = ["clustering_accuracy", "purity", "pairwise_f_score", "nmi", "ari", "balance",
           "proportional_balance", "fairness_entropy", "hsic_linear", "utility_scores",
           "fairness_scores"]


def _labels(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; expected at least one label")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity; expected finite labels")
    return arr


def _pair(labels, other, name_a: str, name_b: str) -> tuple[np.ndarray, np.ndarray]:
    a, b = _labels(labels, name_a), _labels(other, name_b)
    check_same_length(**{name_a: a, name_b: b})
    return a, b


def clustering_accuracy(labels_true, labels_pred) -> float:
    """Best matched fraction over one-to-one cluster-to-class assignments (Hungarian).

    Examples
    --------
    >>> clustering_accuracy([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    y, c = _pair(labels_true, labels_pred, "labels_true", "labels_pred")
    table = contingency_matrix(y, c)
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / y.size)


def purity(labels_true, labels_pred) -> float:
    """Share of samples in their cluster's majority class.

    Examples
    --------
    >>> purity([0, 0, 1, 1], [0, 0, 0, 0])
    0.5
    """
    y, c = _pair(labels_true, labels_pred, "labels_true", "labels_pred")
    return float(contingency_matrix(y, c).max(axis=0).sum() / y.size)


def pairwise_f_score(labels_true, labels_pred) -> float:
    """F1 of the "same cluster" relation over all sample pairs.

    Examples
    --------
    >>> pairwise_f_score([0, 0, 1, 1], [0, 0, 1, 1])
    1.0
    """
    y, c = _pair(labels_true, labels_pred, "labels_true", "labels_pred")
    (_, fp), (fn, tp) = pair_confusion_matrix(y, c)
    return float(2 * tp / (2 * tp + fp + fn)) if tp > 0 else 0.0


def nmi(labels_true, labels_pred) -> float:
    """Normalised mutual information (arithmetic normalisation, scikit-learn's)."""
    y, c = _pair(labels_true, labels_pred, "labels_true", "labels_pred")
    return float(normalized_mutual_info_score(y, c, average_method="arithmetic"))


def ari(labels_true, labels_pred) -> float:
    """Adjusted Rand index (scikit-learn's)."""
    y, c = _pair(labels_true, labels_pred, "labels_true", "labels_pred")
    return float(adjusted_rand_score(y, c))


def _cluster_group_counts(labels, groups) -> np.ndarray:
    c, g = _pair(labels, groups, "labels", "groups")
    if np.unique(g).size < 2:
        raise ValueError("groups must hold at least 2 distinct values for a fairness metric")
    return contingency_matrix(c, g)  # (clusters, groups)


def balance(labels, groups) -> float:
    """Chierichetti balance: min over clusters of min_{a≠b} |C∩G_a| / |C∩G_b|, in [0, 1].

    A cluster missing a group has balance 0. With two groups this is the familiar
    ``min(|C∩G_0|/|C∩G_1|, |C∩G_1|/|C∩G_0|)``.

    Examples
    --------
    >>> balance([0, 0, 0, 1, 1, 1], [0, 0, 1, 0, 1, 1])
    0.5
    """
    counts = _cluster_group_counts(labels, groups).astype(float)
    low, high = counts.min(axis=1), counts.max(axis=1)
    return float(np.min(low / high))


def proportional_balance(labels, groups) -> float:
    """min over clusters k and groups g of min(r_kg / r_g, r_g / r_kg) (Bera et al. style).

    ``r_g`` is group g's share of all samples, ``r_kg`` its share of cluster k.

    Examples
    --------
    >>> proportional_balance([0, 0, 1, 1], [0, 1, 0, 1])
    1.0
    """
    counts = _cluster_group_counts(labels, groups).astype(float)
    overall = counts.sum(axis=0) / counts.sum()
    within = counts / counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        ratio = np.minimum(within / overall, np.where(within > 0, overall / within, 0.0))
    return float(ratio.min())


def fairness_entropy(labels, groups) -> float:
    """min over clusters of the entropy of the group distribution, divided by log G.

    Examples
    --------
    >>> fairness_entropy([0, 0, 1, 1], [0, 1, 0, 1])
    1.0
    """
    counts = _cluster_group_counts(labels, groups).astype(float)
    p = counts / counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
    return float(h.min() / np.log(counts.shape[1]))


def hsic_linear(anchor_graph, groups) -> float:
    """Linear-kernel HSIC between anchor memberships and the sensitive attribute, times n.

    With ``Z`` the (m, n) anchor graph (one column per sample), ``S`` the (G, n) group one-hot
    and group sizes ``n_g``,

        HSIC_lin(Z, s) = (1/n) Σ_g n_g ‖μ_g − μ‖²,  μ_g = Z S_gᵀ / n_g,  μ = Z 1 / n,

    which equals ``n · HSIC_b`` with linear kernels ``K_Z = ZᵀZ``, ``K_S = Sᵀ diag(1/n_g) S``
    (biased estimator ``tr(K_Z H K_S H) / n²``). It is 0 iff every group has the same mean
    anchor membership. Cost O(nm): no n×n matrix is formed.

    Parameters
    ----------
    anchor_graph : array of shape (m, n)
    groups : array of shape (n,)

    Returns
    -------
    float

    Examples
    --------
    >>> hsic_linear([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]], [0, 1, 0, 1])
    0.0
    >>> hsic_linear([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]], [0, 0, 1, 1])
    0.5
    """
    Z = np.asarray(anchor_graph, dtype=float)
    if Z.ndim != 2:
        raise ValueError(f"anchor_graph must be 2-dimensional (m, n), got shape {Z.shape}")
    g = _labels(groups, "groups")
    if g.size != Z.shape[1]:
        raise ValueError(f"groups has {g.size} values but anchor_graph has {Z.shape[1]} columns")
    if not np.all(np.isfinite(Z)):
        raise ValueError("anchor_graph contains NaN or infinity; expected finite values")
    _, codes = np.unique(g, return_inverse=True)
    return between_group_scatter(Z, codes) / Z.shape[1]


def between_group_scatter(Z: np.ndarray, codes: np.ndarray) -> float:
    """F(Z) = Σ_g n_g ‖μ_g − μ‖² for integer group codes 0..G−1 (no validation; O(nm))."""
    sizes = np.bincount(codes)
    means = group_means(Z, codes, sizes)
    centred = means - Z.mean(axis=1, keepdims=True)
    return float(np.sum(sizes * np.sum(centred ** 2, axis=0)))


def group_means(Z: np.ndarray, codes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """(m, G) matrix of per-group column means of Z (m, n)."""
    onehot = np.zeros((codes.size, sizes.size))
    onehot[np.arange(codes.size), codes] = 1.0
    return (Z @ onehot) / sizes


def utility_scores(labels_true, labels_pred) -> dict:
    """NMI, ACC, ARI, purity and pairwise F-score in one dict."""
    return {"nmi": nmi(labels_true, labels_pred), "acc": clustering_accuracy(labels_true, labels_pred),
            "ari": ari(labels_true, labels_pred), "purity": purity(labels_true, labels_pred),
            "f_score": pairwise_f_score(labels_true, labels_pred)}


def fairness_scores(labels, groups) -> dict:
    """Balance, proportional balance and fairness entropy in one dict."""
    return {"balance": balance(labels, groups),
            "proportional_balance": proportional_balance(labels, groups),
            "fairness_entropy": fairness_entropy(labels, groups)}
