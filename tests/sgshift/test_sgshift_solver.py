"""The offset GLM solver: optimality (KKT) conditions, lambda_max, a reference solve."""

import numpy as np
import pytest
from scipy.special import expit

from icml26.sgshift.offset_glm import (gradient, lambda_grid, lambda_max, loss,
                                       offset_glm_path, solve_offset_glm)


def _problem(family, n=400, p=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    offset = 0.5 * rng.normal(size=n)
    delta = np.zeros(p)
    delta[:3] = [1.0, -0.8, 0.5]
    eta = offset + X @ delta
    if family == "binomial":
        y = (rng.random(n) < expit(eta)).astype(float)
    else:
        y = eta + rng.normal(size=n)
    return X, y, offset


def _kkt_violation(X, y, offset, coef, lam, family, groups=None, weights=None):
    """Max violation of 0 in grad + lam * subdifferential(sum_g w_g ||theta_g||)."""
    d = X.shape[1]
    groups = np.arange(d) if groups is None else groups
    weights = np.ones(groups.max() + 1) if weights is None else weights
    grad = gradient(X, y, offset, coef, family)
    worst = 0.0
    for g in range(groups.max() + 1):
        cols = groups == g
        theta, grad_g = coef[cols], grad[cols]
        norm = np.linalg.norm(theta)
        if norm > 0:
            worst = max(worst, np.max(np.abs(grad_g + lam * weights[g] * theta / norm)))
        else:
            worst = max(worst, np.linalg.norm(grad_g) - lam * weights[g])
    return worst


@pytest.mark.parametrize("family", ["binomial", "gaussian"])
def test_lasso_solution_satisfies_kkt(family):
    X, y, offset = _problem(family)
    lam = 0.3 * lambda_max(X, y, offset, family=family)
    coef, _, converged = solve_offset_glm(X, y, offset, lam, family=family, tol=1e-10,
                                          max_iter=20000)
    assert converged
    assert np.count_nonzero(coef) >= 1
    assert _kkt_violation(X, y, offset, coef, lam, family) < 1e-6


def test_group_lasso_solution_satisfies_kkt():
    X, y, offset = _problem("binomial", p=9)
    groups = np.repeat(np.arange(3), 3)
    weights = np.sqrt(np.full(3, 3.0))
    lam = 0.5 * lambda_max(X, y, offset, groups=groups, group_weights=weights)
    coef, _, _ = solve_offset_glm(X, y, offset, lam, groups=groups, group_weights=weights,
                                  tol=1e-10, max_iter=20000)
    assert _kkt_violation(X, y, offset, coef, lam, "binomial", groups, weights) < 1e-6
    # whole groups enter or leave together
    for g in range(3):
        block = coef[groups == g]
        assert np.all(block == 0) or np.all(block != 0)


def test_lambda_max_is_the_entry_point_of_the_path():
    X, y, offset = _problem("binomial")
    top = lambda_max(X, y, offset)
    at_top, _, _ = solve_offset_glm(X, y, offset, top * 1.0001)
    below, _, _ = solve_offset_glm(X, y, offset, top * 0.95)
    assert np.all(at_top == 0)
    assert np.count_nonzero(below) >= 1
    assert np.isclose(top, np.max(np.abs(gradient(X, y, offset, np.zeros(8), "binomial"))))


def test_unpenalised_intercept_is_fitted_before_lambda_max():
    X, y, offset = _problem("binomial")
    design = np.hstack([X, np.ones((len(X), 1))])
    groups = np.arange(9)
    weights = np.r_[np.ones(8), 0.0]
    top = lambda_max(design, y, offset - 1.0, groups=groups, group_weights=weights)
    coef, _, _ = solve_offset_glm(design, y, offset - 1.0, top * 1.0001, groups=groups,
                                  group_weights=weights, tol=1e-10, max_iter=20000)
    assert np.all(coef[:8] == 0)
    assert coef[8] == pytest.approx(1.0, abs=0.3)  # the intercept undoes the shifted offset


def test_path_is_decreasing_and_warm_started_solutions_match_cold_solves():
    X, y, offset = _problem("gaussian")
    grid = lambda_grid(lambda_max(X, y, offset, family="gaussian"), 8, 1e-2)
    fit = offset_glm_path(X, y, offset, grid[::-1], family="gaussian", tol=1e-10,
                          max_iter=20000)
    assert np.all(np.diff(fit.lambdas) < 0)
    cold, _, _ = solve_offset_glm(X, y, offset, fit.lambdas[5], family="gaussian", tol=1e-10,
                                  max_iter=20000)
    assert np.max(np.abs(cold - fit.coefs[5])) < 1e-6
    nnz = (np.abs(fit.coefs) > 1e-10).sum(axis=1)
    assert nnz[0] == 0 and nnz[-1] >= 3


def test_loss_matches_direct_formula():
    eta = np.array([-2.0, 0.0, 3.0])
    y = np.array([0.0, 1.0, 1.0])
    direct = np.mean(np.log1p(np.exp(eta)) - y * eta)
    assert loss(eta, y, "binomial") == pytest.approx(direct)
    assert loss(eta, y, "gaussian") == pytest.approx(np.mean((eta - y) ** 2))


def test_agrees_with_cvxpy_reference_solve():
    cp = pytest.importorskip("cvxpy")
    X, y, offset = _problem("binomial", n=300, p=6)
    lam = 0.2 * lambda_max(X, y, offset)
    coef, _, _ = solve_offset_glm(X, y, offset, lam, tol=1e-10, max_iter=20000)
    theta = cp.Variable(6)
    eta = offset + X @ theta
    objective = (cp.sum(cp.logistic(eta)) - y @ eta) / len(y) + lam * cp.norm1(theta)
    cp.Problem(cp.Minimize(objective)).solve(solver=cp.CLARABEL)
    assert np.max(np.abs(coef - theta.value)) < 1e-4
