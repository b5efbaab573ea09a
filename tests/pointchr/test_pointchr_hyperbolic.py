"""Poincaré maps, Klein conversion and the Einstein midpoint against direct computations and geoopt."""

import math

import pytest
import torch

from icml26.pointchr import PoincareOps as P


def _vectors(n=500, dim=16, max_norm=3.0, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    v = torch.randn(n, dim, generator=gen, dtype=dtype)
    return v / v.norm(dim=-1, keepdim=True) * torch.rand(n, 1, generator=gen, dtype=dtype) * max_norm


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
def test_maps_match_the_closed_forms(c):
    v = _vectors(max_norm=2.0)
    n = v.norm(dim=-1, keepdim=True)
    x = P.expmap0(v, c)
    assert torch.allclose(x, torch.tanh(math.sqrt(c) * n) * v / (math.sqrt(c) * n), atol=1e-12)
    xn = x.norm(dim=-1, keepdim=True)
    assert torch.allclose(P.logmap0(x, c), torch.atanh(math.sqrt(c) * xn) * x / (math.sqrt(c) * xn),
                          atol=1e-9)
    assert torch.allclose(P.dist0(x, c), 2.0 * n.squeeze(-1), atol=1e-8)   # radius = 2|v|


def test_maps_agree_with_geoopt():
    geoopt = pytest.importorskip("geoopt")
    v = _vectors(max_norm=2.5)
    ball = geoopt.PoincareBall(c=torch.tensor(0.7, dtype=torch.float64))
    x = P.expmap0(v, 0.7)
    assert torch.allclose(x, ball.expmap0(v), atol=1e-12)
    assert torch.allclose(P.logmap0(x, 0.7), ball.logmap0(x), atol=1e-10)
    assert torch.allclose(P.dist0(x, 0.7), ball.dist0(x), atol=1e-10)


def test_float32_round_trip_below_1e5_up_to_t_max():
    v = _vectors(n=20000, dim=64, max_norm=3.0, dtype=torch.float32)
    err = (P.logmap0(P.expmap0(v)) - v).abs().max()
    assert err < 1e-5
    assert P.expmap0(v).dtype == torch.float32


def test_projection_keeps_points_inside_and_finite_for_large_tangent():
    v = _vectors(max_norm=8.0, dtype=torch.float32)
    x = P.expmap0(v, 1.0)
    assert bool((x.norm(dim=-1) <= 1 - 1e-5 + 1e-7).all())
    assert torch.isfinite(P.logmap0(x)).all() and torch.isfinite(P.lorentz_factor(x)).all()


def test_klein_round_trip_and_lorentz_factor_is_cosh_of_distance():
    x = P.expmap0(_vectors(max_norm=2.0), 1.3)
    assert torch.allclose(P.from_klein(P.to_klein(x, 1.3), 1.3), x, atol=1e-10)
    expected = torch.cosh(math.sqrt(1.3) * P.dist0(x, 1.3))
    assert torch.allclose(P.lorentz_factor(x, 1.3), expected, rtol=1e-8)


def test_midpoint_of_identical_points_is_that_point_and_order_invariant():
    x = P.expmap0(_vectors(n=40, dim=5, max_norm=2.0)).reshape(2, 20, 5)
    same = x[:, :1].expand(2, 20, 5)
    assert torch.allclose(P.einstein_midpoint(same), x[:, 0], atol=1e-12)
    perm = torch.randperm(20, generator=torch.Generator().manual_seed(1))
    assert torch.allclose(P.einstein_midpoint(x), P.einstein_midpoint(x[:, perm]), atol=1e-12)


def test_midpoint_matches_direct_klein_average_and_mask_drops_points():
    x = P.expmap0(_vectors(n=6, dim=3, max_norm=1.5))[None]
    k = 2 * x / (1 + (x * x).sum(-1, keepdim=True))
    gamma = 1 / torch.sqrt(1 - (k * k).sum(-1, keepdim=True))
    mk = (gamma * k).sum(1) / gamma.sum(1)
    direct = mk / (1 + torch.sqrt(1 - (mk * mk).sum(-1, keepdim=True)))
    assert torch.allclose(P.einstein_midpoint(x), direct, atol=1e-12)
    mask = torch.tensor([[True, True, True, False, False, False]])
    assert torch.allclose(P.einstein_midpoint(x, mask=mask), P.einstein_midpoint(x[:, :3]), atol=1e-12)
    # two antipodal points meet at the origin
    pair = torch.stack([x[0, 0], -x[0, 0]])[None]
    assert torch.allclose(P.einstein_midpoint(pair), torch.zeros(1, 3, dtype=torch.float64), atol=1e-12)


def test_gradcheck_maps_and_midpoint():
    v = (_vectors(n=4, dim=3, max_norm=1.5)).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: P.logmap0(P.expmap0(t, 0.8) * 0.9, 0.8), (v,))
    x = (P.expmap0(_vectors(n=5, dim=3, max_norm=1.5))[None]).detach().requires_grad_()
    assert torch.autograd.gradcheck(lambda t: P.einstein_midpoint(t, 1.0), (x,))


