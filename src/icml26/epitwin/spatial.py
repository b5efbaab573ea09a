"""Spatial quantities of a contact montage: the contact graph and its Laplacian eigenvectors
(HSPE's topology term), functional similarity (GFBA's data-driven bias) and inverse-distance
weights (IDW baseline, discriminator conditioning).

The graph and eigenvector choice are Resolutions (not from the EpiTwin paper), following the
Laplacian positional encodings of Dwivedi et al. (2020).

Examples
--------
>>> from icml26.epitwin.data import make_synthetic_seeg
>>> X, montage, _ = make_synthetic_seeg(duration_s=4, n_shafts=3)
>>> laplacian_pe(montage, k=4).shape == (montage.n_contacts, 4)
True
"""

from __future__ import annotations

import numpy as np

from icml26.core.validation import check_finite_array, check_int, check_scalar_in

__all__ = ["distances", "contact_graph", "laplacian_pe", "functional_similarity", "idw_weights"]


def distances(pos: np.ndarray) -> np.ndarray:
    """Euclidean distance matrix (N, N) of contact coordinates (mm)."""
    pos = np.asarray(pos, dtype=np.float64)
    return np.sqrt(np.maximum(((pos[:, None] - pos[None]) ** 2).sum(-1), 0.0))


def contact_graph(montage, knn: int = 6, tau_mm: float = 10.0) -> np.ndarray:
    """Weighted adjacency (N, N): consecutive contacts on a shaft (weight 1) united with the
    symmetric k-nearest-neighbour graph in space (weight ``exp(-d^2 / (2 tau^2))``); where
    both exist the larger weight is kept."""
    knn = check_int(knn, "knn", min_value=0)
    tau_mm = check_scalar_in(tau_mm, "tau_mm", low=0.0, low_inclusive=False)
    n = montage.n_contacts
    d = distances(montage.pos)
    W = np.zeros((n, n))
    if knn > 0 and n > 1:
        order = np.argsort(d + np.diag(np.full(n, np.inf)), axis=1, kind="stable")[:, :min(knn, n - 1)]
        rows = np.repeat(np.arange(n), order.shape[1])
        W[rows, order.ravel()] = np.exp(-d[rows, order.ravel()] ** 2 / (2 * tau_mm ** 2))
        W = np.maximum(W, W.T)
    for s in np.unique(montage.shaft):
        on = np.flatnonzero(montage.shaft == s)
        on = on[np.argsort(montage.index[on], kind="stable")]
        W[on[:-1], on[1:]] = 1.0
        W[on[1:], on[:-1]] = 1.0
    np.fill_diagonal(W, 0.0)
    return W


def laplacian_pe(montage, k: int = 8, knn: int = 6, tau_mm: float = 10.0,
                 tol: float = 1e-8) -> np.ndarray:
    """Laplacian eigenvector positional encoding (N, k).

    The eigenvectors of the symmetric normalised Laplacian ``L = I - D^-1/2 W D^-1/2`` of
    :func:`contact_graph` with the ``k`` smallest non-zero eigenvalues (eigenvalues ``<= tol``
    belong to connected components and are skipped; isolated contacts get ``D^-1/2 = 0``),
    zero-padded when fewer exist. Sign convention: each eigenvector's entry of largest magnitude
    is positive (training flips signs at random).

    Examples
    --------
    >>> from icml26.epitwin.data import make_synthetic_seeg
    >>> _, montage, _ = make_synthetic_seeg(duration_s=4, n_shafts=2)
    >>> phi = laplacian_pe(montage, k=3)
    >>> bool(np.allclose(phi.T @ phi, np.eye(3), atol=1e-8))
    True
    """
    k = check_int(k, "k", min_value=1)
    W = contact_graph(montage, knn=knn, tau_mm=tau_mm)
    deg = W.sum(1)
    inv = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    L = np.eye(len(W)) - inv[:, None] * W * inv[None]
    vals, vecs = np.linalg.eigh(L)
    vecs = vecs[:, vals > tol][:, :k]
    big = np.argmax(np.abs(vecs), axis=0)
    vecs = vecs * np.sign(vecs[big, np.arange(vecs.shape[1])])[None]
    out = np.zeros((len(W), k))
    out[:, :vecs.shape[1]] = vecs
    return out


def functional_similarity(X_train, eps: float = 1e-8) -> np.ndarray:
    """``F_ij = |corr(x_i, x_j)|`` (Pearson) over all training samples, shape (N, N).

    ``X_train`` is (N, T) or windows (W, N, T) (concatenated in time). A flat contact (std
    below ``eps``) has ``F = 0`` with every other contact and ``F_ii = 1``.
    """
    X = check_finite_array(X_train, "X_train", dtype=np.float64)
    if X.ndim == 3:
        X = X.transpose(1, 0, 2).reshape(X.shape[1], -1)
    if X.ndim != 2:
        raise ValueError(f"X_train must be (N, T) or (W, N, T), got shape {X.shape}")
    Xc = X - X.mean(1, keepdims=True)
    std = np.sqrt((Xc ** 2).mean(1))
    flat = std < eps
    Z = Xc / np.where(flat, 1.0, std)[:, None]
    Z[flat] = 0.0
    F = np.abs(Z @ Z.T / X.shape[1])
    np.fill_diagonal(F, 1.0)
    return np.clip(F, 0.0, 1.0)


def idw_weights(pos: np.ndarray, observed: np.ndarray, power: float = 2.0,
                n_nearest: int | None = None, eps: float = 1e-6) -> np.ndarray:
    """Inverse-distance weights (N, N): row ``i`` averages observed contacts with weight
    ``1 / d_ij^power`` (only the ``n_nearest`` closest observed contacts when given); rows sum
    to 1 and columns of unobserved contacts are zero."""
    observed = np.asarray(observed, bool)
    if not observed.any():
        raise ValueError("observed is empty: inverse-distance weighting needs an observed contact")
    d = distances(pos)
    w = np.where(observed[None], 1.0 / np.maximum(d, eps) ** power, 0.0)
    if n_nearest is not None and n_nearest < observed.sum():
        dd = np.where(observed[None], d, np.inf)
        kth = np.sort(dd, axis=1)[:, n_nearest - 1:n_nearest]
        w = np.where(dd <= kth, w, 0.0)
    return w / w.sum(1, keepdims=True)
