"""Certified error bounds for linear value-function approximation with Laplacian features.

Giorgi et al., *Impact of Connectivity on Laplacian Representations in RL*, ICML 2026.

*Resolution (not from the paper):* the paper's theorem statements and constants could not be
read. The bounds below are rigorous statements for exactly the objects the paper names, each
with a one-line proof; they are the checkable content of its claims, and the paper's absolute
constants may differ.

Notes
-----
With ``e_k = ‖V − Π_k V‖_ρ``, ``Ṽ = V − (ρᵀV)1``, ``r̃ = r − (ρᵀr)1`` and the Dirichlet energy
``E(V) = VᵀLV``:

- B1 (spectral tail): ``e_k² ≤ E(V)/λ_{k+1}``.
- B2 (energy identity): ``E(V) = (⟨V, r⟩_ρ − (1−γ)‖V‖²_ρ)/γ``.
- B3 (connectivity / Poincaré): ``e_k ≤ e_1 = ‖Ṽ‖_ρ ≤ ‖r̃‖_ρ/(1 − γ + γλ₂)``.
- B4 (combined): ``e_k ≤ ‖r̃‖_ρ / sqrt(γ λ_{k+1} (1 − γ + γλ₂))``.
- B5 (Davis–Kahan, Yu–Wang–Samworth): ``‖sin Θ(Φ̂_k, Φ_k)‖_F ≤ 2 min(√k‖N̂ − N‖₂, ‖N̂ − N‖_F)/δ_k``,
  ``δ_k = λ_{k+1} − λ_k``.
- B6 (end to end): ``ê_k ≤ e_k + ‖sin Θ‖₂‖V‖_ρ ≤ B4 + B5·‖V‖_ρ``.
- B7 (TD fixed point, Tsitsiklis–Van Roy, on-policy): ``‖V − V_TD‖_ρ ≤ e_k / sqrt(1 − γ²)``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from icml26.core.validation import check_int, check_scalar_in

from .laplacian import laplacian_eigenpairs, symmetric_eigenpairs, symmetrized_laplacian
from .mdp import check_transition_matrix, value_function

__all__ = ["rho_norm", "projection_error", "connectivity_bounds", "estimation_bounds",
           "end_to_end_bounds", "bound_violations", "subspace_sin_theta"]

#: Relative tolerance of a certificate: ``value ≤ (1 + RTOL)·bound``.
RTOL = 1e-9


def rho_norm(x: np.ndarray, rho: np.ndarray) -> float:
    """``‖x‖_ρ = sqrt(xᵀ diag(ρ) x)``."""
    return float(np.sqrt(np.sum(rho * x * x)))


def projection_error(V: np.ndarray, U: np.ndarray, rho: np.ndarray) -> float:
    """``‖V − U Uᵀ D V‖_ρ`` for D-orthonormal columns U (the ρ-weighted least-squares error)."""
    return rho_norm(V - U @ (U.T @ (rho * V)), rho)


def _safe_div(num: float, den: float) -> float:
    return math.inf if den <= 0 else num / den


def connectivity_bounds(P: Any, r: Any, gamma: float, k: int, rho: Any = None,
                        spectrum: tuple | None = None) -> dict:
    """Measured error ``e_k`` and the bounds B1–B4 (and B7) for one MDP, reward and k.

    Parameters
    ----------
    P : (n, n) array or sparse matrix
        The policy's transition matrix (irreducible).
    r : (n,) array
        Rewards.
    gamma : float in (0, 1)
        Discount (B2 divides by γ, so γ = 0 is refused).
    k : int, 1 ≤ k < n
        Number of features (the constant included).
    rho : (n,) array, optional
        Stationary distribution.
    spectrum : (eigenvalues, U, rho), optional
        A precomputed full :func:`laplacian_eigenpairs` result (reused across k and r).

    Returns
    -------
    dict with ``e_k, e_1, energy (VᵀLV), B1, B2_energy, B3, B4, e_td, B7, lambda2, lambda_k1,
    r_tilde_norm, V_norm``. Bounds with a zero denominator are ``inf`` (a disconnected graph,
    λ = 0), never a division error.

    Examples
    --------
    >>> from icml26.spectral_rl import GridWorld
    >>> P = GridWorld.two_rooms(5, 7, door=1).transition("uniform")
    >>> r = np.zeros(P.shape[0]); r[0] = 1.0
    >>> b = connectivity_bounds(P, r, gamma=0.9, k=2)
    >>> b["e_k"] <= b["B4"]
    True
    """
    M = check_transition_matrix(P)
    n = M.shape[0]
    gamma = check_scalar_in(gamma, "gamma", low=0.0, high=1.0, low_inclusive=False,
                            high_inclusive=False)
    k = check_int(k, "k", min_value=1, max_value=n - 1) if n > 1 else check_int(k, "k", min_value=n + 1)
    if spectrum is None:
        spectrum = laplacian_eigenpairs(M, rho)
    evals, U, rho = spectrum
    if U.shape[1] < k + 1:
        raise ValueError(f"spectrum holds {U.shape[1]} eigenvectors; k + 1 = {k + 1} are needed")
    V = value_function(M, r, gamma)
    r = np.asarray(r, dtype=np.float64)
    L = symmetrized_laplacian(M, rho)
    energy = float(V @ (L @ V))
    v_norm2 = float(np.sum(rho * V * V))
    b2 = (float(np.sum(rho * V * r)) - (1 - gamma) * v_norm2) / gamma
    r_tilde = r - float(rho @ r)
    r_tilde_norm = rho_norm(r_tilde, rho)
    lam2, lam_k1 = float(evals[1]), float(evals[k])
    e_k = projection_error(V, U[:, :k], rho)
    e_1 = projection_error(V, U[:, :1], rho)
    # TD(0) fixed point on the same features (B7).
    Uk = U[:, :k]
    DUk = Uk * rho[:, None]
    w = np.linalg.solve(DUk.T @ (Uk - gamma * (M @ Uk)), DUk.T @ r)
    e_td = rho_norm(V - Uk @ w, rho)
    connectivity = 1 - gamma + gamma * lam2
    return {
        "e_k": e_k, "e_1": e_1, "energy": energy,
        "B1": math.sqrt(_safe_div(max(energy, 0.0), lam_k1)),
        "B2_energy": b2,
        "B3": _safe_div(r_tilde_norm, connectivity),
        "B4": _safe_div(r_tilde_norm, math.sqrt(max(gamma * lam_k1 * connectivity, 0.0))),
        "e_td": e_td, "B7": e_k / math.sqrt(1 - gamma * gamma),
        "lambda2": lam2, "lambda_k1": lam_k1,
        "r_tilde_norm": r_tilde_norm, "V_norm": math.sqrt(v_norm2),
    }


def bound_violations(b: dict, rtol: float = RTOL) -> dict:
    """Which certificates of a :func:`connectivity_bounds` result fail (True = violated).

    B1, B3 (both ``e_k ≤ e_1`` and ``e_1 ≤ B3``), B4, B7 at relative tolerance ``rtol``;
    B2 when ``|E(V) − B2| > rtol·(1 + E(V))``.
    """
    def over(value: float, bound: float) -> bool:
        return not (value <= bound * (1 + rtol))

    return {
        "B1": over(b["e_k"], b["B1"]),
        "B2": not (abs(b["energy"] - b["B2_energy"]) <= rtol * (1 + abs(b["energy"]))),
        "B3": over(b["e_k"], b["e_1"]) or over(b["e_1"], b["B3"]),
        "B4": over(b["e_k"], b["B4"]),
        "B7": over(b["e_td"], b["B7"]),
    }


def subspace_sin_theta(A: np.ndarray, B: np.ndarray) -> tuple[float, float]:
    """``(‖sin Θ‖_F, ‖sin Θ‖₂)`` between the column spaces of two orthonormal n × k matrices."""
    if A.shape != B.shape:
        raise ValueError(f"subspaces must have the same shape, got {A.shape} and {B.shape}")
    cosines = np.clip(np.linalg.svd(A.T @ B, compute_uv=False), 0.0, 1.0)
    sines2 = np.clip(1.0 - cosines ** 2, 0.0, None)
    return float(np.sqrt(sines2.sum())), float(np.sqrt(sines2.max()))


def estimation_bounds(N_true: Any, N_hat: Any, k: int) -> dict:
    """Davis–Kahan (B5) for the bottom-k eigenvectors of an estimated normalized Laplacian.

    Returns ``sin_theta_F, sin_theta_2`` (measured), ``DK_bound`` (B5; ``inf`` with a warning
    when the gap ``δ_k = λ_{k+1} − λ_k`` is 0), ``gap``, ``norm_diff_2`` (‖N̂ − N‖₂),
    ``norm_diff_F``, and the two eigenvector blocks ``Phi``/``Phi_hat``.
    """
    Nt = N_true.toarray() if hasattr(N_true, "toarray") else np.asarray(N_true, dtype=np.float64)
    Nh = N_hat.toarray() if hasattr(N_hat, "toarray") else np.asarray(N_hat, dtype=np.float64)
    if Nt.shape != Nh.shape or Nt.ndim != 2 or Nt.shape[0] != Nt.shape[1]:
        raise ValueError(f"N_true and N_hat must be square and of one shape, got {Nt.shape}, {Nh.shape}")
    n = Nt.shape[0]
    k = check_int(k, "k", min_value=1, max_value=n - 1)
    evals, Phi = symmetric_eigenpairs(Nt, k + 1, "dense")
    _, Phi_hat = symmetric_eigenpairs(Nh, k, "dense")
    Phi = Phi[:, :k]
    diff = Nh - Nt
    diff = 0.5 * (diff + diff.T)
    norm2 = float(np.linalg.norm(diff, 2))
    normF = float(np.linalg.norm(diff, "fro"))
    gap = float(evals[k] - evals[k - 1])
    if gap <= 0:
        warnings.warn(f"eigengap delta_{k} = {gap:.3g} <= 0 (repeated eigenvalue): the Davis-Kahan "
                      "bound is infinite; compare subspaces, not individual eigenvectors",
                      RuntimeWarning, stacklevel=2)
    sin_f, sin_2 = subspace_sin_theta(Phi, Phi_hat)
    return {"sin_theta_F": sin_f, "sin_theta_2": sin_2,
            "DK_bound": _safe_div(2.0 * min(math.sqrt(k) * norm2, normF), gap),
            "gap": gap, "norm_diff_2": norm2, "norm_diff_F": normF,
            "Phi": Phi, "Phi_hat": Phi_hat}


def end_to_end_bounds(V: np.ndarray, rho: np.ndarray, Phi: np.ndarray, Phi_hat: np.ndarray,
                      sin_theta_2: float, B4: float, DK_bound: float) -> dict:
    """B6: the error of learned features against its two-term decomposition.

    ``x = D^{1/2}V``; ``e_k = ‖x − ΦΦᵀx‖``, ``ê_k = ‖x − Φ̂Φ̂ᵀx‖``;
    ``measured_bound = e_k + ‖sin Θ‖₂‖V‖_ρ`` and ``full_bound = B4 + B5·‖V‖_ρ``.
    """
    x = np.sqrt(rho) * np.asarray(V, dtype=np.float64)
    e_k = float(np.linalg.norm(x - Phi @ (Phi.T @ x)))
    e_hat = float(np.linalg.norm(x - Phi_hat @ (Phi_hat.T @ x)))
    v_norm = float(np.linalg.norm(x))
    return {"e_k": e_k, "e_hat": e_hat, "V_norm": v_norm,
            "measured_bound": e_k + sin_theta_2 * v_norm,
            "full_bound": B4 + DK_bound * v_norm}
