"""Spectral tools: normalised adjacency, Laplacian spectrum, band moments and the spectral-energy
signature of a polynomial filter, plus the distances the server clusters on.

The signature (Resolution, not from the paper; the paper states only that a "spectral energy
measure" characterises each client's structure) is the share of the filtered output energy that
falls in each of ``B`` equal frequency bands of the normalised Laplacian ``L = I - Â``:

    e(γ)_b = γᵀ M_b γ / Σ_b' γᵀ M_b' γ,   M_b[k, l] = Σ_{j ∈ b} (1 - λ_j)^{k+l} c_j,

with ``c_j = ||u_jᵀ H0||²`` the energy of the client's (centred) encoder output ``H0`` on
eigenvector ``u_j``. ``M_b`` depends on ``k + l`` only (a Hankel matrix), which both the exact
(eigh) path and the Chebyshev path exploit.

References
----------
Yu, Wan, Chen, Han, Gong. "Heterogeneity-Aware Knowledge Sharing for Graph Federated Learning"
(FedSSA), ICML 2026, arXiv:2601.21589.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from .data import canonical_edges

__all__ = ["normalized_adjacency", "laplacian_spectrum", "band_moments",
           "chebyshev_band_moments", "spectral_energy", "band_edges", "high_band_mass",
           "js_distance_matrix", "grassmann_distance_matrix", "propagate", "sym_spmm"]

ENERGY_FLOOR = 1e-12


def normalized_adjacency(edge_index: torch.Tensor, n: int, dtype=torch.float32) -> torch.Tensor:
    """``Â = D̃^{-1/2} (A + I) D̃^{-1/2}`` as a sparse CSR tensor.

    The edge list is symmetrised and cleaned of self-loops and duplicates before I is added.

    Examples
    --------
    >>> import torch
    >>> A = normalized_adjacency(torch.tensor([[0], [1]]), 2).to_dense()
    >>> torch.allclose(A, torch.full((2, 2), 0.5))
    True
    """
    edges = canonical_edges(edge_index, n)
    loops = torch.arange(n, device=edges.device).repeat(2, 1)
    idx = torch.cat([edges, loops], dim=1)
    degree = torch.bincount(idx[0], minlength=n).to(dtype)
    scale = degree.rsqrt()
    values = scale[idx[0]] * scale[idx[1]]
    order = torch.argsort(idx[0] * n + idx[1])
    with warnings.catch_warnings():  # torch's "CSR is beta" / invariant-check notices
        warnings.simplefilter("ignore", UserWarning)
        coo = torch.sparse_coo_tensor(idx[:, order], values[order], (n, n),
                                      check_invariants=False).coalesce()
        return coo.to_sparse_csr()


class _SymmetricSpMM(torch.autograd.Function):
    """``Â X`` for a symmetric sparse Â; the backward is ``Â G`` (no sparse transpose)."""

    @staticmethod
    def forward(ctx, adj, dense):
        ctx.adj = adj
        return adj @ dense

    @staticmethod
    def backward(ctx, grad):
        return None, ctx.adj @ grad


def sym_spmm(adj: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
    """``adj @ dense`` for a symmetric sparse ``adj`` (such as Â), differentiable in ``dense``."""
    if dense.requires_grad:
        return _SymmetricSpMM.apply(adj, dense)
    return adj @ dense


def propagate(adj: torch.Tensor, signal: torch.Tensor, steps: int) -> list[torch.Tensor]:
    """``[Â⁰ X, Â¹ X, ..., Â^steps X]`` by repeated sparse products (O(steps |E| d)); Â symmetric."""
    out = [signal]
    for _ in range(steps):
        out.append(sym_spmm(adj, out[-1]))
    return out


def laplacian_spectrum(edge_index: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenpairs of ``L = I - Â`` (float64, eigenvalues clipped to [0, 2]); O(n³)."""
    adj = normalized_adjacency(edge_index, n, dtype=torch.float64).to_dense()
    lap = torch.eye(n, dtype=torch.float64, device=adj.device) - adj
    evals, evecs = torch.linalg.eigh(0.5 * (lap + lap.T))
    return evals.clamp(0.0, 2.0), evecs


def band_edges(n_bands: int) -> np.ndarray:
    """The ``n_bands + 1`` edges of equal frequency bands on [0, 2]."""
    if n_bands < 1:
        raise ValueError(f"n_bands must be >= 1, got {n_bands}")
    return np.linspace(0.0, 2.0, n_bands + 1)


