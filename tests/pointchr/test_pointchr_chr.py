"""The CHR module: the push rule against a direct computation, monotonicity, gradients, bad input."""

import math

import pytest
import torch

from icml26.pointchr import CurvatureHyperbolicRectifier, PoincareOps as P


def _inputs(b=2, n=32, d=8, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(b, n, 3, generator=gen, dtype=dtype), torch.randn(b, n, d, generator=gen, dtype=dtype),
            torch.rand(b, n, generator=gen, dtype=dtype))


def test_forward_matches_the_equations_step_by_step():
    xyz, feats, kappa = _inputs()
    m = CurvatureHyperbolicRectifier(8, hyp_dim=6, k=8, c=0.5).double()
    out = m(xyz, feats, kappa)
    u = m.proj(feats)
    u = u * torch.clamp(1.0 / u.norm(dim=-1, keepdim=True), max=1.0)
    t = u.norm(dim=-1)
    g = torch.sigmoid(10.0 * (kappa - 0.2))
    t_new = t + 0.5 * g * (3.0 - t)
    ball = P.expmap0(t_new[..., None] * u / t[..., None], 0.5)
    assert torch.allclose(out["ball"], ball, atol=1e-10)
    assert torch.allclose(out["radius"], 2 * t_new, atol=1e-10)
    assert torch.allclose(out["radius"], P.dist0(ball, 0.5), atol=1e-8)
    assert torch.allclose(out["weight"], P.lorentz_factor(out["ball"], 0.5), rtol=1e-8)
    assert torch.allclose(out["pooled"], P.logmap0(P.einstein_midpoint(ball, 0.5), 0.5), atol=1e-10)
    assert torch.allclose(out["tangent"], P.logmap0(ball, 0.5), atol=1e-8)


def test_radius_is_monotone_in_curvature_for_fixed_features():
    m = CurvatureHyperbolicRectifier(8, k=8).double()
    feats = torch.randn(1, 1, 8, dtype=torch.float64).expand(1, 50, 8)
    kappa = torch.linspace(0, 1, 50, dtype=torch.float64)[None]
    radius = m(torch.randn(1, 50, 3, dtype=torch.float64), feats, kappa)["radius"][0]
    assert bool((torch.diff(radius) >= 0).all()) and radius[-1] > radius[0] + 1.0


def test_curvature_is_estimated_when_not_passed_and_mask_is_respected():
    xyz, feats, _ = _inputs(n=40)
    m = CurvatureHyperbolicRectifier(8, k=8).double()
    from icml26.pointchr import surface_variation
    assert torch.allclose(m(xyz, feats)["curvature"], surface_variation(xyz, 8))
    mask = torch.arange(40)[None].expand(2, 40) < 30
    pooled = m(xyz, feats, mask=mask)["pooled"]
    kappa30 = surface_variation(xyz[:, :30], 8)
    assert torch.allclose(pooled, m(xyz[:, :30], feats[:, :30], kappa30)["pooled"], atol=1e-10)


def test_gradcheck_through_features_and_parameters():
    xyz, feats, kappa = _inputs(b=1, n=6, d=3)
    m = CurvatureHyperbolicRectifier(3, k=3, learn_c=True).double()
    assert torch.autograd.gradcheck(lambda f: m(xyz, f, kappa)["pooled"], (feats.requires_grad_(),))
    m(xyz, feats.detach(), kappa)["pooled"].sum().backward()
    for name in ("gate_slope_raw", "gate_threshold", "push_raw", "c_raw"):
        assert torch.isfinite(getattr(m, name).grad) and getattr(m, name).grad != 0, name


def test_float32_large_t_max_and_zero_features_stay_finite():
    xyz, feats, kappa = _inputs(dtype=torch.float32)
    feats[:, :4] = 0.0
    m = CurvatureHyperbolicRectifier(8, k=8, t_max=8.0, gamma_init=0.99, gate="mlp")
    feats.requires_grad_()
    out = m(xyz, feats, torch.ones_like(kappa))
    assert out["ball"].dtype == torch.float32
    assert all(torch.isfinite(v).all() for v in out.values())
    assert float(out["ball"].detach().norm(dim=-1).max()) <= 1.0
    out["pooled"].sum().backward()
    assert torch.isfinite(feats.grad).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"c": 0.0}, "c must be in"), ({"t_max": 1.0}, "t_max must be > t_clip"), ({"k": 2}, "k must be >= 3"),
    ({"gate": "relu"}, "gate must be one of"), ({"gamma_init": 1.0}, "gamma_init must be in"),
])
def test_bad_hyperparameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CurvatureHyperbolicRectifier(8, **kwargs)


