"""Synthetic fine-detail point-cloud benchmarks and a loader for users' own shapes.

* :func:`make_fine_detail_dataset` — **FineDetail-8**: 4 rounded cubes (rounding radius
  ``r ∈ {0, 0.1, 0.2, 0.35}``) and 4 gear profiles (square / trapezoid / triangle / sine teeth).
  Classes within a family share the smooth bulk and differ in sparse high-curvature details;
  every point carries a ground-truth ``detail_mask``.
* :func:`make_coarse_dataset` — **Coarse-4**: rounded boxes (``r = 0.2``) of four aspect ratios:
  curvature statistics shared, global shape differs (a control where curvature must not help).
* :func:`load_point_cloud` — ``.off``/``.ply``/``.obj``/``.stl`` meshes (area-uniform samples via
  ``trimesh``), point-cloud ``.ply`` and ``.npy``/``.xyz``/``.txt`` arrays.

Sampling is exact and uniform by area and vectorised over clouds; nuisances: random rotation
about z, per-axis scale ``U(0.9, 1.1)``, Gaussian jitter, centring and scaling to the unit sphere.
These benchmarks are our construction (the paper's ModelNet40 / ScanObjectNN / ShapeNetPart are
not available offline).

References
----------
PointCHR: curvature-aware hyperbolic rectification for point cloud analysis (ICML 2026).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml26.core.validation import check_int, check_scalar_in

__all__ = ["make_fine_detail_dataset", "make_coarse_dataset", "load_point_cloud", "PointCloudSet",
           "CUBE_RADII", "GEAR_PROFILES", "COARSE_ASPECTS"]

CUBE_RADII = (0.0, 0.1, 0.2, 0.35)
GEAR_PROFILES = (("square", 0.02), ("trapezoid", 0.12), ("triangle", 0.25), ("sine", None))
COARSE_ASPECTS = ((1.0, 1.0, 1.0), (1.0, 1.0, 1.4), (1.0, 1.4, 1.4), (1.0, 1.4, 2.0))
GEAR_TEETH, GEAR_HEIGHT, GEAR_HALF_THICKNESS = 8, 0.3, 0.2
SHARP_EDGE_BAND = 0.05   # r = 0 cube: face points within this of an edge are "detail"
GEAR_DETAIL_RADIUS = 0.98
THETA_GRID = 20_001


@dataclass
class PointCloudSet:
    """Clouds ``points`` (M, N, 3), ``labels`` (M,), ``detail_mask`` (M, N), ``class_names``.

    References
    ----------
    *PointCHR: curvature-aware hyperbolic rectification for point cloud analysis*, ICML 2026
    (authors not retrievable): the FineDetail-8 and coarse worlds are ours, not from the paper.

    Examples
    --------
    >>> data = make_fine_detail_dataset(n_per_class=2, n_points=64, seed=0)
    >>> points, labels, detail, names = data
    >>> points.shape, labels.shape, detail.shape == points.shape[:2], len(names)
    ((16, 64, 3), (16,), True, 8)
    """

    points: np.ndarray
    labels: np.ndarray
    detail_mask: np.ndarray
    class_names: list

    def __iter__(self):  # so ``points, labels, detail, names = make_...(...)`` works
        return iter((self.points, self.labels, self.detail_mask, self.class_names))


def _rounded_box(rng, m: int, n: int, r: float, half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Area-uniform samples of the Minkowski sum of a box (half-sizes ``half - r``) and a ball ``r``.

    Returns points (m, n, 3) and the detail mask (points on rounded parts; for ``r = 0`` face
    points within ``SHARP_EDGE_BAND`` of an edge).
    """
    a = half - r                                         # inner box half-sizes per axis
    # components: 6 faces (axis ax, sign), 12 edges (axis ax, signs of the other two), 8 corners
    face_area = np.array([4 * a[(ax + 1) % 3] * a[(ax + 2) % 3] for ax in range(3)])
    edge_area = np.array([np.pi * r * a[ax] for ax in range(3)])   # quarter cylinder, length 2a
    areas = np.concatenate([np.repeat(face_area, 2), np.repeat(edge_area, 4),
                            np.full(8, np.pi * r * r / 2)])
    comp = rng.choice(areas.size, size=(m, n), p=areas / areas.sum())
    uni = rng.uniform(-1.0, 1.0, size=(m, n, 3))
    pts = np.zeros((m, n, 3))
    detail = np.zeros((m, n), dtype=bool)
    # faces
    for ax in range(3):
        for s, sign in enumerate((-1.0, 1.0)):
            sel = comp == 2 * ax + s
            q = uni[sel] * a
            q[:, ax] = sign * (a[ax] + r)
            pts[sel] = q
            if r == 0.0:
                o1, o2 = (ax + 1) % 3, (ax + 2) % 3
                near = ((a[o1] - np.abs(q[:, o1]) < SHARP_EDGE_BAND)
                        | (a[o2] - np.abs(q[:, o2]) < SHARP_EDGE_BAND))
                detail[sel] = near
    if r > 0.0:
        phi = rng.uniform(0.0, np.pi / 2, size=(m, n))
        for ax in range(3):
            o1, o2 = (ax + 1) % 3, (ax + 2) % 3
            for e, (s1, s2) in enumerate(((-1, -1), (-1, 1), (1, -1), (1, 1))):
                sel = comp == 6 + 4 * ax + e
                q = np.zeros((int(sel.sum()), 3))
                q[:, ax] = uni[sel][:, ax] * a[ax]
                q[:, o1] = s1 * (a[o1] + r * np.cos(phi[sel]))
                q[:, o2] = s2 * (a[o2] + r * np.sin(phi[sel]))
                pts[sel] = q
        direction = np.abs(rng.standard_normal((m, n, 3)))
        direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
        for o in range(8):
            sel = comp == 18 + o
            pts[sel] = signs[o] * (a + r * direction[sel])
        detail = comp >= 6
    return pts, detail


