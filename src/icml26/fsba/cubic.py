"""The exact cubic-regularized Newton subproblem and the SOSP certificate.

``argmin_s <G, s> + ½ sᵀHs + (M/6)‖s‖³`` (Nesterov & Polyak 2006): with ``H = V diag(λ) Vᵀ``
and ``ĝ = VᵀG``, the solution is ``s = −V(Λ + (Mr/2)I)^{-1}ĝ`` where ``r = ‖s‖ ≥
max(0, −2λ₁/M)`` solves the secular equation ``‖(Λ + (Mr/2)I)^{-1}ĝ‖ = r``. In the hard case
(ĝ has no component on the bottom eigenvector and ``‖s(r_lo)‖ ≤ r_lo``) the step is
completed along ``v₁`` to length ``r_lo``: at an exact strict saddle (G = 0, λ₁ < 0) this is a
step of length ``2|λ₁|/M`` along ``v₁`` — the saddle-escape mechanism of cubic Newton.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml26.core.validation import check_finite_array, check_scalar_in

__all__ = ["cubic_step", "cubic_model", "sosp_certificate", "BISECTION_STEPS"]

#: Steps on the secular equation (safeguarded Newton on 1/‖s(r)‖ − 1/r, bisection when a
#: Newton step leaves the bracket); bracket doubling is capped at the same count.
BISECTION_STEPS = 200
#: Components of ĝ below this (relative to ‖G‖ + 1) count as zero in the hard-case test.
HARD_CASE_TOL = 1e-14
#: Relative tolerance on the secular equation ‖s(r)‖ = r.
SECULAR_RTOL = 1e-13


def cubic_model(G: np.ndarray, H: np.ndarray, M: float, s: np.ndarray) -> float:
    """``<G, s> + ½ sᵀHs + (M/6)‖s‖³``."""
    return float(G @ s + 0.5 * s @ H @ s + M / 6.0 * np.linalg.norm(s) ** 3)


def cubic_step(G: Any, H: Any = None, M: float = 1.0, *, eig: tuple | None = None) -> np.ndarray:
    """Global minimizer of the cubic model ``<G,s> + ½sᵀHs + (M/6)‖s‖³``.

    Parameters
    ----------
    G : (n,) array
        Gradient.
    H : (n, n) array, optional
        Hessian (symmetrized internally); omit when ``eig`` is given.
    M : float > 0
        Cubic regularization.
    eig : (eigenvalues, eigenvectors), optional
        A cached ``eigh(H)`` (lazy methods reuse it: each solve is then O(n²)).

    Returns
    -------
    s : (n,) array

    Examples
    --------
    >>> s = cubic_step(np.zeros(2), np.diag([-1.0, 2.0]), M=1.0)   # exact saddle: escape
    >>> np.round(np.abs(s), 6)
    array([2., 0.])
    """
    M = check_scalar_in(M, "M", low=0.0, low_inclusive=False)
    G = check_finite_array(G, "G", dtype=np.float64).reshape(-1)
    if eig is None:
        if H is None:
            raise ValueError("give H or eig")
        H = check_finite_array(H, "H", dtype=np.float64)
        if H.shape != (G.size, G.size):
            raise ValueError(f"H must be a square ({G.size}, {G.size}) matrix matching G (size {G.size}), "
                             f"got shape {H.shape}")
        lam, V = np.linalg.eigh(0.5 * (H + H.T))
    else:
        lam, V = eig
    g_hat = V.T @ G
    lam1 = float(lam[0])
    r_lo = max(0.0, -2.0 * lam1 / M)
    g_norm = float(np.linalg.norm(G))
    if g_norm == 0.0 and lam1 >= 0:
        return np.zeros_like(G)
    tiny = HARD_CASE_TOL * (g_norm + 1.0)
    bottom = np.abs(lam - lam1) <= 1e-12 * max(1.0, abs(lam1))

    def step_norm(r: float, mask=None) -> float:
        denom = lam + 0.5 * M * r
        comp = g_hat if mask is None else np.where(mask, 0.0, g_hat)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(comp == 0.0, 0.0, comp / denom)
        return float(np.linalg.norm(q))

    if lam1 < 0 and np.all(np.abs(g_hat[bottom]) <= tiny):
        # possible hard case: the singular direction carries no gradient
        ns = step_norm(r_lo, bottom)
        if ns <= r_lo:
            denom = lam + 0.5 * M * r_lo
            q = np.where(bottom, 0.0, g_hat / np.where(bottom, 1.0, denom))
            s = -V @ q
            alpha = math.sqrt(max(r_lo ** 2 - ns ** 2, 0.0))
            return s + alpha * V[:, 0]
    lo = r_lo
    hi = max(r_lo, 1.0)
    for _ in range(BISECTION_STEPS):
        if step_norm(hi) <= hi:
            break
        hi *= 2.0
    # safeguarded Newton on F(r) = 1/‖s(r)‖ − 1/r (nearly linear in r), bisection as fallback
    r = hi
    for _ in range(BISECTION_STEPS):
        denom = lam + 0.5 * M * r
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.divide(g_hat, denom, out=np.zeros_like(g_hat), where=g_hat != 0.0)
            n = float(np.linalg.norm(q))     # inf at the pole r = r_lo: counts as n > r
        if n > r:
            lo = r
        else:
            hi = r
        if abs(n - r) <= SECULAR_RTOL * r:
            break
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            dn = -0.5 * M * float(np.sum(np.divide(q * q, denom, out=np.zeros_like(q),
                                                   where=q != 0.0))) / n
            slope = -dn / n ** 2 + 1.0 / r ** 2
            candidate = r - (1.0 / n - 1.0 / r) / slope if slope > 0 else lo
        if not lo < candidate < hi:
            candidate = 0.5 * (lo + hi)
            if candidate in (lo, hi):       # bracket at machine precision
                r = hi
                break
        r = candidate
    return -V @ (g_hat / (lam + 0.5 * M * r))


def sosp_certificate(grad: Any, hess: Any, eps: float, rho: float) -> dict:
    """Is x an ``(ε, √(ρε))``-second-order stationary point?

    Returns ``grad_norm``, ``lam_min`` and ``is_sosp`` (``‖∇φ‖ ≤ ε`` and
    ``λ_min(∇²φ) ≥ −√(ρε)``).
    """
    eps = check_scalar_in(eps, "eps", low=0.0, low_inclusive=False)
    rho = check_scalar_in(rho, "rho", low=0.0, low_inclusive=False)
    grad = check_finite_array(grad, "grad", dtype=np.float64).reshape(-1)
    hess = check_finite_array(hess, "hess", dtype=np.float64)
    if hess.shape != (grad.size, grad.size):  # #33: numpy's broadcast message named nothing
        raise ValueError(f"hess must be a square ({grad.size}, {grad.size}) matrix matching grad "
                         f"(size {grad.size}), got shape {hess.shape}")
    grad_norm = float(np.linalg.norm(grad))
    lam_min = float(np.linalg.eigvalsh(0.5 * (hess + hess.T))[0])
    return {"grad_norm": grad_norm, "lam_min": lam_min,
            "is_sosp": bool(grad_norm <= eps and lam_min >= -math.sqrt(rho * eps))}
