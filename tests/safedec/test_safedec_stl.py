"""STL core: semantics vs direct computation, cross-checks vs rtamt / stlcgpp, monitor, bad input."""

import numpy as np
import pytest
import torch

from icml26.safedec import (Always, And, Eventually, Implies, Not, Or, Predicate, SafetyMonitor, Until,
                            is_satisfied)

X = Predicate("x", lambda tr: tr[..., 0])
Y = Predicate("y", lambda tr: tr[..., 1])


def _brute_window(rho, t, a, b, kind):
    n = len(rho)
    hi = n - 1 if b is None else min(t + b, n - 1)
    vals = [rho[k] for k in range(t + a, hi + 1)]
    if not vals:
        return np.inf if kind == "min" else -np.inf
    return min(vals) if kind == "min" else max(vals)


def _brute_until(left, right, t, a, b):
    n = len(left)
    hi = n - 1 if b is None else min(t + b, n - 1)
    best = -np.inf
    for tp in range(t + a, hi + 1):
        best = max(best, min([right[tp]] + [left[k] for k in range(t, tp)]))
    return best


@pytest.mark.parametrize("a,b", [(0, None), (0, 3), (2, 5), (1, 1), (4, None), (0, 50)])
def test_always_eventually_match_brute_force(a, b):
    rng = np.random.default_rng(0)
    trace = rng.normal(size=(4, 9, 2))
    g, f = Always(X, a, b).robustness_trace(trace), Eventually(X, a, b).robustness_trace(trace)
    for r in range(4):
        for t in range(9):
            assert g[r, t] == _brute_window(trace[r, :, 0], t, a, b, "min")
            assert f[r, t] == _brute_window(trace[r, :, 0], t, a, b, "max")


@pytest.mark.parametrize("n,a,b", [(1, 0, 0), (9, 0, 8), (10, 3, 3), (17, 2, 6), (17, 0, 16),
                                   (23, 5, 40), (31, 7, 11), (64, 0, 63)])
@pytest.mark.parametrize("kind", ["min", "max"])
def test_sliding_window_equals_direct_reduction(n, a, b, kind):
    """The O(N) van Herk/Gil-Werman window equals the O(N·W) one, values and torch gradients."""
    from icml26.safedec.stl import _window_reduce, _window_reduce_direct

    rng = np.random.default_rng(n + a + b)
    rho = rng.normal(size=(3, n))
    rho[0, ::3] = 0.25                                    # ties
    np.testing.assert_array_equal(_window_reduce(rho, a, b, kind),
                                  _window_reduce_direct(rho, a, b, kind))
    fast = torch.tensor(rho[1:], requires_grad=True)
    slow = torch.tensor(rho[1:], requires_grad=True)
    weights = torch.tensor(rng.normal(size=(2, n)))
    out_fast, out_slow = _window_reduce(fast, a, b, kind), _window_reduce_direct(slow, a, b, kind)
    torch.testing.assert_close(out_fast, out_slow, rtol=0, atol=0)
    finite = torch.isfinite(out_slow)
    (out_fast[finite] * weights[finite]).sum().backward()
    (out_slow[finite] * weights[finite]).sum().backward()
    torch.testing.assert_close(fast.grad, slow.grad, rtol=0, atol=1e-12)  # summation order only


def test_bounded_window_gradcheck():
    from icml26.safedec.stl import _window_reduce

    z = torch.tensor(np.random.default_rng(5).normal(size=(2, 13)), requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: _window_reduce(v, 1, 5, "min")[..., :8], (z,))
    assert torch.autograd.gradcheck(lambda v: _window_reduce(v, 0, 12, "max"), (z,))


@pytest.mark.parametrize("a,b", [(0, None), (0, 3), (1, 4), (2, 2)])
def test_until_matches_brute_force(a, b):
    rng = np.random.default_rng(1)
    trace = rng.normal(size=(3, 7, 2))
    out = Until(X, Y, a, b).robustness_trace(trace)
    for r in range(3):
        for t in range(7):
            assert out[r, t] == _brute_until(trace[r, :, 0], trace[r, :, 1], t, a, b)


def test_boolean_connectives_match_direct_computation():
    trace = np.array([[[1.0, -2.0], [-0.5, 3.0]]])
    np.testing.assert_array_equal(Not(X).robustness_trace(trace), [[-1.0, 0.5]])
    np.testing.assert_array_equal(And(X, Y).robustness_trace(trace), [[-2.0, -0.5]])
    np.testing.assert_array_equal(Or(X, Y).robustness_trace(trace), [[1.0, 3.0]])
    np.testing.assert_array_equal(Implies(X, Y).robustness_trace(trace), [[-1.0, 3.0]])


def test_spec_example_dip_gives_minus_point_three():
    far = Predicate("d_obs", lambda tr: tr[..., 0] - 0.5)
    goal = Predicate("d_goal", lambda tr: 0.3 - tr[..., 1])
    trace = np.stack([np.full(12, 1.0), np.linspace(2.0, 0.0, 12)], axis=1)
    trace[4, 0] = 0.2
    assert And(Always(far), Eventually(goal, 0, 10)).robustness(trace) == pytest.approx(-0.3)


def test_satisfaction_boundary_zero_counts_as_satisfied():
    assert bool(is_satisfied(np.float64(0.0)))
    assert Always(X).satisfied(np.array([[0.0], [1.0]]))


