"""Baselines for fair multi-view clustering, all with CDAL's ``fit(views, sensitive=s)`` surface.

- :class:`ConcatKMeans` — k-means (scikit-learn) on the concatenated standardised views (unfair).
- :class:`AnchorMVC` — CDAL with ``lam=0`` and no sensitive anchors: the orthogonal-anchor
  multi-view subspace clustering of FPMVS-CAG / SMVSC / EOMSC-CA type (unfair, same family).
- :class:`LMVSC` — Kang et al., "Large-scale Multi-view Subspace Clustering in Linear Time",
  AAAI 2020 (unfair, linear time).
- :class:`ResidualizedKMeans` — subtract each group's mean per view, then k-means (fair to first
  order; our Resolution of "residualise-then-cluster").
- :class:`FairSpectralAnchor` — fair spectral clustering (Kleindessner, Samadi, Awasthi,
  Morgenstern, "Guarantees for Spectral Clustering with Fairness Constraints", ICML 2019) on
  AnchorMVC's anchor graph, O(nm²).

scikit-learn's ``SpectralClustering`` on the concatenated views is the O(n²) peer of the scaling
check (used directly, see ``experiment.py``).

``sensitive`` is accepted by every class; the unfair ones only validate it (so the same call
runs every method).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.utils.validation import check_random_state

from .cdal import CDAL, anchor_spectral_embedding, encode_sensitive, prepare_views
from .metrics import group_means

__all__ = ["ConcatKMeans", "AnchorMVC", "LMVSC", "ResidualizedKMeans", "FairSpectralAnchor"]

KMEANS_RESTARTS = 10


def _check_clusters(n_clusters, n: int) -> int:
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)) or n_clusters < 1:
        raise ValueError(f"n_clusters must be a positive integer, got {n_clusters!r}")
    if n_clusters > n:
        raise ValueError(f"n_clusters={n_clusters} exceeds the number of samples ({n})")
    return int(n_clusters)


def _seed(rng) -> int:
    return int(rng.randint(np.iinfo(np.int32).max))


class _ViewsKMeans(ClusterMixin, BaseEstimator):
    """k-means on the concatenation of (optionally group-residualised) standardised views."""

    _residualise = False

    def __init__(self, n_clusters=8, random_state=None):
        self.n_clusters = n_clusters
        self.random_state = random_state

    def fit(self, views, y=None, sensitive=None):
        prepared = prepare_views(views)
        n = prepared.data[0].shape[0]
        K = _check_clusters(self.n_clusters, n)
        codes = None
        if self._residualise or sensitive is not None:
            codes, _ = encode_sensitive(sensitive, n)
        X = np.hstack(prepared.data)
        if self._residualise:
            X = X - group_means(X.T, codes, np.bincount(codes)).T[codes]
        rng = check_random_state(self.random_state)
        self.labels_ = KMeans(K, n_init=KMEANS_RESTARTS, random_state=_seed(rng)).fit_predict(X)
        return self


class ConcatKMeans(_ViewsKMeans):
    """k-means on the concatenated standardised views (unfair baseline; scikit-learn KMeans).

    Examples
    --------
    >>> from icml26.cdal import make_fair_multiview
    >>> data = make_fair_multiview(n=200, seed=0)
    >>> ConcatKMeans(4, random_state=0).fit(data.views).labels_.shape
    (200,)
    """


class ResidualizedKMeans(_ViewsKMeans):
    """Subtract each sensitive group's mean from every standardised view, then k-means.

    Removes the group's first-order (mean) effect only; a group-specific rotation of the cluster
    geometry survives. Resolution (not from the paper) of "residualise-then-cluster".
    """

    _residualise = True


class AnchorMVC(CDAL):
    """Orthogonal-anchor multi-view subspace clustering: CDAL without HSIC and sensitive anchors.

    ``J = Σ_v α_v² ‖X̄_v − W_v A_c Z_c‖²`` (FPMVS-CAG / SMVSC / EOMSC-CA-type objective, our
    Python version). Unfair baseline of the same family as CDAL. ``sensitive`` is required only
    because the initialisation shares CDAL's (group-residualised k-means); pass any labels with
    two groups when none exists.
    """

    def __init__(self, n_clusters=8, n_anchors=None, latent_dim=None, max_iter=30, tol=1e-4,
                 final_clustering=True, random_state=None):
        super().__init__(n_clusters=n_clusters, n_anchors=n_anchors, latent_dim=latent_dim, lam=0.0,
                         sensitive_anchors=False, max_iter=max_iter, tol=tol,
                         final_clustering=final_clustering, random_state=random_state)


class FairSpectralAnchor(ClusterMixin, BaseEstimator):
    """Fair spectral clustering (Kleindessner et al., ICML 2019) on an anchor graph, O(nm²).

    Fits :class:`AnchorMVC`, then embeds its anchor graph ``Z_cᵀ D⁻¹ Z_c`` (degrees are 1) with
    the constraint ``Fᵀ H = 0``, ``F = [1_g − (n_g/n) 1]_g``: the embedding is the top-K left
    singular vectors of the projection of ``(D^{-1/2} Z_c)ᵀ`` onto span(F)'s orthogonal
    complement, which is exact for this low-rank graph; its rows are clustered by k-means (no row
    normalisation, as in Kleindessner et al.'s unnormalised variant; with unit degrees the
    normalised one coincides). Which anchor graph to use is our Resolution.
    """

    def __init__(self, n_clusters=8, n_anchors=None, max_iter=30, random_state=None):
        self.n_clusters = n_clusters
        self.n_anchors = n_anchors
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, views, y=None, sensitive=None):
        rng = check_random_state(self.random_state)
        graph = AnchorMVC(self.n_clusters, n_anchors=self.n_anchors, max_iter=self.max_iter,
                          final_clustering=False, random_state=_seed(rng)).fit(views, sensitive=sensitive)
        codes, _ = encode_sensitive(sensitive, graph.anchor_graph_.shape[1])
        self.anchor_graph_ = graph.anchor_graph_
        self.embedding_, _ = anchor_spectral_embedding(graph.anchor_graph_, self.n_clusters, groups=codes,
                                                       normalize_rows=False)
        self.labels_ = KMeans(self.n_clusters, n_init=KMEANS_RESTARTS,
                              random_state=_seed(rng)).fit_predict(self.embedding_)
        return self


class LMVSC(ClusterMixin, BaseEstimator):
    """LMVSC (Kang, Zhou, Zhao, Shao, Han, Xu; AAAI 2020): linear-time multi-view subspace clustering.

    Per view: m k-means anchors ``A_v`` (m × d_v) and the closed-form anchor graph
    ``Z_v = argmin ‖X_v − Z_vᵀ A_v‖² + α ‖Z_v‖² = (A_v A_vᵀ + α I)⁻¹ A_v X_vᵀ`` (m × n); the
    spectral embedding is the top-K left singular vectors of ``[Z_1ᵀ, ..., Z_Vᵀ]`` (n × Vm),
    then k-means. Unfair baseline; our Python version of the authors' MATLAB.

    Parameters
    ----------
    n_clusters : int
    n_anchors : int or None
        m per view (default ``2 * n_clusters``, as CDAL).
    alpha : float
        Ridge weight of the anchor graph (the paper's grid 1e-3..1e3; 1 here).
    random_state : int or None
    """

    def __init__(self, n_clusters=8, n_anchors=None, alpha=1.0, random_state=None):
        self.n_clusters = n_clusters
        self.n_anchors = n_anchors
        self.alpha = alpha
        self.random_state = random_state

    def fit(self, views, y=None, sensitive=None):
        prepared = prepare_views(views)
        n = prepared.data[0].shape[0]
        K = _check_clusters(self.n_clusters, n)
        if sensitive is not None:
            encode_sensitive(sensitive, n)
        m = 2 * K if self.n_anchors is None else int(self.n_anchors)
        if not K <= m <= n:
            raise ValueError(f"n_anchors must be in [n_clusters, n] = [{K}, {n}], got {m}")
        if not self.alpha > 0:
            raise ValueError(f"alpha must be > 0, got {self.alpha!r}")
        rng = check_random_state(self.random_state)
        graphs = []
        for X in prepared.data:
            anchors = KMeans(m, n_init=1, random_state=_seed(rng)).fit(X).cluster_centers_
            gram = anchors @ anchors.T + self.alpha * np.eye(m)
            graphs.append(np.linalg.solve(gram, anchors @ X.T).T)     # (n, m)
        stacked = np.hstack(graphs)                                    # (n, V m)
        values, vectors = np.linalg.eigh(stacked.T @ stacked)
        order = np.argsort(values)[::-1][:K]
        self.embedding_ = stacked @ vectors[:, order] / np.sqrt(np.maximum(values[order], 1e-12))
        self.labels_ = KMeans(K, n_init=KMEANS_RESTARTS, random_state=_seed(rng)).fit_predict(self.embedding_)
        return self
