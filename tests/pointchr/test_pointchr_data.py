"""Generators (geometry, ground truth, determinism), the file loader, backbones and the classifier."""

import numpy as np
import pytest
import torch
from sklearn.base import clone

from icml26.pointchr import (DGCNNLite, HyCoReLite, PointCHRClassifier, PointNet2Lite, PointNetLite,
                             load_point_cloud, make_coarse_dataset, make_fine_detail_dataset,
                             surface_variation)
from icml26.pointchr.data import _gear, _gear_profile, _rounded_box


def test_rounded_box_samples_lie_on_the_surface():
    rng = np.random.default_rng(0)
    for r in (0.0, 0.1, 0.35):
        pts, detail = _rounded_box(rng, 3, 2000, r, np.ones(3))
        # distance from the inner cube [-(1-r), 1-r]^3 is exactly r on the Minkowski sum's surface
        outside = np.maximum(np.abs(pts) - (1 - r), 0.0)
        dist = np.linalg.norm(outside, axis=-1)
        assert np.allclose(dist, r, atol=1e-9) if r > 0 else np.allclose(np.abs(pts).max(-1), 1.0)
        assert 0 < detail.mean() < 1


def test_rounded_box_is_area_uniform():
    rng = np.random.default_rng(1)
    r, a = 0.2, 0.8
    pts, detail = _rounded_box(rng, 1, 200_000, r, np.ones(3))
    expected = (12 * np.pi * r * a + 4 * np.pi * r * r) / (24 * a * a + 12 * np.pi * r * a + 4 * np.pi * r * r)
    assert abs(detail.mean() - expected) < 0.005


def test_gear_points_are_on_side_wall_or_caps():
    rng = np.random.default_rng(2)
    pts, detail = _gear(rng, 2, 3000, 0.12)
    theta = np.arctan2(pts[..., 1], pts[..., 0]) % (2 * np.pi)
    boundary = 1 + 0.3 * _gear_profile((8 * theta / (2 * np.pi)) % 1.0, 0.12)
    rad = np.linalg.norm(pts[..., :2], axis=-1)
    on_cap = np.isclose(np.abs(pts[..., 2]), 0.2)
    assert np.all(rad[on_cap] <= boundary[on_cap] + 1e-9)
    assert np.allclose(rad[~on_cap], boundary[~on_cap], atol=1e-3)
    assert np.array_equal(detail, rad > 0.98)


def test_datasets_are_deterministic_normalised_and_labelled():
    a = make_fine_detail_dataset(n_per_class=3, n_points=64, jitter=0.005, seed=4)
    b = make_fine_detail_dataset(n_per_class=3, n_points=64, jitter=0.005, seed=4)
    assert np.array_equal(a.points, b.points) and np.array_equal(a.detail_mask, b.detail_mask)
    assert a.points.shape == (24, 64, 3) and a.points.dtype == np.float32
    assert np.allclose(np.linalg.norm(a.points, axis=-1).max(axis=1), 1.0, atol=1e-6)
    assert list(np.bincount(a.labels)) == [3] * 8 and len(a.class_names) == 8
    c = make_coarse_dataset(n_per_class=2, n_points=64, seed=4)
    assert c.points.shape == (8, 64, 3) and len(set(c.class_names)) == 4


@pytest.mark.parametrize("kwargs, match", [
    ({"n_per_class": 0}, "n_per_class"), ({"n_points": 4}, "n_points"), ({"jitter": -1.0}, "jitter"),
    ({"families": ("sphere",)}, "families"),
])
def test_generator_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_fine_detail_dataset(**kwargs)


