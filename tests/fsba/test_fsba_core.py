"""fsba library: cubic subproblem, oracles, penalty surrogate, and the saddle-escape behaviour."""

import numpy as np
import pytest

from icml26.fsba import (AIDBA, F2BA, FSBA, GDA, LFSBA, LMCN, MCN, cubic_model, cubic_step,
                         make_saddle_bilevel, make_saddle_minimax, penalty_surrogate, sosp_certificate)


def test_cubic_step_minimizes_the_model_better_than_random_steps():
    rng = np.random.default_rng(0)
    for _ in range(20):
        A = rng.standard_normal((5, 5))
        H, G, M = A + A.T, rng.standard_normal(5), float(rng.uniform(0.1, 5))
        s = cubic_step(G, H, M)
        best = cubic_model(G, H, M, s)
        for _ in range(200):
            assert best <= cubic_model(G, H, M, s + 1e-2 * rng.standard_normal(5)) + 1e-12


def test_cubic_step_escapes_an_exact_saddle_along_the_bottom_eigenvector():
    s = cubic_step(np.zeros(3), np.diag([-2.0, 1.0, 3.0]), M=4.0)
    np.testing.assert_allclose(np.abs(s), [1.0, 0.0, 0.0], atol=1e-12)   # 2|λ₁|/M = 1
    assert np.all(cubic_step(np.zeros(2), np.eye(2), 1.0) == 0)


def test_torch_func_oracles_match_the_analytic_derivatives():
    from icml26.fsba import BilevelProblem

    analytic, _ = make_saddle_bilevel(d=8, seed=1)
    auto = BilevelProblem(analytic.exact["torch_f"], analytic.exact["torch_g"], 8, 8)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(8), rng.standard_normal(8)
    for which in ("f", "g"):
        for a, b in zip(analytic.grad(which, x, y), auto.grad(which, x, y)):
            np.testing.assert_allclose(a, b, atol=1e-10)
        for a, b in zip(analytic.hess(which, x, y), auto.hess(which, x, y)):
            np.testing.assert_allclose(a, b, atol=1e-10)


def test_penalty_surrogate_error_falls_like_one_over_lambda():
    problem, _ = make_saddle_bilevel(d=8, seed=0)
    x = np.random.default_rng(0).standard_normal(8)
    errors = []
    for lam in (1e2, 1e3, 1e4):
        s = penalty_surrogate(problem, x, lam)
        errors.append(np.linalg.norm(s["hess"] - problem.exact["hess"](x), 2))
    slope = np.polyfit(np.log([1e2, 1e3, 1e4]), np.log(errors), 1)[0]
    assert -1.3 <= slope <= -0.7


def test_second_order_methods_escape_the_saddle_and_first_order_ones_only_off_the_plane():
    problem, x0 = make_saddle_bilevel(d=8, seed=0)
    n_minus = problem.exact["n_minus"]
    for opt in (FSBA(penalty=1e4, max_iter=100), LFSBA(penalty=1e4, max_iter=300)):
        result = opt.minimize(problem, x0)
        assert result.first_sosp_iteration() is not None and result.history["phi_gap"][-1] <= 1e-8
    _, on_plane = make_saddle_bilevel(d=8, seed=0, plane_offset=0.0)
    assert np.all(on_plane[:n_minus] == 0.0)
    for opt in (F2BA(penalty=1e4, lr=0.2, max_iter=200), AIDBA(lr=0.2, max_iter=200)):
        result = opt.minimize(problem, on_plane)     # the stable plane is invariant
        assert np.abs(result.x[:n_minus]).max() < 1e-8
        assert result.history["phi_gap"][-1] >= n_minus / 4 - 1e-6
        off = opt.minimize(problem, x0)              # 1e-6 off the plane: gradient steps leave it
        assert np.abs(off.x[:n_minus]).max() > 0.5


def test_minimax_cubic_newton_escapes_and_gda_stays_on_the_plane():
    problem, x0 = make_saddle_minimax(d=8, seed=0)
    for opt in (MCN(max_iter=100), LMCN(max_iter=300)):
        assert opt.minimize(problem, x0).first_sosp_iteration() is not None
    _, on_plane = make_saddle_minimax(d=8, seed=0, plane_offset=0.0)
    assert GDA(max_iter=300).minimize(problem, on_plane).first_sosp_iteration() is None


def test_bad_input_is_refused():
    problem, x0 = make_saddle_bilevel(d=8, seed=0)
    with pytest.raises(ValueError, match="x0 contains NaN"):
        FSBA().minimize(problem, np.full(8, np.nan))
    with pytest.raises(ValueError, match="x0 must have 8 entries"):
        FSBA().minimize(problem, np.zeros(3))
    with pytest.raises(ValueError, match="cubic_reg must be"):
        FSBA(cubic_reg=0.0).minimize(problem, x0)
    with pytest.raises(ValueError, match="penalty must be"):
        FSBA(penalty=-1.0).minimize(problem, x0)
    with pytest.raises(ValueError, match="lazy_period must be"):
        LFSBA(lazy_period=0).minimize(problem, x0)
    with pytest.raises(ValueError, match="eps must be"):
        sosp_certificate(np.zeros(2), np.eye(2), eps=0.0, rho=1.0)


def test_non_scalar_objective_is_refused():
    from icml26.fsba import BilevelProblem

    problem = BilevelProblem(lambda x, y: x * y, lambda x, y: (y ** 2).sum(), 2, 2)
    with pytest.raises(TypeError, match="must return a scalar"):
        problem.grad("f", np.ones(2), np.ones(2))
