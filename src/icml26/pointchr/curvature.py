"""Per-point curvature of point clouds: k-NN PCA surface variation (Pauly et al., 2002).

*Resolution (not from the paper)*: PointCHR's abstract says the rectification is guided by local
curvature but not how it is estimated; we use the surface variation of the ``k`` nearest
neighbours, normalised to ``[0, 1]``.

References
----------
Pauly, Gross, Kobbelt. Efficient simplification of point-sampled surfaces. IEEE Visualization 2002.
PointCHR: curvature-aware hyperbolic rectification for point cloud analysis (ICML 2026).
"""

from __future__ import annotations

import torch

from icml26.core.validation import check_int, check_tensor

__all__ = ["surface_variation", "knn_indices", "check_points", "check_finite", "check_module_dtype",
           "check_curvature"]

_DEGENERATE_TRACE = 1e-12   # covariance trace below this: a degenerate neighbourhood, κ = 0
_IDENTICAL_EXTENT = 1e-12   # a cloud whose points all lie within this of each other is rejected


def check_finite(tensor: torch.Tensor, name: str) -> torch.Tensor:
    """Raise ``ValueError`` naming ``name`` if a float tensor holds NaN/Inf.

    Fast path: the sum of a tensor is finite when every entry is (one reduction instead of an
    element-wise ``isfinite`` pass, which cost more than CHR itself); only a non-finite sum (a NaN,
    an Inf, or an overflow) triggers the exact check.
    """
    if tensor.is_floating_point() and not bool(torch.isfinite(tensor.sum())):
        if not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return tensor


def check_curvature(curvature, xyz: torch.Tensor, name: str = "curvature") -> torch.Tensor:
    """Validate a per-point curvature: a finite real float tensor of shape ``xyz.shape[:2]``."""
    check_tensor(curvature, name, ndim=2, finite=False)
    if not curvature.is_floating_point():
        raise TypeError(f"{name} must be a real floating-point tensor, got {curvature.dtype}")
    check_finite(curvature, name)
    if curvature.shape != xyz.shape[:2]:
        raise ValueError(f"{name} must have shape {tuple(xyz.shape[:2])} (the first two axes of xyz), "
                         f"got {tuple(curvature.shape)}")
    return curvature


def check_module_dtype(module: torch.nn.Module, tensor: torch.Tensor, name: str) -> torch.Tensor:
    """Raise ``TypeError`` naming ``name`` if ``tensor``'s dtype differs from ``module``'s parameters.

    A torch module computes in the dtype of its parameters and never casts its inputs: convert
    the module (``module.double()``) or the input (``tensor.float()``). Without this check a
    float64 tensor (what ``torch.from_numpy`` gives) fails deep inside ``nn.Linear``. Skipped
    under ``torch.autocast``, which casts inputs itself.
    """
    param = next((p for p in module.parameters() if p.is_floating_point()), None)
    if param is None or tensor.dtype == param.dtype or torch.is_autocast_enabled(tensor.device.type):
        return tensor
    convert = {torch.float64: ".double()", torch.float32: ".float()", torch.float16: ".half()",
               torch.bfloat16: ".bfloat16()"}.get(tensor.dtype, f".to({tensor.dtype})")
    raise TypeError(f"{name} has dtype {tensor.dtype} but {type(module).__name__}'s parameters are "
                    f"{param.dtype}; convert the module ({type(module).__name__}(...){convert}) or pass "
                    f"{name}.to({param.dtype})")


