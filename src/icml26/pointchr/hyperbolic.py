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

        ``c|k|^2`` is clamped to ``1 - 1e-5`` first, so ``γ ≤ 316`` and never infinite.
        """
        c_ = _curvature(c, x)
        k = PoincareOps.to_klein(x, c_)
        ck2 = (c_ * _sqnorm(k)).clamp_max(1.0 - _KLEIN_MARGIN)
        return (1.0 - ck2).clamp_min(_KLEIN_FLOOR).rsqrt().squeeze(-1)

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
        """
        c_ = _curvature(c, x)
        if dim < 0:
            dim = x.ndim + dim
        if dim == x.ndim - 1:
            raise ValueError("dim must index the point axis, not the feature (last) axis")
        k = PoincareOps.to_klein(x, c_)
        w = PoincareOps.lorentz_factor(x, c_)
        if weights is not None:
            w = w * weights.to(w.dtype)
        if mask is not None:
            w = w * mask.to(w.dtype)
        w = w.unsqueeze(-1)
        m_k = (w * k).sum(dim=dim) / w.sum(dim=dim).clamp_min(_NORM_FLOOR)
        return PoincareOps.from_klein(m_k, c_)
