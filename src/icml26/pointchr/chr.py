"""The CHR module: curvature-guided radial rectification of point features on the Poincaré ball.

PointCHR's abstract fixes three facts: the rectification is (1) guided by local curvature,
(2) learnable, (3) a radial push of high-curvature points towards the boundary of a hyperbolic
space, and the module plugs into existing backbones. The exact gate, push rule and where the
geometry is used are *Resolutions (not from the paper)*: a monotone sigmoid gate on ``κ``, a
convex push of the tangent norm towards ``t_max``, and Einstein-midpoint pooling of the
rectified points (where large hyperbolic radii become large aggregation weights).

References
----------
PointCHR: curvature-aware hyperbolic rectification for point cloud analysis (ICML 2026).
Guo, Wang, Chen, Yu. Clipped hyperbolic classifiers are super-hyperbolic classifiers. CVPR 2022.
Montanaro, Valsesia, Magli. Rethinking the compositionality of point clouds through
regularization in the hyperbolic space (HyCoRe). NeurIPS 2022.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from icml26.core.validation import check_choice, check_int, check_scalar_in, check_tensor

from .curvature import check_curvature, check_finite, check_module_dtype, check_points, surface_variation
from .hyperbolic import PoincareOps

__all__ = ["CurvatureHyperbolicRectifier", "CHR", "quantile_gate", "GATE_QUANTILES", "SPEC_GATE"]

_NORM_FLOOR = 1e-15
_KLEIN_MARGIN = 1e-5      # c|k|^2 <= 1 - margin: Lorentz factors capped at 316 (as PoincareOps)


def _inverse_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y))


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


# Resolution (not from the paper): the gate rises from 0.1 to 0.9 between these quantiles of the
# training points' κ (label-free). Chosen by part "dev" before any test run of it: highest
# mean dev-validation OA of CHR over dev seeds 100-103 among the candidates (0.5, 0.9), (0.6, 0.8),
# (0.7, 0.95) and the spec's a = 10, b = 0.2: 66.03 / 67.59 / 65.66 / 66.31 % (README, "Gate rule").
# On FineDetail-8's training set it gives a ≈ 40.5, b ≈ 0.198.
GATE_QUANTILES = (0.6, 0.8)
SPEC_GATE = {"a_init": 10.0, "b_init": 0.2}      # the spec's literal initialisation
GATE_RISE = (0.1, 0.9)


def quantile_gate(curvature, q_low: float = GATE_QUANTILES[0], q_high: float = GATE_QUANTILES[1],
                  rise: tuple = GATE_RISE) -> dict:
    """Label-free gate initialisation from the curvature distribution of the training points.

    The gate ``g = sigmoid(a(κ - b))`` is set to rise from ``rise[0]`` at ``κ_low`` to ``rise[1]``
    at ``κ_high``, the ``q_low`` / ``q_high`` quantiles of ``curvature`` (every training point
    pooled; no labels, no detail masks).

    Parameters
    ----------
    curvature : Tensor or array
        κ of the training points, any shape (flattened), finite, in ``[0, 1]``.
    q_low, q_high : float
        Quantiles, ``0 <= q_low < q_high <= 1``.
    rise : (float, float)
        Gate values at ``κ_low`` and ``κ_high``, ``0 < rise[0] < rise[1] < 1``.

    Returns
    -------
    dict
        ``{"a_init": a, "b_init": b, "kappa_low": κ_low, "kappa_high": κ_high}``; pass the first
        two to :class:`CurvatureHyperbolicRectifier`.

    Notes
    -----
    ``a = (logit(rise[1]) - logit(rise[0])) / (κ_high - κ_low)``, ``b = κ_low - logit(rise[0])/a``
    (the midpoint of the range for a symmetric ``rise``). *Resolution (not from the paper).*

    Examples
    --------
    >>> import torch
    >>> gate = quantile_gate(torch.linspace(0, 1, 101), 0.6, 0.8)
    >>> round(gate["b_init"], 3), round(gate["a_init"], 2)
    (0.7, 21.97)
    """
    if not isinstance(curvature, torch.Tensor):
        curvature = np.asarray(curvature)
        if curvature.dtype.kind not in "fiu":
            raise TypeError(f"curvature must be a real numeric array, got dtype {curvature.dtype}")
        curvature = torch.from_numpy(curvature)
    if curvature.is_complex() or curvature.dtype == torch.bool:
        raise TypeError(f"curvature must be a real numeric tensor, got {curvature.dtype}")
    kappa = curvature.detach().reshape(-1).to(torch.float64)
    if kappa.numel() == 0:
        raise ValueError("curvature is empty; expected the κ of the training points")
    check_finite(kappa, "curvature")
    q_low = check_scalar_in(q_low, "q_low", low=0.0, high=1.0)
    q_high = check_scalar_in(q_high, "q_high", low=0.0, high=1.0)
    if q_high <= q_low:
        raise ValueError(f"q_high must be > q_low, got q_low={q_low:g}, q_high={q_high:g}")
    if len(rise) != 2 or not 0.0 < rise[0] < rise[1] < 1.0:
        raise ValueError(f"rise must be (low, high) with 0 < low < high < 1, got {rise}")
    quantiles = torch.tensor([q_low, q_high], dtype=torch.float64, device=kappa.device)
    k_low, k_high = (float(v) for v in torch.quantile(kappa, quantiles))
    if k_high - k_low < 1e-6:
        raise ValueError(f"curvature quantiles {q_low:g} and {q_high:g} coincide ({k_low:.3g}); the "
                         "gate needs a spread of κ (pass a_init/b_init directly)")
    a = (_logit(rise[1]) - _logit(rise[0])) / (k_high - k_low)
    return {"a_init": a, "b_init": k_low - _logit(rise[0]) / a, "kappa_low": k_low,
            "kappa_high": k_high}


class CurvatureHyperbolicRectifier(nn.Module):
    """Curvature-aware hyperbolic rectification (CHR) of per-point features.

    Parameters
    ----------
    in_dim : int
        Feature width ``D`` of the backbone's per-point features.
    hyp_dim : int, optional
        Width ``D_h`` of a linear projection before the push (``None``: identity, ``D_h = D``).
    k : int
        Neighbourhood size of the curvature estimate (used when ``curvature`` is not passed).
    c : float
        Ball curvature ``c > 0`` (the ball has sectional curvature ``-c``).
    learn_c : bool
        Learn ``c = softplus(ĉ)`` (initialised at ``c``).
    t_clip : float
        Feature clipping: tangent norms are first clipped to ``t_clip`` (Guo et al., 2022).
    t_max : float
        Maximum tangent norm after the push (hyperbolic radius ``2 t_max``); ``> t_clip``.
    gate : {"sigmoid", "mlp"}
        ``g = sigmoid(a(κ - b))`` (monotone in ``κ``) or ``sigmoid(MLP([κ, |u|]))`` (2→16→1).
    a_init, b_init : float
        Initial gate slope (``a = softplus(â) > 0``) and threshold.
    gamma_init : float
        Initial push strength ``γ = sigmoid(γ̂) ∈ (0, 1)``.
    eps_ball : float
        Projection margin: ``|x| ≤ (1 - eps_ball)/√c``.

    Notes
    -----
    For point ``i`` with tangent feature ``u_i = W F_i`` clipped to norm ``t_i ≤ t_clip`` and
    curvature ``κ_i``: ``g_i = sigmoid(a(κ_i - b))``,
    ``t'_i = t_i + γ g_i (t_max - t_i)``, ``x'_i = exp_0(t'_i u_i/|u_i|)``, so the hyperbolic
    radius becomes ``ρ'_i = 2 t'_i``. The pooled descriptor is ``log_0`` of the Einstein midpoint
    of the ``x'_i`` (Lorentz factors ``γ_i = cosh(√c ρ'_i)`` grow exponentially with the radius, so
    pushed high-curvature points dominate the aggregate). All parameters are Euclidean; train with
    any torch optimiser. The forward pass evaluates these maps through per-point scalars (radii)
    times unit directions, which equals ``PoincareOps.expmap0`` / ``einstein_midpoint`` on the
    vectors (tested) at a fraction of the cost.

    References
    ----------
    *PointCHR: curvature-aware hyperbolic rectification for point cloud analysis*, ICML 2026
    (authors not retrievable; see the package README).
    Ganea, Bécigneul & Hofmann, "Hyperbolic Neural Networks", NeurIPS 2018 (exp/log maps on the
    Poincaré ball).

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> chr_ = CurvatureHyperbolicRectifier(in_dim=32, hyp_dim=16, k=8)
    >>> out = chr_(torch.randn(2, 64, 3), torch.randn(2, 64, 32))
    >>> out["ball"].shape, out["pooled"].shape, out["radius"].shape
    (torch.Size([2, 64, 16]), torch.Size([2, 16]), torch.Size([2, 64]))
    """

    def __init__(self, in_dim: int, hyp_dim: int | None = None, k: int = 16, c: float = 1.0,
                 learn_c: bool = False, t_clip: float = 1.0, t_max: float = 3.0,
                 gate: str = "sigmoid", a_init: float = 10.0, b_init: float = 0.2,
                 gamma_init: float = 0.5, eps_ball: float = 1e-5):
        super().__init__()
        self.in_dim = check_int(in_dim, "in_dim", min_value=1)
        self.hyp_dim = None if hyp_dim is None else check_int(hyp_dim, "hyp_dim", min_value=1)
        self.k = check_int(k, "k", min_value=3)
        c = check_scalar_in(c, "c", low=0.0, low_inclusive=False)
        self.learn_c = bool(learn_c)
        self.t_clip = check_scalar_in(t_clip, "t_clip", low=0.0, low_inclusive=False)
        self.t_max = check_scalar_in(t_max, "t_max", low=0.0)
        if self.t_max <= self.t_clip:
            raise ValueError(f"t_max must be > t_clip, got t_max={self.t_max:g}, t_clip={self.t_clip:g}")
        self.gate = check_choice(gate, "gate", ("sigmoid", "mlp"))
        a_init = check_scalar_in(a_init, "a_init", low=0.0, low_inclusive=False)
        b_init = check_scalar_in(b_init, "b_init")
        gamma_init = check_scalar_in(gamma_init, "gamma_init", low=0.0, high=1.0,
                                     low_inclusive=False, high_inclusive=False)
        self.eps_ball = check_scalar_in(eps_ball, "eps_ball", low=0.0, high=1.0,
                                        low_inclusive=False, high_inclusive=False)
        self.proj = nn.Linear(in_dim, hyp_dim) if hyp_dim is not None else nn.Identity()
        self.gate_slope_raw = nn.Parameter(torch.tensor(_inverse_softplus(a_init)))
        self.gate_threshold = nn.Parameter(torch.tensor(b_init))
        self.push_raw = nn.Parameter(torch.tensor(_logit(gamma_init)))
        if self.learn_c:
            self.c_raw = nn.Parameter(torch.tensor(_inverse_softplus(c)))
        else:
            self.register_buffer("c_fixed", torch.tensor(c))
        self.gate_mlp = (nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
                         if self.gate == "mlp" else None)

    @property
    def out_dim(self) -> int:
        return self.hyp_dim if self.hyp_dim is not None else self.in_dim

    def curvature_c(self) -> torch.Tensor:
        """The ball curvature ``c`` as a 0-d tensor (learnable when ``learn_c``)."""
        return F.softplus(self.c_raw) if self.learn_c else self.c_fixed

    def gate_values(self, kappa: torch.Tensor, tangent_norm: torch.Tensor) -> torch.Tensor:
        """Gate ``g ∈ (0, 1)`` per point from curvature (and, for ``gate="mlp"``, the norm)."""
        if self.gate_mlp is None:
            slope = F.softplus(self.gate_slope_raw)
            return torch.sigmoid(slope * (kappa - self.gate_threshold))
        return torch.sigmoid(self.gate_mlp(torch.stack([kappa, tangent_norm], dim=-1))).squeeze(-1)

    def forward(self, xyz: torch.Tensor, feats: torch.Tensor, curvature: torch.Tensor | None = None,
                mask: torch.Tensor | None = None, *, return_points: bool = True) -> dict:
        """Rectify per-point features and pool them in the ball.

        Parameters
        ----------
        xyz : Tensor
            Point coordinates ``(B, N, 3)`` (used for the curvature when ``curvature`` is None).
        feats : Tensor
            Per-point features ``(B, N, in_dim)``, in the dtype of the module's parameters
            (``module.double()`` for float64 features, as for any torch module).
        curvature : Tensor, optional
            Per-point curvature ``(B, N)`` in ``[0, 1]`` (e.g. precomputed, or from normals).
        mask : Tensor of bool, optional
            ``(B, N)``, ``True`` for real points; padded points are excluded from the curvature
            neighbourhoods and the midpoint.
        return_points : bool
            Also return the rectified points ``ball`` and ``tangent`` (two ``(B, N, D_h)`` tensors);
            pooling-only callers pass ``False`` and skip building them.

        Returns
        -------
        dict
            ``ball`` (B, N, D_h) rectified points; ``tangent`` their ``log_0`` (both only with
            ``return_points``); ``pooled`` (B, D_h) ``log_0`` of the Einstein midpoint;
            ``curvature`` (B, N); ``radius`` (B, N) hyperbolic radius ``ρ'``; ``gate`` (B, N);
            ``weight`` (B, N) Lorentz factors ``γ_i``.

        Raises
        ------
        TypeError
            ``feats`` is not in the dtype of the module's parameters.
        """
        check_points(xyz, "xyz", k=self.k if curvature is None else None, mask=mask)
        check_finite(check_tensor(feats, "feats", ndim=3, finite=False), "feats")
        check_module_dtype(self, feats, "feats")
        if feats.shape[:2] != xyz.shape[:2]:
            raise ValueError(f"feats must have shape (B, N, D) matching xyz {tuple(xyz.shape[:2])}, "
                             f"got {tuple(feats.shape)}")
        if feats.shape[-1] != self.in_dim:
            raise ValueError(f"feats must have {self.in_dim} channels (in_dim), got {feats.shape[-1]}")
        if curvature is None:
            curvature = surface_variation(xyz, self.k, mask=mask)
        else:
            check_curvature(curvature, xyz)
        curvature = curvature.to(feats.dtype)
        c = self.curvature_c().to(feats.dtype)
        sqrt_c = c.sqrt()
        u = self.proj(feats)                                           # (B, N, Dh)
        norm = torch.linalg.vector_norm(u, dim=-1).clamp_min(_NORM_FLOOR)   # (B, N)
        t = norm.clamp_max(self.t_clip)                                # feature clipping
        g = self.gate_values(curvature, t)
        push = torch.sigmoid(self.push_raw)
        t_new = t + push * g * (self.t_max - t)
        # the projection |x| <= (1 - eps)/sqrt(c) caps the tangent norm at artanh(1 - eps)/sqrt(c)
        t_new = torch.minimum(t_new, math.atanh(1.0 - self.eps_ball) / sqrt_c)
        # Everything below is a per-point scalar times the direction u/|u| (zero vectors stay at 0):
        # Poincaré radius r = tanh(√c t')/√c, Klein radius 2r/(1 + c r²), Lorentz factor
        # γ = cosh(2√c t') (= 1/sqrt(1 - c|k|²), capped like PoincareOps at c|k|² ≤ 1 - 1e-5).
        ball_radius = torch.tanh(sqrt_c * t_new) / sqrt_c
        klein_radius = 2.0 * ball_radius / (1.0 + c * ball_radius ** 2)
        weight = torch.cosh(2.0 * sqrt_c * t_new).clamp_max(_KLEIN_MARGIN ** -0.5)
        w = weight if mask is None else weight * mask.to(weight.dtype)
        coeff = w * klein_radius / (w.sum(dim=1, keepdim=True).clamp_min(_NORM_FLOOR) * norm)
        midpoint = PoincareOps.from_klein(torch.einsum("bn,bnd->bd", coeff, u), c)
        out = {"pooled": PoincareOps.logmap0(midpoint, c, self.eps_ball),
               "curvature": curvature,
               "radius": 2.0 * t_new,
               "gate": g,
               "weight": weight}
        if return_points:
            out["ball"] = (ball_radius / norm).unsqueeze(-1) * u
            out["tangent"] = (t_new / norm).unsqueeze(-1) * u
        return out

CHR = CurvatureHyperbolicRectifier