def _gear_profile(u: np.ndarray, ramp: float | None) -> np.ndarray:
    """Tooth profile ``f(u) ∈ [0, 1]`` over one period ``u ∈ [0, 1)``.

    *Resolution*: a symmetric trapezoid whose ramps (width ``ramp`` of the period) are centred at
    the half-height crossings ``|u - 1/2| = 1/4``, so every profile has the same mean radius;
    ``ramp=None`` is the sine ``(1 + sin 2πu)/2``.
    """
    if ramp is None:
        return 0.5 * (1.0 + np.sin(2 * np.pi * u))
    return np.clip(0.5 + (0.25 - np.abs(u - 0.5)) / ramp, 0.0, 1.0)


def _gear(rng, m: int, n: int, ramp: float | None) -> tuple[np.ndarray, np.ndarray]:
    theta = np.linspace(0.0, 2 * np.pi, THETA_GRID)
    radius = 1.0 + GEAR_HEIGHT * _gear_profile((GEAR_TEETH * theta / (2 * np.pi)) % 1.0, ramp)
    d_radius = np.gradient(radius, theta)
    speed = np.sqrt(radius ** 2 + d_radius ** 2)
    arc = np.concatenate([[0.0], np.cumsum(0.5 * (speed[1:] + speed[:-1]) * np.diff(theta))])
    side_area = arc[-1] * 2 * GEAR_HALF_THICKNESS
    cap_area = 0.5 * np.trapezoid(radius ** 2, theta)
    on_side = rng.random((m, n)) < side_area / (side_area + 2 * cap_area)
    pts = np.zeros((m, n, 3))
    # side wall: theta by inverse CDF of the arc length, z uniform
    k = int(on_side.sum())
    th = np.interp(rng.random(k) * arc[-1], arc, theta)
    rr = 1.0 + GEAR_HEIGHT * _gear_profile((GEAR_TEETH * th / (2 * np.pi)) % 1.0, ramp)
    pts[on_side] = np.column_stack([rr * np.cos(th), rr * np.sin(th),
                                    rng.uniform(-GEAR_HALF_THICKNESS, GEAR_HALF_THICKNESS, k)])
    # caps: rejection sampling in the disk of radius 1 + h
    need = int((~on_side).sum())
    caps, outer = [], 1.0 + GEAR_HEIGHT
    while sum(len(c) for c in caps) < need:
        batch = max(1024, 2 * need)
        rad = outer * np.sqrt(rng.random(batch))
        ang = rng.uniform(0.0, 2 * np.pi, batch)
        keep = rad <= 1.0 + GEAR_HEIGHT * _gear_profile((GEAR_TEETH * ang / (2 * np.pi)) % 1.0, ramp)
        caps.append(np.column_stack([rad[keep] * np.cos(ang[keep]), rad[keep] * np.sin(ang[keep])]))
    caps = np.concatenate(caps)[:need]
    z = np.where(rng.random(need) < 0.5, -GEAR_HALF_THICKNESS, GEAR_HALF_THICKNESS)
    pts[~on_side] = np.column_stack([caps, z])
    detail = np.linalg.norm(pts[..., :2], axis=-1) > GEAR_DETAIL_RADIUS
    return pts, detail