def test_bad_inputs_raise_naming_the_argument():
    xyz, feats, kappa = _inputs()
    m = CurvatureHyperbolicRectifier(8, k=8).double()
    with pytest.raises(ValueError, match="xyz must have shape"):
        m(xyz[..., :2], feats, kappa)
    with pytest.raises(ValueError, match="feats must have shape"):
        m(xyz, feats[:, :5], kappa)
    with pytest.raises(ValueError, match="8 channels"):
        m(xyz, feats[..., :4], kappa)
    bad = feats.clone()
    bad[0, 0, 0] = math.nan
    with pytest.raises(ValueError, match="feats contains NaN"):
        m(xyz, bad, kappa)
    with pytest.raises(ValueError, match="curvature must have shape"):
        m(xyz, feats, kappa[:, :3])
    with pytest.raises(ValueError, match="at least k=8"):
        m(xyz[:, :5], feats[:, :5])
    with pytest.raises(ValueError, match="all points are identical"):
        m(torch.zeros_like(xyz), feats)


def test_float32_module_given_float64_features_raises_and_double_module_works():
    xyz, feats, kappa = _inputs()                      # float64, as torch.from_numpy gives
    m = CurvatureHyperbolicRectifier(8, hyp_dim=6, k=8)
    with pytest.raises(TypeError, match=r"feats has dtype torch.float64 .* torch.float32.*\.double\(\)"):
        m(xyz, feats, kappa)
    out = m.double()(xyz, feats, kappa)
    assert out["pooled"].dtype == torch.float64
    # float64 coordinates with float32 features are fine: xyz only feeds the curvature estimate
    assert m.float()(xyz, feats.float())["pooled"].dtype == torch.float32


def test_return_points_false_skips_the_point_tensors_only():
    xyz, feats, kappa = _inputs()
    m = CurvatureHyperbolicRectifier(8, hyp_dim=6, k=8).double()
    full, lean = m(xyz, feats, kappa), m(xyz, feats, kappa, return_points=False)
    assert set(full) - set(lean) == {"ball", "tangent"}
    for key in lean:
        assert torch.equal(full[key], lean[key]), key


def test_weights_are_cosh_of_the_radius_and_stay_finite_near_the_boundary():
    xyz, feats, kappa = _inputs(dtype=torch.float32)
    m = CurvatureHyperbolicRectifier(8, k=8, t_max=8.0, gamma_init=0.99)
    out = m(xyz, feats, torch.ones_like(kappa))
    expected = torch.cosh(out["radius"]).clamp_max(1e-5 ** -0.5)       # γ = cosh(√c ρ'), c = 1
    assert torch.allclose(out["weight"], expected, rtol=1e-5)
    assert float(out["weight"].detach().max()) == pytest.approx(316.2278, rel=1e-5)


def test_quantile_gate_rises_from_0_1_to_0_9_across_the_quantile_range():
    from icml26.pointchr import quantile_gate
    gen = torch.Generator().manual_seed(0)
    kappa = torch.rand(50, 200, generator=gen) ** 2
    gate = quantile_gate(kappa, 0.5, 0.9)
    low, high = torch.quantile(kappa.double().flatten(), torch.tensor([0.5, 0.9], dtype=torch.float64))
    assert gate["kappa_low"] == pytest.approx(float(low)) and gate["kappa_high"] == pytest.approx(float(high))
    m = CurvatureHyperbolicRectifier(4, a_init=gate["a_init"], b_init=gate["b_init"]).double()
    g = m.gate_values(torch.stack([low, high]), torch.ones(2, dtype=torch.float64))
    assert torch.allclose(g, torch.tensor([0.1, 0.9], dtype=torch.float64), atol=1e-6)


@pytest.mark.parametrize("args, match", [
    ((torch.zeros(100), 0.5, 0.9), "coincide"), ((torch.rand(10), 0.9, 0.5), "q_high must be > q_low"),
    ((torch.tensor([0.1, float("nan")]), 0.5, 0.9), "curvature contains NaN"),
    ((torch.zeros(0), 0.5, 0.9), "curvature is empty"), ((torch.rand(10), 0.5, 1.5), "q_high must be in"),
])
def test_quantile_gate_bad_inputs_raise(args, match):
    from icml26.pointchr import quantile_gate
    with pytest.raises(ValueError, match=match):
        quantile_gate(*args)
