"""CDAL's updates and metrics against direct computations, and the model's invariants."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from icml26.cdal import CDAL, hsic_linear, make_fair_multiview, make_preset, project_simplex
from icml26.cdal.cdal import _procrustes, prepare_views
from icml26.cdal.metrics import (balance, between_group_scatter, clustering_accuracy, fairness_entropy,
                                 pairwise_f_score, proportional_balance, purity)


@pytest.fixture(scope="module")
def small():
    return make_fair_multiview(n=240, seed=3)


@pytest.fixture(scope="module")
def fitted(small):
    return CDAL(4, lam=10.0, max_iter=15, tol=0.0, random_state=0).fit(small.views, sensitive=small.groups)


# -- simplex projection --------------------------------------------------------------------

def test_project_simplex_matches_a_direct_quadratic_program():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(6, 5)) * 2
    V[0] = [0.3, 0.3, 0.3, 0.3, 0.3]    # ties
    V[1] = [-1.0, -2.0, -3.0, -4.0, -5.0]  # all negative
    got = project_simplex(V)
    for v, z in zip(V, got):
        res = minimize(lambda x: np.sum((x - v) ** 2), np.full(5, 0.2), method="SLSQP",
                       bounds=[(0, None)] * 5, constraints={"type": "eq", "fun": lambda x: x.sum() - 1},
                       options={"ftol": 1e-12})
        np.testing.assert_allclose(z, res.x, atol=1e-5)
    np.testing.assert_allclose(got.sum(axis=1), 1.0)
    assert got.min() >= 0


def test_project_simplex_keeps_points_on_the_simplex():
    z = np.array([[0.1, 0.6, 0.3]])
    np.testing.assert_allclose(project_simplex(z), z)


# -- HSIC ------------------------------------------------------------------------------------

def test_hsic_linear_equals_n_times_biased_hsic_with_explicit_kernels():
    rng = np.random.default_rng(1)
    n, m = 30, 4
    Z = project_simplex(rng.random((n, m))).T
    s = rng.integers(0, 3, size=n)
    S = np.eye(3)[s].T                                      # (G, n)
    sizes = S.sum(axis=1)
    K_Z = Z.T @ Z
    K_S = S.T @ np.diag(1.0 / sizes) @ S
    H = np.eye(n) - np.ones((n, n)) / n
    hsic_b = np.trace(K_Z @ H @ K_S @ H) / n ** 2
    assert hsic_linear(Z, s) == pytest.approx(n * hsic_b, rel=1e-10)
    # the closed form ‖Z H Sᵀ diag(n_g)^{-1/2}‖² of the docs as well
    assert between_group_scatter(Z, s) == pytest.approx(
        np.sum((Z @ H @ S.T @ np.diag(sizes ** -0.5)) ** 2), rel=1e-10)


def test_hsic_gradient_is_twice_the_group_mean_gap_and_lipschitz_two():
    rng = np.random.default_rng(2)
    n, m = 25, 3
    Z = rng.random((m, n))
    s = rng.integers(0, 2, size=n)
    sizes = np.bincount(s)
    means = np.stack([Z[:, s == g].mean(axis=1) for g in range(2)], axis=1)
    gradient = 2 * (means[:, s] - Z.mean(axis=1, keepdims=True))
    step = 1e-6
    numeric = np.zeros_like(Z)
    for i, j in itertools.product(range(m), range(n)):
        E = np.zeros_like(Z)
        E[i, j] = step
        numeric[i, j] = (between_group_scatter(Z + E, s) - between_group_scatter(Z - E, s)) / (2 * step)
    np.testing.assert_allclose(gradient, numeric, atol=1e-6)
    M = (np.eye(n) - 1.0 / n) @ np.eye(2)[s] @ np.diag(sizes ** -0.5)
    assert 2 * np.linalg.eigvalsh(M @ M.T).max() <= 2 + 1e-9


# -- the updates -------------------------------------------------------------------------------

def test_procrustes_step_beats_random_orthonormal_matrices():
    rng = np.random.default_rng(3)
    M = rng.normal(size=(7, 5))
    Q = _procrustes(M)
    np.testing.assert_allclose(Q.T @ Q, np.eye(5), atol=1e-12)
    best = np.trace(Q.T @ M)
    for _ in range(200):
        R = np.linalg.qr(rng.normal(size=(7, 5)))[0]
        assert np.trace(R.T @ M) <= best + 1e-12


def test_graph_step_decreases_the_z_block_objective():
    rng = np.random.default_rng(4)
    n, m, lam, c = 60, 5, 50.0, 0.4
    codes = rng.integers(0, 2, size=n)
    sizes = np.bincount(codes)
    Zc = project_simplex(rng.random((n, m)))
    P = rng.normal(size=(n, m))

    def block(Z):  # c‖Z‖² − 2 tr(ZᵀP) + λ F(Z)
        return c * np.sum(Z ** 2) - 2 * np.sum(Z * P) + lam * between_group_scatter(Z.T, codes)

    values = [block(Zc)]
    for _ in range(10):
        Zc = CDAL._graph_step(Zc, P, c, lam, codes, sizes)
        values.append(block(Zc))
    assert np.all(np.diff(values) <= 1e-10 * abs(values[0]))
    assert values[-1] < values[0]


def test_objective_recomputed_from_fitted_attributes(small, fitted):
    Xs = prepare_views(small.views).data
    S = np.eye(2)[small.groups]
    Z = np.hstack([fitted.anchor_graph_.T, S])
    latent = Z @ fitted.anchors_.T
    residuals = [np.sum((X - latent @ W.T) ** 2) for X, W in zip(Xs, fitted.projections_)]
    J = np.sum(fitted.view_weights_ ** 2 * residuals) + 10.0 * between_group_scatter(
        fitted.anchor_graph_, small.groups)
    assert fitted.objective_[-1] == pytest.approx(J, rel=1e-10)
    assert fitted.hsic_ == pytest.approx(hsic_linear(fitted.anchor_graph_, small.groups))


@pytest.mark.parametrize("lam, sensitive_anchors", [(0.0, True), (100.0, True), (0.0, False), (1000.0, False)])
def test_objective_never_increases(small, lam, sensitive_anchors):
    model = CDAL(4, lam=lam, sensitive_anchors=sensitive_anchors, max_iter=20, tol=0.0,
                 final_clustering=False, random_state=1).fit(small.views, sensitive=small.groups)
    J = np.asarray(model.objective_)
    assert len(J) == 20
    assert np.all(J[1:] <= J[:-1] * (1 + 1e-8))


def test_dual_anchors_span_orthogonal_subspaces(fitted):
    A = fitted.anchors_
    np.testing.assert_allclose(A.T @ A, np.eye(A.shape[1]), atol=1e-10)
    np.testing.assert_allclose(fitted.semantic_anchors_.T @ fitted.group_anchors_, 0.0, atol=1e-10)
    row_dots = np.sum(fitted.semantic_embedding_ * fitted.sensitive_embedding_, axis=1)
    np.testing.assert_allclose(row_dots, 0.0, atol=1e-10)
    for W in fitted.projections_:
        np.testing.assert_allclose(W.T @ W, np.eye(W.shape[1]), atol=1e-10)


def test_fitted_graph_and_weights_are_on_their_simplices(fitted):
    np.testing.assert_allclose(fitted.anchor_graph_.sum(axis=0), 1.0)
    assert fitted.anchor_graph_.min() >= 0
    assert fitted.view_weights_.sum() == pytest.approx(1.0) and fitted.view_weights_.min() > 0


def test_view_weights_minimise_the_weighted_residual():
    r = np.array([3.0, 1.0, 6.0])
    alpha = (1 / r) / np.sum(1 / r)
    rng = np.random.default_rng(5)
    for _ in range(100):
        other = rng.dirichlet(np.ones(3))
        assert np.sum(alpha ** 2 * r) <= np.sum(other ** 2 * r) + 1e-12


def test_hsic_penalty_shrinks_group_dependence(small):
    free = CDAL(4, lam=0.0, random_state=0).fit(small.views, sensitive=small.groups)
    fair = CDAL(4, lam=100.0, random_state=0).fit(small.views, sensitive=small.groups)
    assert fair.hsic_ < 0.2 * free.hsic_


def test_same_seed_same_result(small):
    a = CDAL(4, random_state=7).fit(small.views, sensitive=small.groups)
    b = CDAL(4, random_state=7).fit(small.views, sensitive=small.groups)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.objective_ == b.objective_


def test_predict_reproduces_training_clusters_without_hsic():
    data = make_preset("meanshift", seed=0, n=500)
    model = CDAL(4, lam=0.0, random_state=0).fit(data.views, sensitive=data.groups)
    assert np.mean(model.predict(data.views) == model.labels_) > 0.9
    np.testing.assert_array_equal(model.predict(data.views),
                                  model.predict(data.views, sensitive=1 - data.groups))


# -- metrics -----------------------------------------------------------------------------------

def _direct_balance(labels, groups):
    values = []
    for k in np.unique(labels):
        counts = [np.sum((labels == k) & (groups == g)) for g in np.unique(groups)]
        values.append(min(a / b if b else 0.0 for a in counts for b in counts))
    return min(values)


def test_fairness_metrics_match_direct_loops():
    rng = np.random.default_rng(6)
    labels, groups = rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    assert balance(labels, groups) == pytest.approx(_direct_balance(labels, groups))
    overall = np.bincount(groups) / 200
    direct = min(min(np.mean(groups[labels == k] == g) / overall[g], overall[g] / np.mean(groups[labels == k] == g))
                 for k in range(3) for g in range(3))
    assert proportional_balance(labels, groups) == pytest.approx(direct)
    p = np.array([[np.mean(groups[labels == k] == g) for g in range(3)] for k in range(3)])
    assert fairness_entropy(labels, groups) == pytest.approx(min(-(p * np.log(p)).sum(axis=1)) / np.log(3))


def test_utility_metrics_match_brute_force():
    rng = np.random.default_rng(7)
    y, c = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    best = max(np.mean(np.array(perm)[c] == y) for perm in itertools.permutations(range(3)))
    assert clustering_accuracy(y, c) == pytest.approx(best)
    assert purity(y, c) == pytest.approx(sum(np.bincount(y[c == k]).max() for k in range(3)) / 40)
    pairs = [(i, j) for i in range(40) for j in range(i + 1, 40)]
    same_y = np.array([y[i] == y[j] for i, j in pairs])
    same_c = np.array([c[i] == c[j] for i, j in pairs])
    tp = np.sum(same_y & same_c)
    assert pairwise_f_score(y, c) == pytest.approx(2 * tp / (2 * tp + np.sum(~same_y & same_c) + np.sum(same_y & ~same_c)))
