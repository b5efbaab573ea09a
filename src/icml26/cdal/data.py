"""Data for fair multi-view clustering: a synthetic generator with ground truth, and Reverse-Digits.

Nothing is downloaded: the generator is pure numpy, Reverse-Digits uses scikit-learn's bundled
``load_digits`` (1,797 8×8 images).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import ortho_group
from sklearn.datasets import load_digits

from icml26.core.validation import check_int, check_scalar_in

__all__ = ["FairMultiviewData", "make_fair_multiview", "PRESETS", "make_preset", "load_reverse_digits"]


@dataclass
class FairMultiviewData:
    """Views, cluster ground truth and the sensitive attribute.

    Attributes
    ----------
    views : list of (n, d_v) arrays
    labels : (n,) int array
        True cluster of each sample (utility ground truth).
    groups : (n,) int array
        Sensitive group of each sample.
    name : str

    References
    ----------
    "Causal Disentangled Anchor Learning (CDAL)" for fair multi-view clustering, ICML 2026 (full
    title and authors not retrieved; see the package README). The sensitive-group fairness setting
    follows Chierichetti, Kumar, Lattanzi & Vassilvitskii, "Fair Clustering Through Fairlets",
    NeurIPS 2017.

    Examples
    --------
    >>> from icml26.cdal import FairMultiviewData, make_fair_multiview
    >>> data = make_fair_multiview(n=100, seed=0)
    >>> isinstance(data, FairMultiviewData), data.n_samples, len(data.views)
    (True, 100, 3)
    """

    views: list
    labels: np.ndarray
    groups: np.ndarray
    name: str = ""

    @property
    def n_samples(self) -> int:
        return int(self.labels.shape[0])


def make_fair_multiview(n=3000, n_clusters=4, n_groups=2, view_dims=(30, 40, 50), latent_dim=6,
                        sep=3.0, group_shift=4.0, noise=(0.5, 1.0, 1.0), rotate_view=0,
                        hetero_scale=1.0, rho=0.0, seed=0) -> FairMultiviewData:
    """Multi-view data whose views are caused by a cluster factor and a group factor.

    Generative process: ``y_i ~ U{0..K−1}``; ``g_i ~ Bernoulli(p_i)``, ``p_i = 0.5 ± ρ/2`` (+ for
    the first half of the clusters), so ρ = 0 makes group ⟂ cluster (only ``n_groups=2`` supports
    ρ ≠ 0; more groups are drawn uniformly); cluster means ``M (K × r) ~ N(0, sep²/2)``,
    ``u_i = M[y_i] + N(0, I_r)``; group offsets ``N (G × r) ~ N(0, γ²/2)`` with γ =
    ``group_shift``; a random orthogonal ``R (r × r)``. For each view v, random orthonormal
    ``P_v, Q_v (d_v × r)``; ``ũ_i = R u_i`` if ``v = rotate_view`` and ``g_i = 1`` else ``u_i``;
    ``ũ_i *= hetero_scale`` if ``g_i = 1``; ``x_{v,i} = P_v ũ_i + Q_v N[g_i] + noise_v ε``.

    Parameters
    ----------
    n, n_clusters, n_groups : int
    view_dims : tuple of int
        Features per view.
    latent_dim : int
        r.
    sep, group_shift : float
        Cluster separation and group offset scale.
    noise : tuple of float
        Noise standard deviation per view.
    rotate_view : int or None
        The view in which group 1 sees a rotated cluster geometry (None: no rotation).
    hetero_scale : float
        Scale of group 1's cluster geometry.
    rho : float in [0, 1)
        Dependence between group and cluster.
    seed : int

    Returns
    -------
    FairMultiviewData

    Examples
    --------
    >>> data = make_fair_multiview(n=200, seed=1)
    >>> [X.shape for X in data.views], sorted(set(data.groups.tolist()))
    ([(200, 30), (200, 40), (200, 50)], [0, 1])
    """
    n = check_int(n, "n", min_value=2)
    K = check_int(n_clusters, "n_clusters", min_value=1)
    G = check_int(n_groups, "n_groups", min_value=2)
    r = check_int(latent_dim, "latent_dim", min_value=1)
    rho = check_scalar_in(rho, "rho", low=0.0, high=1.0, high_inclusive=False)
    if rho > 0 and G != 2:
        raise ValueError(f"rho > 0 needs n_groups=2, got n_groups={G}")
    if len(noise) != len(view_dims):
        raise ValueError(f"noise has {len(noise)} values but view_dims has {len(view_dims)} views")
    for v, dim in enumerate(view_dims):
        if dim < r:
            raise ValueError(f"view_dims[{v}]={dim} is smaller than latent_dim={r}")
    if rotate_view is not None and not 0 <= rotate_view < len(view_dims):
        raise ValueError(f"rotate_view must be None or in 0..{len(view_dims) - 1}, got {rotate_view}")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, K, size=n)
    if G == 2:
        p = 0.5 + (rho / 2.0) * np.where(labels < K / 2, 1.0, -1.0)
        groups = (rng.random(n) < p).astype(int)
    else:
        groups = rng.integers(0, G, size=n)
    cluster_means = rng.normal(0.0, sep / np.sqrt(2.0), size=(K, r))
    u = cluster_means[labels] + rng.standard_normal((n, r))
    group_offsets = rng.normal(0.0, group_shift / np.sqrt(2.0), size=(G, r))
    rotation = ortho_group.rvs(r, random_state=rng) if r > 1 else np.ones((1, 1))
    in_group_one = groups == 1
    views = []
    for v, (dim, sigma) in enumerate(zip(view_dims, noise)):
        P = np.linalg.qr(rng.standard_normal((dim, r)))[0]
        Q = np.linalg.qr(rng.standard_normal((dim, r)))[0]
        tilde = u.copy()
        if v == rotate_view:
            tilde[in_group_one] = tilde[in_group_one] @ rotation.T
        tilde[in_group_one] *= hetero_scale
        views.append(tilde @ P.T + group_offsets[groups] @ Q.T + sigma * rng.standard_normal((n, dim)))
    return FairMultiviewData(views, labels, groups, name="synthetic")


PRESETS = {
    "rotated": dict(n=3000, n_clusters=4, n_groups=2, view_dims=(30, 40, 50), latent_dim=6, sep=3.0,
                    group_shift=4.0, noise=(0.5, 1.0, 1.0), rotate_view=0, hetero_scale=1.0),
    "meanshift": dict(n=4000, n_clusters=4, n_groups=2, view_dims=(30, 40, 50), latent_dim=8,
                      sep=2.5, group_shift=4.0, noise=(0.5, 0.5, 0.5), rotate_view=None,
                      hetero_scale=1.5),
}


def make_preset(name: str, seed: int = 0, **changes) -> FairMultiviewData:
    """One of the named generator settings ("rotated", "meanshift"), with optional changes.

    Examples
    --------
    >>> make_preset("meanshift", seed=0, n=100).n_samples
    100
    """
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
    data = make_fair_multiview(**{**PRESETS[name], **changes}, seed=seed)
    data.name = name
    return data


def load_reverse_digits(seed: int = 0) -> FairMultiviewData:
    """Reverse-Digits: scikit-learn's digits, half of them colour-inverted (the sensitive group).

    After Color-Reverse MNIST (Li et al., "Deep Fair Clustering", CVPR 2020). ``g ~ Bernoulli(0.5)``;
    images of group 1 become ``16 − x``. Views: raw pixels (64); 4×4 average-pooled image (16)
    plus row and column sums (16); gradient magnitudes of the horizontal and vertical differences
    on the top-left 7×7 grid (49; invariant to the inversion). K = 10, n = 1797.

    Examples
    --------
    >>> data = load_reverse_digits(seed=0)
    >>> [X.shape[1] for X in data.views], data.n_samples
    ([64, 32, 49], 1797)
    """
    digits = load_digits()
    rng = np.random.default_rng(seed)
    groups = (rng.random(digits.target.size) < 0.5).astype(int)
    images = digits.images.astype(float).copy()
    images[groups == 1] = 16.0 - images[groups == 1]
    n = images.shape[0]
    raw = images.reshape(n, 64)
    pooled = images.reshape(n, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(n, 16)
    sums = np.hstack([images.sum(axis=2), images.sum(axis=1)])
    dx = images[:, :7, 1:] - images[:, :7, :7]
    dy = images[:, 1:, :7] - images[:, :7, :7]
    gradient = np.sqrt(dx ** 2 + dy ** 2).reshape(n, 49)
    return FairMultiviewData([raw, np.hstack([pooled, sums]), gradient], digits.target.copy(), groups,
                             name="reverse_digits")