def _hankel(moments: torch.Tensor, K: int) -> torch.Tensor:
    """(B, 2K+1) power moments -> (B, K+1, K+1) with M[b, k, l] = m[b, k + l]."""
    index = torch.arange(K + 1, device=moments.device)
    return moments[:, index[:, None] + index[None, :]]


def _centred(signal: torch.Tensor) -> torch.Tensor:
    signal = signal.detach().to(torch.float64)
    if signal.ndim == 1:
        signal = signal[:, None]
    return signal - signal.mean(dim=0, keepdim=True)


def band_moments(evals: torch.Tensor, evecs: torch.Tensor, signal: torch.Tensor, K: int,
                 n_bands: int = 8) -> torch.Tensor:
    """Exact band moment matrices ``M_b[k, l] = Σ_{j∈b} (1-λ_j)^{k+l} ||u_jᵀ H0||²``.

    Parameters
    ----------
    evals : Tensor of shape (n,)
        Laplacian eigenvalues (clipped to [0, 2] here).
    evecs : Tensor of shape (n, n)
        Eigenvectors as columns.
    signal : Tensor of shape (n, d) or (n,)
        The signal H0; it is detached and column-centred here.
    K : int
        Filter order.
    n_bands : int

    Returns
    -------
    Tensor of shape (n_bands, K+1, K+1), float64
    """
    if K < 0:
        raise ValueError(f"K must be >= 0, got {K}")
    lam = evals.to(torch.float64).clamp(0.0, 2.0)
    energy = ((evecs.to(torch.float64).T @ _centred(signal)) ** 2).sum(dim=1)  # c_j
    edges = torch.from_numpy(band_edges(n_bands)).to(lam.device)
    band = torch.bucketize(lam, edges[1:-1], right=True)  # band index 0..B-1; λ = 2 in the last
    powers = (1.0 - lam)[:, None] ** torch.arange(2 * K + 1, dtype=torch.float64,
                                                   device=lam.device)[None, :]
    moments = torch.zeros(n_bands, 2 * K + 1, dtype=torch.float64, device=lam.device)
    moments.index_add_(0, band, powers * energy[:, None])
    return _hankel(moments, K)


def _jackson_band_coefficients(low: float, high: float, degree: int) -> np.ndarray:
    """Jackson-damped Chebyshev coefficients of the indicator of [low, high] ⊂ [0, 2] in λ.

    The polynomial is in ``t = λ - 1 ∈ [-1, 1]``.
    """
    a, b = np.arccos(np.clip(low - 1.0, -1, 1)), np.arccos(np.clip(high - 1.0, -1, 1))
    j = np.arange(1, degree + 1)
    coef = np.empty(degree + 1)
    coef[0] = (a - b) / np.pi
    coef[1:] = 2.0 * (np.sin(j * a) - np.sin(j * b)) / (j * np.pi)
    alpha = np.pi / (degree + 2)
    k = np.arange(degree + 1)
    damping = ((1 - k / (degree + 2)) * np.sin(alpha) * np.cos(k * alpha)
               + np.cos(alpha) * np.sin(k * alpha) / (degree + 2)) / np.sin(alpha)
    return coef * damping


def chebyshev_band_moments(adj: torch.Tensor, signal: torch.Tensor, K: int, n_bands: int = 8,
                           degree: int = 50) -> torch.Tensor:
    """Band moments without eigendecomposition: ``M_b[k,l] = tr((Â^k H0)ᵀ p_b(L) Â^l H0)``.

    ``p_b`` is a degree-``degree`` Jackson-damped Chebyshev approximation of band ``b``'s
    indicator. Because Â and p_b(L) commute, ``M_b[k, l]`` depends on ``k + l`` only; the cost is
    ``degree + 2K`` sparse products with H0, i.e. O((degree + K) |E| d): linear in |E|.

    Parameters
    ----------
    adj : sparse Tensor (n, n)
        The normalised adjacency Â (see :func:`normalized_adjacency`).
    signal : Tensor of shape (n, d)
    K, n_bands, degree : int

    Returns
    -------
    Tensor of shape (n_bands, K+1, K+1), float64
    """
    h0 = _centred(signal)
    adj = adj.to(torch.float64)
    # Chebyshev basis in t = λ - 1 = -Â: T_0 h, T_1 h = -Â h, T_{j+1} = 2 t T_j - T_{j-1}
    cheb = [h0, -(adj @ h0)]
    for _ in range(2, degree + 1):
        cheb.append(-2.0 * (adj @ cheb[-1]) - cheb[-2])
    powers = propagate(adj, h0, 2 * K)
    inner = torch.stack([torch.stack([(c * p).sum() for p in powers]) for c in cheb])
    edges = band_edges(n_bands)
    coef = torch.from_numpy(np.stack([_jackson_band_coefficients(edges[b], edges[b + 1], degree)
                                      for b in range(n_bands)])).to(inner.device)
    return _hankel(coef @ inner, K)