def test_zero_vector_maps_to_origin_with_finite_identity_gradient():
    v = torch.zeros(3, 4, requires_grad=True)
    P.logmap0(P.expmap0(v)).sum().backward()
    assert torch.equal(P.expmap0(v.detach()), torch.zeros(3, 4))
    assert torch.allclose(v.grad, torch.ones(3, 4))


@pytest.mark.parametrize("c", [0.0, -1.0, float("nan")])
def test_bad_curvature_raises(c):
    with pytest.raises(ValueError, match="c must be a positive"):
        P.expmap0(torch.ones(2, 2), c)


def test_midpoint_on_feature_axis_raises():
    with pytest.raises(ValueError, match="dim must index the point axis"):
        P.einstein_midpoint(torch.zeros(2, 3, 4), dim=-1)


# -- the fast Einstein midpoint (#42) against the previous implementation -----------------------

def _old_einstein_midpoint(x, c=1.0, weights=None, dim=-2, mask=None):
    """The implementation before #42: Klein points built twice, (…, N, D) temporaries."""
    def sqnorm(t):
        return (t * t).sum(dim=-1, keepdim=True)

    c = torch.as_tensor(c, dtype=x.dtype)
    k = 2.0 * x / (1.0 + c * sqnorm(x))
    ck2 = (c * sqnorm(k)).clamp_max(1.0 - 1e-5)
    w = (1.0 - ck2).clamp_min(1e-10).rsqrt().squeeze(-1)
    if weights is not None:
        w = w * weights.to(w.dtype)
    if mask is not None:
        w = w * mask.to(w.dtype)
    w = w.unsqueeze(-1)
    m_k = (w * k).sum(dim=dim) / w.sum(dim=dim).clamp_min(1e-15)
    return m_k / (1.0 + (1.0 - c * sqnorm(m_k)).clamp_min(1e-10).sqrt())


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
def test_fast_midpoint_equals_the_previous_implementation_on_fixed_inputs(c):
    gen = torch.Generator().manual_seed(3)
    x = P.expmap0(_vectors(n=4 * 300, dim=24, max_norm=3.0).reshape(4, 300, 24), c)
    weights = torch.rand(4, 300, generator=gen, dtype=torch.float64)
    mask = torch.rand(4, 300, generator=gen) > 0.3
    for kwargs in ({}, {"weights": weights}, {"weights": weights, "mask": mask}):
        assert torch.allclose(P.einstein_midpoint(x, c, **kwargs), _old_einstein_midpoint(x, c, **kwargs),
                              rtol=0, atol=1e-12)
    # another point axis: (N, B, D) with dim=0
    xt = x.transpose(0, 1)
    assert torch.allclose(P.einstein_midpoint(xt, c, weights=weights.T, dim=0),
                          _old_einstein_midpoint(xt, c, weights=weights.T, dim=0), atol=1e-12)
    assert torch.allclose(P.lorentz_factor(x, c), _old_lorentz(x, c), rtol=1e-12)


def _old_lorentz(x, c):
    k = 2.0 * x / (1.0 + c * (x * x).sum(-1, keepdim=True))
    return (1.0 - (c * (k * k).sum(-1)).clamp_max(1.0 - 1e-5)).clamp_min(1e-10).rsqrt()


def test_fast_midpoint_in_float32_is_closer_to_float64_than_before():
    x64 = P.expmap0(_vectors(n=8 * 512, dim=32, max_norm=3.0).reshape(8, 512, 32), 1.0)
    x32 = x64.float()
    truth = P.einstein_midpoint(x64, 1.0)
    new_error = float((P.einstein_midpoint(x32, 1.0).double() - truth).abs().max())
    old_error = float((_old_einstein_midpoint(x32, 1.0).double() - truth).abs().max())
    assert new_error < 1e-6 and new_error <= old_error


def test_midpoint_gradient_matches_the_previous_implementation():
    x = P.expmap0(_vectors(n=2 * 40, dim=6, max_norm=2.5).reshape(2, 40, 6)).requires_grad_()
    (P.einstein_midpoint(x) ** 2).sum().backward()
    fast = x.grad.clone()
    x.grad = None
    (_old_einstein_midpoint(x) ** 2).sum().backward()
    assert torch.allclose(fast, x.grad, atol=1e-10)


def test_midpoint_rejects_weights_of_the_wrong_shape():
    x = P.expmap0(_vectors(n=20, dim=4).reshape(2, 10, 4))
    with pytest.raises(ValueError, match="weights must have shape"):
        P.einstein_midpoint(x, weights=torch.ones(2, 9, dtype=torch.float64))
    with pytest.raises(TypeError, match="mask must be a torch.Tensor"):
        P.einstein_midpoint(x, mask=[[True] * 10] * 2)
