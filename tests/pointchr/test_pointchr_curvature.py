"""Surface variation against a direct per-point computation, its invariances, and bad input."""

import numpy as np
import pytest
import torch

from icml26.pointchr import knn_indices, surface_variation


def _cloud(n=200, seed=0, dtype=torch.float64):
    return torch.randn(1, n, 3, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def test_matches_a_direct_numpy_loop():
    pts = _cloud(60)[0].numpy()
    expected = []
    for p in pts:
        nbrs = pts[np.argsort(np.linalg.norm(pts - p, axis=1))[:10]]
        lam = np.linalg.eigvalsh(np.cov(nbrs.T, bias=True))
        expected.append(3 * lam[0] / lam.sum())
    got = surface_variation(torch.from_numpy(pts)[None], k=10)[0].numpy()
    assert np.allclose(got, expected, atol=1e-10)


def test_plane_is_zero_and_cube_corner_is_high():
    g = torch.linspace(-1, 1, 20, dtype=torch.float64)
    plane = torch.stack(torch.meshgrid(g, g, indexing="ij") + (torch.zeros(20, 20, dtype=torch.float64),), -1)
    assert surface_variation(plane.reshape(1, -1, 3)).abs().max() < 1e-8
    u = torch.linspace(0, 1, 8, dtype=torch.float64)
    a, b = [t.reshape(-1) for t in torch.meshgrid(u, u, indexing="ij")]
    one = torch.ones_like(a)
    corner = torch.cat([torch.stack(f, -1) for f in ((one, a, b), (a, one, b), (a, b, one))])
    corner = torch.unique(corner, dim=0)
    idx = int(((corner - 1).abs().sum(-1) == 0).nonzero()[0, 0])
    assert surface_variation(corner[None], k=16)[0, idx] > 0.3


def test_invariant_to_rotation_translation_and_scale():
    pts = _cloud(300)
    q, _ = torch.linalg.qr(torch.randn(3, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64))
    base = surface_variation(pts)
    assert torch.allclose(surface_variation(pts @ q.T + 5.0), base, atol=1e-4)
    assert torch.allclose(surface_variation(pts * 0.01), base, atol=1e-4)
    assert torch.allclose(surface_variation(pts.float() * 30.0).double(), base, atol=1e-4)


def test_range_dtype_and_duplicates_give_zero_not_nan():
    pts = _cloud(100)
    pts[0, :20] = pts[0, 0]            # 20 duplicates of one point: a degenerate neighbourhood
    kappa = surface_variation(pts, k=16)
    assert kappa.dtype == torch.float64 and torch.isfinite(kappa).all()
    assert float(kappa.min()) >= 0 and float(kappa.max()) <= 1
    assert float(kappa[0, 0]) == 0.0


def test_mask_excludes_padded_points():
    pts = _cloud(80)
    padded = torch.cat([pts, torch.full((1, 20, 3), 100.0, dtype=torch.float64)], 1)
    mask = torch.arange(100)[None] < 80
    got = surface_variation(padded, mask=mask)
    assert torch.allclose(got[:, :80], surface_variation(pts), atol=1e-12)
    assert float(got[:, 80:].abs().max()) == 0.0
    assert bool((knn_indices(padded, 16, mask) < 80).all())


@pytest.mark.parametrize("points, match", [
    (torch.zeros(10, 3), "points must have ndim"),
    (torch.zeros(1, 10, 2), r"\(B, N, 3\)"),
    (torch.full((1, 20, 3), float("nan")), "NaN"),
    (torch.randn(1, 8, 3), "at least k=16"),
    (torch.ones(1, 32, 3), "all points are identical"),
])
def test_bad_points_raise_naming_the_argument(points, match):
    with pytest.raises(ValueError, match=match):
        surface_variation(points)


def test_k_below_three_raises():
    with pytest.raises(ValueError, match="k must be >= 3"):
        surface_variation(_cloud(), k=2)