def test_loader_reads_off_ply_npy_and_xyz(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    box = trimesh.creation.box(extents=(1.0, 2.0, 3.0))
    for ext in ("off", "ply"):
        path = tmp_path / f"box.{ext}"
        box.export(path)
        pts = load_point_cloud(path, n_points=256, seed=0)
        assert pts.shape == (256, 3) and np.isclose(np.linalg.norm(pts, axis=1).max(), 1.0)
        raw = load_point_cloud(path, n_points=256, normalize=False)
        assert np.allclose(np.abs(raw).max(axis=0), [0.5, 1.0, 1.5], atol=1e-6)
    arr = np.random.default_rng(0).normal(size=(50, 3))
    np.save(tmp_path / "c.npy", arr)
    np.savetxt(tmp_path / "c.xyz", arr)
    assert load_point_cloud(tmp_path / "c.npy", n_points=80).shape == (80, 3)
    same = load_point_cloud(tmp_path / "c.xyz", n_points=50, normalize=False)   # all 50 points, reordered
    assert np.allclose(np.sort(same[:, 0]), np.sort(arr[:, 0]), atol=1e-5)


def test_loader_bad_files_raise(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_point_cloud(tmp_path / "missing.off")
    np.save(tmp_path / "bad.npy", np.array([[np.nan, 0.0, 0.0]] * 4))
    with pytest.raises(ValueError, match="NaN"):
        load_point_cloud(tmp_path / "bad.npy")
    np.save(tmp_path / "flat.npy", np.zeros((5, 2)))
    with pytest.raises(ValueError, match=r"expected an \(N, 3\)"):
        load_point_cloud(tmp_path / "flat.npy")


@pytest.mark.parametrize("net", [PointNetLite(4, use_chr=True, chr_stage="all", k=8),
                                 PointNetLite(4, curvature_feature=True, k=8),
                                 DGCNNLite(4, use_chr=True, k=8), HyCoReLite(4),
                                 PointNet2Lite(4, use_chr=True, k=8, centroids=(16, 8), nsample=8)])
def test_backbones_forward_backward_and_keep_float64(net):
    xyz = torch.randn(3, 40, 3, dtype=torch.float64, requires_grad=True)
    net = net.double()
    logits = net(xyz)
    assert logits.shape == (3, 4) and logits.dtype == torch.float64
    logits.sum().backward()
    assert torch.isfinite(xyz.grad).all()


def test_fps_spreads_points_and_ball_query_stays_in_radius():
    from icml26.pointchr.baselines import ball_query, farthest_point_sample
    line = torch.linspace(0, 1, 101, dtype=torch.float64)
    xyz = torch.stack([line, torch.zeros_like(line), torch.zeros_like(line)], -1)[None]
    assert sorted(farthest_point_sample(xyz, 3)[0].tolist()) == [0, 50, 100]
    group = ball_query(xyz, xyz[:, [0, 50]], radius=0.055, nsample=8)
    dist = (xyz[0, group[0]] - xyz[0, [0, 50]][:, None]).norm(dim=-1)
    assert float(dist.max()) <= 0.055 and group.shape == (1, 2, 8)


def test_backbone_rejects_wrong_shape_and_curvature():
    net = PointNetLite(4, use_chr=True, k=8)
    with pytest.raises(ValueError, match=r"\(B, N, 3\)"):
        net(torch.randn(2, 40, 4))
    with pytest.raises(ValueError, match="curvature must have shape"):
        net(torch.randn(2, 40, 3), torch.rand(2, 39))


def test_classifier_fit_predict_clone_and_determinism():
    X, y, _, _ = make_fine_detail_dataset(n_per_class=3, n_points=48, families=("rounded_cube",), seed=1)
    clf = PointCHRClassifier(epochs=1, k=8, random_state=3).fit(X, y)
    again = clone(clf).fit(X, y)
    assert np.allclose(clf.predict_proba(X), again.predict_proba(X), atol=1e-6)
    assert set(clf.predict(X)) <= set(y) and 0.0 <= clf.score(X, y) <= 1.0
    assert clone(clf).get_params()["variant"] == "chr"


def test_classifier_fit_leaves_the_callers_torch_rng_untouched():
    X, y, _, _ = make_fine_detail_dataset(n_per_class=3, n_points=48, families=("rounded_cube",), seed=1)
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    PointCHRClassifier(epochs=1, k=8, random_state=3).fit(X, y)
    assert torch.equal(torch.get_rng_state(), state)


def test_classifier_bad_input_raises():
    X, y, _, _ = make_fine_detail_dataset(n_per_class=2, n_points=32, families=("rounded_cube",))
    with pytest.raises(ValueError, match="X must be 3-dimensional"):
        PointCHRClassifier(k=8).fit(X[:, :, 0], y)
    with pytest.raises(ValueError, match="one per cloud"):
        PointCHRClassifier(k=8).fit(X, y[:-1])
    bad = X.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        PointCHRClassifier(k=8).fit(bad, y)
    with pytest.raises(ValueError, match="at least k=16"):
        PointCHRClassifier(k=16).fit(X[:, :10], y)
    with pytest.raises(ValueError, match="variant must be one of"):
        PointCHRClassifier(variant="x").fit(X, y)


@pytest.mark.parametrize("net", [PointNetLite(4, use_chr=True, k=8), DGCNNLite(4, k=8), HyCoReLite(4),
                                 PointNet2Lite(4, k=8, centroids=(16, 8), nsample=8)])
def test_float32_backbone_given_float64_clouds_raises_naming_xyz(net):
    xyz = torch.from_numpy(np.random.default_rng(0).normal(size=(2, 40, 3)))   # float64, as numpy gives
    with pytest.raises(TypeError, match=r"xyz has dtype torch.float64 .* parameters are torch.float32.*\.double\(\)"):
        net(xyz)


def test_classifier_gate_rule_initialises_the_gate_from_training_curvature_or_the_spec():
    from torch.nn.functional import softplus

    from icml26.pointchr.chr import quantile_gate
    X, y, _, _ = make_fine_detail_dataset(n_per_class=3, n_points=48, families=("rounded_cube",), seed=1)
    # lr ~ 0: the trained gate is its initialisation
    rule = PointCHRClassifier(epochs=1, k=8, lr=1e-12).fit(X, y)
    expected = quantile_gate(surface_variation(torch.from_numpy(X.astype(np.float32)), 8))
    gate = rule.model_.chr_pool
    assert float(gate.gate_threshold) == pytest.approx(expected["b_init"], rel=1e-5)
    assert float(softplus(gate.gate_slope_raw)) == pytest.approx(expected["a_init"], rel=1e-5)
    spec = PointCHRClassifier(epochs=1, k=8, lr=1e-12, gate_rule="spec").fit(X, y).model_.chr_pool
    assert float(spec.gate_threshold) == pytest.approx(0.2) and float(softplus(spec.gate_slope_raw)) == pytest.approx(10.0)
    with pytest.raises(ValueError, match="gate_rule must be one of"):
        PointCHRClassifier(k=8, gate_rule="median").fit(X, y)