def check_points(points, name: str = "xyz", *, k: int | None = None,
                 mask: torch.Tensor | None = None) -> torch.Tensor:
    """Validate a batch of clouds: a finite float tensor ``(B, N, 3)`` with ``N >= k`` points.

    Raises ``ValueError`` naming ``name`` for a wrong shape, NaN/Inf, too few points, or a cloud
    whose points are all identical (no geometry to estimate curvature from).
    """
    check_tensor(points, name, ndim=3, finite=False)
    check_finite(points, name)
    if not points.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {points.dtype}")
    if points.shape[-1] != 3:
        raise ValueError(f"{name} must have shape (B, N, 3), got {tuple(points.shape)}")
    if points.shape[0] == 0 or points.shape[1] == 0:
        raise ValueError(f"{name} is empty, got shape {tuple(points.shape)}")
    if mask is not None:
        check_tensor(mask, "mask", ndim=2, finite=False)
        if mask.dtype != torch.bool or mask.shape != points.shape[:2]:
            raise ValueError(f"mask must be a bool tensor of shape {tuple(points.shape[:2])}, "
                             f"got {mask.dtype} {tuple(mask.shape)}")
    counts = (mask.sum(dim=1) if mask is not None
              else torch.full((points.shape[0],), points.shape[1], device=points.device))
    if k is not None and int(counts.min()) < k:
        raise ValueError(f"{name} has a cloud with {int(counts.min())} points; expected at least "
                         f"k={k} (lower k or pass larger clouds)")
    valid = mask if mask is not None else torch.ones(points.shape[:2], dtype=torch.bool,
                                                      device=points.device)
    big = torch.finfo(points.dtype).max
    low = torch.where(valid[..., None], points, big).amin(dim=1)
    high = torch.where(valid[..., None], points, -big).amax(dim=1)
    extent = (high - low).amax(dim=1)
    if bool((extent <= _IDENTICAL_EXTENT).any()):
        bad = int(torch.nonzero(extent <= _IDENTICAL_EXTENT)[0, 0])
        raise ValueError(f"{name}[{bad}]: all points are identical; a cloud needs spatial extent")
    return points


def knn_indices(points: torch.Tensor, k: int, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Indices ``(B, N, k)`` of each point's ``k`` nearest neighbours (itself included), brute force.

    Masked-out (padded) points are never chosen as neighbours.
    """
    dist = torch.cdist(points, points)                       # (B, N, N)
    if mask is not None:
        dist = dist.masked_fill(~mask[:, None, :], float("inf"))
    return dist.topk(k, dim=-1, largest=False).indices


@torch.no_grad()
def surface_variation(points: torch.Tensor, k: int = 16, mask: torch.Tensor | None = None,
                      chunk: int = 64) -> torch.Tensor:
    """Normalised surface variation ``κ ∈ [0, 1]`` of every point.

    Parameters
    ----------
    points : Tensor
        Clouds ``(B, N, 3)``, finite, float32 or float64.
    k : int
        Neighbourhood size (including the point itself), ``3 <= k <= N``.
    mask : Tensor of bool, optional
        ``(B, N)``, ``True`` for real points; padded points get ``κ = 0`` and are never neighbours.
    chunk : int
        Clouds per batched ``cdist`` call (bounds memory at ``chunk·N²`` floats).

    Returns
    -------
    Tensor
        ``(B, N)`` in ``[0, 1]``, same dtype and device as ``points``; no gradient.

    Notes
    -----
    With ``Σ_i`` the covariance of the k-NN set and eigenvalues ``λ1 ≥ λ2 ≥ λ3 ≥ 0``,
    ``σ_i = λ3 / (λ1 + λ2 + λ3) ∈ [0, 1/3]`` and ``κ_i = 3 σ_i``: 0 on a plane, larger on edges,
    corners and tips; invariant to rotation, translation and uniform scaling. Degenerate
    neighbourhoods (duplicates, collinear points: trace < 1e-12) get ``κ = 0``.

    Examples
    --------
    >>> import torch
    >>> g = torch.linspace(-1, 1, 8)
    >>> plane = torch.stack(torch.meshgrid(g, g, indexing="ij") + (torch.zeros(8, 8),), -1)
    >>> float(surface_variation(plane.reshape(1, 64, 3)).max()) < 1e-5
    True
    """
    k = check_int(k, "k", min_value=3)
    chunk = check_int(chunk, "chunk", min_value=1)
    check_points(points, "points", k=k, mask=mask)
    out = []
    for start in range(0, points.shape[0], chunk):
        p = points[start:start + chunk]
        m = None if mask is None else mask[start:start + chunk]
        idx = knn_indices(p, k, m)                            # (b, N, k)
        b, n = idx.shape[:2]
        nbrs = p[torch.arange(b, device=p.device)[:, None, None], idx]   # (b, N, k, 3)
        centred = nbrs - nbrs.mean(dim=2, keepdim=True)
        cov = centred.transpose(-1, -2) @ centred / k          # (b, N, 3, 3)
        eig = torch.linalg.eigvalsh(cov).clamp_min(0.0)        # ascending
        trace = eig.sum(dim=-1)
        kappa = torch.where(trace > _DEGENERATE_TRACE, 3.0 * eig[..., 0] / trace.clamp_min(
            _DEGENERATE_TRACE), torch.zeros_like(trace))
        if m is not None:
            kappa = kappa * m.to(kappa.dtype)
        out.append(kappa.clamp(0.0, 1.0))
    return torch.cat(out, dim=0)
