"""Float32-safe Poincaré-ball operations at the origin, Klein conversion and the Einstein midpoint.

The maps are the closed forms (tanh / artanh). geoopt 0.5.1 works with torch 2.13 and agrees with
them to 1e-14 in float64 (tested), but its κ-stereographic TorchScript maps evaluate both curvature
branches and a Taylor series, which made CHR's forward pass ~10× slower than the closed forms; so
geoopt is the reference the tests compare against, not the implementation. Every function keeps the
input's dtype and device; ``c`` may be a Python float or a 0-d tensor (a learnable curvature).

References
----------
PointCHR: curvature-aware hyperbolic rectification for point cloud analysis (ICML 2026).
Ganea, Bécigneul, Hofmann. Hyperbolic neural networks. NeurIPS 2018.
Gulcehre et al. Hyperbolic attention networks. ICLR 2019 (Einstein midpoint).
"""

from __future__ import annotations

import torch

__all__ = ["PoincareOps"]

_NORM_FLOOR = 1e-15       # guard for zero-norm vectors (direction undefined)
_KLEIN_MARGIN = 1e-5      # c|k|^2 <= 1 - margin before the Lorentz-factor sqrt
_KLEIN_FLOOR = 1e-10      # 1 - c|k|^2 >= floor (float32-safe)


def _curvature(c, like: torch.Tensor) -> torch.Tensor:
    c = torch.as_tensor(c, dtype=like.dtype, device=like.device)
    if c.numel() != 1 or not bool(torch.isfinite(c.detach()).all()) or float(c.detach()) <= 0:
        raise ValueError(f"c must be a positive finite scalar, got {c.detach().tolist()}")
    return c.reshape(())