def spectral_energy(gamma: torch.Tensor, moments: torch.Tensor) -> torch.Tensor:
    """Spectral-energy signature ``e(γ)_b = γᵀ M_b γ / Σ_b' γᵀ M_b' γ`` (differentiable in γ).

    Band energies are floored at 0 (the Chebyshev path can give tiny negative values). If all
    band energies are ~0 (a constant signal), the uniform signature is returned with a warning.

    Parameters
    ----------
    gamma : Tensor of shape (K+1,)
    moments : Tensor of shape (B, K+1, K+1)

    Returns
    -------
    Tensor of shape (B,), on the probability simplex.

    Examples
    --------
    >>> import torch
    >>> M = torch.stack([torch.eye(2), 3 * torch.eye(2)]).double()
    >>> spectral_energy(torch.ones(2, dtype=torch.float64), M).tolist()
    [0.25, 0.75]
    """
    moments = moments.to(gamma.dtype)
    energy = torch.einsum("k,bkl,l->b", gamma, moments, gamma).clamp_min(0.0)
    total = energy.sum()
    if float(total.detach()) <= ENERGY_FLOOR * max(1.0, float(moments.abs().max())):
        warnings.warn("all band energies are ~0 (constant signal); using a uniform signature",
                      UserWarning, stacklevel=2)
        return torch.full_like(energy, 1.0 / energy.numel())
    return energy / total


def high_band_mass(signature, n_bands: int | None = None) -> float:
    """Share of a signature's mass in bands above λ = 1."""
    signature = np.asarray(signature, dtype=float)
    n_bands = n_bands or signature.shape[-1]
    centres = 0.5 * (band_edges(n_bands)[1:] + band_edges(n_bands)[:-1])
    return float(signature[..., centres > 1.0].sum(axis=-1))


def js_distance_matrix(signatures: np.ndarray) -> np.ndarray:
    """Pairwise Jensen-Shannon distances (sqrt of the divergence, natural log) between rows.

    Each row is a non-negative signature (negative entries, e.g. round-off, are clipped to 0)
    normalised to sum to 1; a row that is not finite or has no positive mass is not a
    distribution and raises ``ValueError`` naming it (it used to come out at distance 0 from
    every other row, #33).
    """
    p = np.asarray(signatures)
    if not np.issubdtype(p.dtype, np.number) or np.iscomplexobj(p):
        raise TypeError(f"signatures must be a real numeric array, got dtype {p.dtype}")
    if p.ndim != 2 or p.shape[0] == 0 or p.shape[1] == 0:
        raise ValueError(f"signatures must be a non-empty 2-D array (clients, bins), got shape {p.shape}")
    p = np.clip(p.astype(float), 0.0, None)
    bad = ~np.isfinite(p).all(axis=1)
    if bad.any():
        raise ValueError(f"signatures row {int(np.flatnonzero(bad)[0])} contains NaN or infinity")
    mass = p.sum(axis=1, keepdims=True)
    if (mass <= 0).any():
        raise ValueError(f"signatures row {int(np.flatnonzero(mass[:, 0] <= 0)[0])} has no positive mass "
                         "(all zero or negative); a signature must be a non-negative, non-zero vector")
    p = p / mass
    m = 0.5 * (p[:, None, :] + p[None, :, :])

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * np.log(a / np.where(b > 0, b, 1.0)), 0.0)
        return terms.sum(axis=-1)

    divergence = 0.5 * (kl(p[:, None, :], m) + kl(p[None, :, :], m))
    distance = np.sqrt(np.clip(divergence, 0.0, None))
    distance = 0.5 * (distance + distance.T)
    np.fill_diagonal(distance, 0.0)
    return distance


def grassmann_distance_matrix(bases: list[np.ndarray]) -> np.ndarray:
    """Geodesic distance ``||θ||₂`` of principal angles between subspaces (orthonormal columns)."""
    m = len(bases)
    distance = np.zeros((m, m))
    for i in range(m):
        for j in range(i + 1, m):
            sv = np.linalg.svd(bases[i].T @ bases[j], compute_uv=False)
            theta = np.arccos(np.clip(sv, -1.0, 1.0))
            distance[i, j] = distance[j, i] = float(np.linalg.norm(theta))
    return distance