def _nuisances(rng, pts: np.ndarray, jitter: float) -> np.ndarray:
    m = pts.shape[0]
    ang = rng.uniform(0.0, 2 * np.pi, m)
    cos, sin = np.cos(ang), np.sin(ang)
    rot = np.zeros((m, 3, 3))
    rot[:, 0, 0], rot[:, 0, 1], rot[:, 1, 0], rot[:, 1, 1], rot[:, 2, 2] = cos, -sin, sin, cos, 1.0
    pts = np.einsum("mij,mnj->mni", rot, pts) * rng.uniform(0.9, 1.1, size=(m, 1, 3))
    pts = pts + rng.normal(0.0, jitter, size=pts.shape)
    pts = pts - pts.mean(axis=1, keepdims=True)
    return pts / np.linalg.norm(pts, axis=-1).max(axis=1)[:, None, None]


def _check_common(n_per_class, n_points, jitter, seed):
    check_int(n_per_class, "n_per_class", min_value=1)
    check_int(n_points, "n_points", min_value=16)
    check_scalar_in(jitter, "jitter", low=0.0, high=0.1)
    check_int(seed, "seed", min_value=0)


def make_fine_detail_dataset(n_per_class: int = 150, n_points: int = 512,
                             families=("rounded_cube", "gear"), jitter: float = 0.01,
                             seed: int = 0, gear_points: int | None = None) -> PointCloudSet:
    """FineDetail-8: classes that share the smooth bulk and differ in sparse high-curvature details.

    Parameters
    ----------
    n_per_class : int
        Clouds per class.
    n_points : int
        Points per cloud (both families unless ``gear_points`` is given).
    families : tuple of {"rounded_cube", "gear"}
        Which families to include (4 classes each).
    jitter : float
        Gaussian jitter σ added after rotation and scaling.
    seed : int
        Seed of the whole data set.
    gear_points : int, optional
        Points per gear cloud (must equal ``n_points`` so clouds stack; kept for explicitness).

    Returns
    -------
    PointCloudSet
        ``points`` (M, N, 3) float32 in the unit sphere, ``labels`` (M,), ``detail_mask`` (M, N),
        ``class_names``; unpacks as ``points, labels, detail_mask, class_names``.

    Examples
    --------
    >>> pts, y, detail, names = make_fine_detail_dataset(n_per_class=2, n_points=64, seed=0)
    >>> pts.shape, y.shape, names[0], names[4]
    ((16, 64, 3), (16,), 'cube_r0.00', 'gear_square')
    """
    _check_common(n_per_class, n_points, jitter, seed)
    families = tuple(families)
    for fam in families:
        if fam not in ("rounded_cube", "gear"):
            raise ValueError(f"families must contain 'rounded_cube' and/or 'gear', got {fam!r}")
    if not families:
        raise ValueError("families is empty; expected 'rounded_cube' and/or 'gear'")
    if gear_points is not None and gear_points != n_points:
        raise ValueError(f"gear_points must equal n_points ({n_points}) so clouds stack, got {gear_points}")
    rng = np.random.default_rng(seed)
    clouds, details, labels, names = [], [], [], []
    for fam in families:
        specs = ([(f"cube_r{r:.2f}", r) for r in CUBE_RADII] if fam == "rounded_cube"
                 else [(f"gear_{name}", ramp) for name, ramp in GEAR_PROFILES])
        for name, param in specs:
            if fam == "rounded_cube":
                pts, det = _rounded_box(rng, n_per_class, n_points, param, np.ones(3))
            else:
                pts, det = _gear(rng, n_per_class, n_points, param)
            clouds.append(_nuisances(rng, pts, jitter))
            details.append(det)
            labels.append(np.full(n_per_class, len(names)))
            names.append(name)
    return PointCloudSet(np.concatenate(clouds).astype(np.float32), np.concatenate(labels),
                         np.concatenate(details), names)