def _sqnorm(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return (x * x).sum(dim=dim, keepdim=True)


class PoincareOps:
    """Static operations on the Poincaré ball ``{x : c|x|^2 < 1}`` of curvature ``-c``.

    Notes
    -----
    ``exp_0(v) = tanh(√c|v|) v / (√c|v|)``, ``log_0(x) = artanh(√c|x|) x / (√c|x|)``,
    ``d_c(0, x) = (2/√c) artanh(√c|x|)``, so ``d_c(0, exp_0(v)) = 2|v|``. Klein model:
    ``k = 2x / (1 + c|x|^2)``, back ``x = k / (1 + sqrt(1 - c|k|^2))``; Lorentz factor
    ``γ = 1 / sqrt(1 - c|k|^2)`` (equal to ``cosh d_c(0, x)``).

    References
    ----------
    Ganea, Bécigneul & Hofmann, "Hyperbolic Neural Networks", NeurIPS 2018; Ungar, *A Gyrovector
    Space Approach to Hyperbolic Geometry*, Morgan & Claypool 2009 (Möbius addition, Einstein
    midpoint).

    Examples
    --------
    >>> import torch
    >>> v = torch.tensor([[0.3, -0.4]])
    >>> x = PoincareOps.expmap0(v, 1.0)
    >>> torch.allclose(PoincareOps.logmap0(x, 1.0), v, atol=1e-6)
    True
    >>> round(float(PoincareOps.dist0(x, 1.0)), 5)   # twice the tangent norm
    1.0
    """

    @staticmethod
    def project(x: torch.Tensor, c=1.0, eps: float = 1e-5) -> torch.Tensor:
        """Radially clip ``x`` to ``|x| <= (1 - eps)/√c`` (the float32-safe ball)."""
        c = _curvature(c, x)
        max_norm = (1.0 - eps) / c.sqrt()
        norm = _sqnorm(x).clamp_min(_NORM_FLOOR ** 2).sqrt()
        return torch.where(norm > max_norm, x / norm * max_norm, x)

    @staticmethod
    def expmap0(v: torch.Tensor, c=1.0, eps: float = 1e-5) -> torch.Tensor:
        """Exponential map at the origin, ``tanh(√c|v|) v/(√c|v|)``, projected into the safe ball."""
        sqrt_c = _curvature(c, v).sqrt()
        scaled = sqrt_c * _sqnorm(v).clamp_min(_NORM_FLOOR ** 2).sqrt()
        x = torch.tanh(scaled) / scaled * v
        return PoincareOps.project(x, sqrt_c ** 2, eps)

    @staticmethod
    def logmap0(x: torch.Tensor, c=1.0, eps: float = 1e-5) -> torch.Tensor:
        """Logarithmic map at the origin, ``artanh(√c|x|) x/(√c|x|)`` (artanh argument ≤ 1 − eps)."""
        sqrt_c = _curvature(c, x).sqrt()
        scaled = (sqrt_c * _sqnorm(x).clamp_min(_NORM_FLOOR ** 2).sqrt()).clamp_max(1.0 - eps)
        return torch.atanh(scaled) / scaled * x

    @staticmethod
    def dist0(x: torch.Tensor, c=1.0, eps: float = 1e-5) -> torch.Tensor:
        """Hyperbolic distance to the origin, ``(2/√c) artanh(√c|x|)``; shape ``x.shape[:-1]``."""
        sqrt_c = _curvature(c, x).sqrt()
        scaled = (sqrt_c * _sqnorm(x).sqrt()).clamp_max(1.0 - eps).squeeze(-1)
        return 2.0 / sqrt_c * torch.atanh(scaled)

    @staticmethod
    def to_klein(x: torch.Tensor, c=1.0) -> torch.Tensor:
        """Poincaré → Klein: ``2x / (1 + c|x|^2)``."""
        c = _curvature(c, x)
        return 2.0 * x / (1.0 + c * _sqnorm(x))

    @staticmethod
    def from_klein(k: torch.Tensor, c=1.0) -> torch.Tensor:
        """Klein → Poincaré: ``k / (1 + sqrt(1 - c|k|^2))``."""
        c = _curvature(c, k)
        inside = (1.0 - c * _sqnorm(k)).clamp_min(_KLEIN_FLOOR)
        return k / (1.0 + inside.sqrt())

    @staticmethod
    def lorentz_factor(x: torch.Tensor, c=1.0) -> torch.Tensor:
        """Lorentz factor ``γ = 1/sqrt(1 - c|k|^2)`` of Poincaré points ``x`` (shape ``x.shape[:-1]``).

        ``c|k|^2`` is clamped to ``1 - 1e-5`` first, so ``γ ≤ 316`` and never infinite. Computed as
        ``(1 + c|x|^2)/(1 - c|x|^2)``, the same value without the float32 cancellation of
        ``1 - c|k|^2`` near the boundary.
        """
        c_ = _curvature(c, x)
        return _lorentz_from_sqnorm(_sqnorm_fast(x), c_)

    @staticmethod
    def einstein_midpoint(x: torch.Tensor, c=1.0, weights: torch.Tensor | None = None,
                          dim: int = -2, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Einstein midpoint of Poincaré points along ``dim`` (computed in the Klein model).

        Parameters
        ----------
        x : Tensor
            Points on the ball, ``(..., N, D)`` with the point axis ``dim`` (default ``-2``).
        c : float or Tensor
            Ball curvature (``> 0``).
        weights : Tensor, optional
            Non-negative extra weights, shape ``x.shape`` without the last axis.
        mask : Tensor of bool, optional
            ``True`` for points to include (same shape as ``weights``).

        Returns
        -------
        Tensor
            The midpoint, ``x`` with axis ``dim`` removed; on the ball.

        Notes
        -----
        ``m_K = Σ γ_i w_i k_i / Σ γ_i w_i``, returned as ``m_K / (1 + sqrt(1 - c|m_K|^2))``.
        Every factor is a per-point scalar (``k_i = 2x_i/(1 + c|x_i|^2)``, ``γ_i`` a function of
        ``|x_i|``), so the sum is one ``einsum`` of those scalars with ``x``: no Klein points or
        other ``(…, N, D)`` temporaries are built.
        """
        c_ = _curvature(c, x)
        if dim < 0:
            dim = x.ndim + dim
        if dim == x.ndim - 1:
            raise ValueError("dim must index the point axis, not the feature (last) axis")
        sq = _sqnorm_fast(x)                                            # x.shape[:-1]
        w = _lorentz_from_sqnorm(sq, c_)
        for name, extra in (("weights", weights), ("mask", mask)):
            if extra is not None:
                if not isinstance(extra, torch.Tensor):
                    raise TypeError(f"{name} must be a torch.Tensor, got {type(extra).__name__}")
                if extra.is_complex():
                    raise TypeError(f"{name} must be real, got {extra.dtype}")
                try:
                    w = w * torch.broadcast_to(extra.to(w.dtype), w.shape)
                except RuntimeError:
                    raise ValueError(f"{name} must have shape {tuple(w.shape)} (x without its last "
                                     f"axis), got {tuple(extra.shape)}") from None
        coeff = (w * (2.0 / (1.0 + c_ * sq))).movedim(dim, -1)          # γ_i w_i · Klein factor
        total = w.sum(dim=dim).unsqueeze(-1).clamp_min(_NORM_FLOOR)
        m_k = torch.einsum("...n,...nd->...d", coeff, x.movedim(dim, -2)) / total
        return PoincareOps.from_klein(m_k, c_)


def _lorentz_from_sqnorm(sq: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Lorentz factors ``γ`` of Poincaré points from their squared norms ``sq``.

    ``1 - c|k|^2 = ((1 - c|x|^2)/(1 + c|x|^2))^2`` for the Klein point ``k = 2x/(1 + c|x|^2)``, so
    ``γ = (1 + c|x|^2)/(1 - c|x|^2)``: the same value as ``1/sqrt(1 - c|k|^2)`` without its
    cancellation near the boundary, capped like it at ``c|k|^2 ≤ 1 - 1e-5`` (``γ ≤ 316``).
    """
    csq = c * sq
    gamma = (1.0 + csq) / (1.0 - csq).clamp_min(_KLEIN_FLOOR)
    return gamma.clamp_max(_KLEIN_MARGIN ** -0.5)


def _sqnorm_fast(x: torch.Tensor) -> torch.Tensor:
    """``|x|^2`` over the last axis without an ``x*x`` temporary (shape ``x.shape[:-1]``)."""
    return torch.linalg.vector_norm(x, dim=-1).square()