def test_torch_matches_numpy_and_is_differentiable():
    rng = np.random.default_rng(2)
    trace = rng.normal(size=(5, 8, 2))
    phi = Or(Always(X, 0, 3), Until(X, Y, 1, 5), Not(Eventually(Y)))
    t_trace = torch.tensor(trace, requires_grad=True)
    np.testing.assert_allclose(phi.robustness(t_trace).detach().numpy(), phi.robustness(trace), atol=0)
    assert torch.autograd.gradcheck(lambda z: phi.robustness(z), (t_trace,))


def test_robustness_equals_rtamt_on_random_traces():
    rtamt = pytest.importorskip("rtamt")
    rng = np.random.default_rng(3)
    cases = [("always[0,3]((x >= 0) and (y >= 0))", Always(And(X, Y), 0, 3)),
             ("eventually[1,4](not (x >= 0))", Eventually(Not(X), 1, 4)),
             ("always((x >= 0) or eventually[0,2](y >= 0))", Always(Or(X, Eventually(Y, 0, 2)))),
             ("(x >= 0) until[0,3] (y >= 0)", Until(X, Y, 0, 3))]
    worst = 0.0
    for text, ours in cases:
        spec = rtamt.StlDiscreteTimeSpecification()
        spec.declare_var("x", "float")
        spec.declare_var("y", "float")
        spec.spec = text
        spec.parse()
        for _ in range(50):
            trace = rng.normal(size=(10, 2))
            theirs = spec.evaluate({"time": list(range(10)), "x": trace[:, 0].tolist(),
                                    "y": trace[:, 1].tolist()})
            worst = max(worst, abs(theirs[0][1] - float(ours.robustness(trace))))
    assert worst <= 1e-9


def test_robustness_equals_stlcgpp_on_random_traces():
    pytest.importorskip("stlcgpp")
    from stlcgpp import formula as sf

    rng = np.random.default_rng(4)
    px = sf.Predicate("x", lambda s: s)
    theirs = [sf.Always(px > 0.0), sf.Eventually(px > 0.0), sf.Always(px > 0.0, interval=[0, 3]),
              sf.Eventually(px > 0.0, interval=[1, 4])]
    ours = [Always(X), Eventually(X), Always(X, 0, 3), Eventually(X, 1, 4)]
    for _ in range(50):
        sig = rng.normal(size=12)
        for a, b in zip(theirs, ours):
            assert float(a.robustness(torch.tensor(sig, dtype=torch.float32))) == pytest.approx(
                float(b.robustness(sig[:, None])), abs=1e-5)


def test_monitor_prefix_matches_offline_robustness():
    rng = np.random.default_rng(5)
    phi = And(Always(X), Always(Y, 2, 6))
    trace = rng.normal(0.5, 1.0, size=(3, 9, 2))
    mon = SafetyMonitor(phi, batch=3)
    for t in range(9):
        value = mon.update(trace[:, t])
        np.testing.assert_allclose(value, phi.robustness(trace[:, :t + 1]))


def test_monitor_candidates_equal_robustness_of_extended_prefix():
    rng = np.random.default_rng(6)
    phi = Always(And(X, Y))
    trace = rng.normal(1.0, 1.0, size=(2, 4, 2))
    cands = rng.normal(size=(2, 5, 2))
    mon = SafetyMonitor(phi, batch=2)
    for t in range(4):
        mon.update(trace[:, t])
    got = mon.candidates(cands)
    for i in range(5):
        ext = np.concatenate([trace, cands[:, i:i + 1]], axis=1)
        np.testing.assert_allclose(got[:, i], phi.robustness(ext))
    np.testing.assert_allclose(mon.candidates(cands, prefix=False), np.minimum(cands[..., 0], cands[..., 1]))


def test_monitor_warns_about_eventualities():
    with pytest.warns(UserWarning, match="only the G-fragment is enforced"):
        SafetyMonitor(And(Always(X), Eventually(Y)), batch=1)


# -- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("a,b,match", [(-1, 3, "a must be >= 0"), (3, 1, "a <= b"), (0.5, 2, "integer")])
def test_bad_time_bounds_are_rejected(a, b, match):
    with pytest.raises(ValueError, match=match):
        Always(X, a, b)


def test_time_bound_beyond_horizon_is_rejected():
    with pytest.raises(ValueError, match="beyond the horizon"):
        Always(X, 0, 200).check_horizon(100)


def test_formula_over_missing_signal_names_the_predicate():
    z = Predicate("z_signal", lambda tr: tr[..., 5])
    with pytest.raises(ValueError, match="z_signal"):
        z.robustness(np.zeros((4, 2)))


def test_predicate_wrong_shape_or_nan_names_the_predicate():
    bad = Predicate("bad_shape", lambda tr: tr)
    nan = Predicate("nan_pred", lambda tr: tr[..., 0] * np.nan)
    with pytest.raises(ValueError, match="bad_shape"):
        bad.robustness(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="nan_pred"):
        nan.robustness(np.zeros((3, 2)))


def test_empty_or_object_trace_is_rejected():
    with pytest.raises(ValueError, match="T = 0"):
        X.robustness(np.zeros((0, 2)))
    with pytest.raises(TypeError, match="numeric"):
        X.robustness(np.array([[object()]]))
    with pytest.raises(ValueError, match="t must be"):
        X.robustness(np.zeros((3, 1)), t=3)