def make_coarse_dataset(n_per_class: int = 150, n_points: int = 512, jitter: float = 0.01,
                        seed: int = 0, radius: float = 0.2) -> PointCloudSet:
    """Coarse-4: rounded boxes (fixed rounding ``radius``) of aspect ratios 1:1:1, 1:1:1.4,
    1:1.4:1.4, 1:1.4:2 — same local curvature, different global shape.

    Examples
    --------
    >>> pts, y, detail, names = make_coarse_dataset(n_per_class=2, n_points=64)
    >>> pts.shape, names
    ((8, 64, 3), ['box_1:1:1', 'box_1:1:1.4', 'box_1:1.4:1.4', 'box_1:1.4:2'])
    """
    _check_common(n_per_class, n_points, jitter, seed)
    radius = check_scalar_in(radius, "radius", low=0.0, high=1.0, high_inclusive=False)
    rng = np.random.default_rng(seed)
    clouds, details, labels, names = [], [], [], []
    for i, aspect in enumerate(COARSE_ASPECTS):
        pts, det = _rounded_box(rng, n_per_class, n_points, radius, np.asarray(aspect))
        clouds.append(_nuisances(rng, pts, jitter))
        details.append(det)
        labels.append(np.full(n_per_class, i))
        names.append("box_" + ":".join(f"{v:g}" for v in aspect))
    return PointCloudSet(np.concatenate(clouds).astype(np.float32), np.concatenate(labels),
                         np.concatenate(details), names)


def load_point_cloud(path, n_points: int = 1024, seed: int = 0, normalize: bool = True) -> np.ndarray:
    """Read one shape as an ``(n_points, 3)`` float32 cloud.

    Parameters
    ----------
    path : str or Path
        ``.npy`` (an ``(N, ≥3)`` array), ``.xyz``/``.txt`` (whitespace columns x y z ...), or a
        mesh / point cloud that ``trimesh`` reads (``.off``, ``.ply``, ``.obj``, ``.stl``).
        Meshes are sampled uniformly by area; point sets are subsampled (or resampled with
        replacement when they have fewer than ``n_points`` points).
    n_points : int
        Points to return.
    seed : int
        Seed of the sampling.
    normalize : bool
        Centre and scale to the unit sphere (as the synthetic benchmarks are).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "cloud.npy")
    >>> np.save(path, np.random.default_rng(0).normal(size=(100, 3)))
    >>> load_point_cloud(path, n_points=32).shape
    (32, 3)
    """
    path = Path(path)
    n_points = check_int(n_points, "n_points", min_value=1)
    if not path.is_file():
        raise FileNotFoundError(f"path {str(path)!r} does not exist")
    rng = np.random.default_rng(seed)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        arr = np.load(path, allow_pickle=False)
    elif suffix in (".xyz", ".txt"):
        arr = np.loadtxt(path, ndmin=2)
    else:
        import trimesh

        geom = trimesh.load(path, force=None)
        if isinstance(geom, trimesh.Scene):
            geom = geom.to_mesh() if hasattr(geom, "to_mesh") else geom.dump(concatenate=True)
        if isinstance(geom, trimesh.Trimesh) and len(geom.faces) > 0:
            arr, _ = trimesh.sample.sample_surface(geom, n_points, seed=int(seed))
        elif hasattr(geom, "vertices"):
            arr = np.asarray(geom.vertices)
        else:
            raise ValueError(f"path {str(path)!r}: trimesh read a {type(geom).__name__}, "
                             "expected a mesh or a point cloud")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] < 3 or arr.shape[0] == 0:
        raise ValueError(f"path {str(path)!r}: expected an (N, 3) point array, got shape {arr.shape}")
    arr = arr[:, :3]
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"path {str(path)!r} contains NaN or infinite coordinates")
    if arr.shape[0] != n_points:
        arr = arr[rng.choice(arr.shape[0], n_points, replace=arr.shape[0] < n_points)]
    if normalize:
        arr = arr - arr.mean(axis=0)
        scale = np.linalg.norm(arr, axis=1).max()
        if scale <= 0:
            raise ValueError(f"path {str(path)!r}: all points are identical")
        arr = arr / scale
    return arr.astype(np.float32)
