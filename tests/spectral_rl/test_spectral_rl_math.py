"""The Laplacian, the bounds and the estimator against direct computations."""

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

from icml26.spectral_rl import (GraphDrawingFeatures, GridWorld, LinearValueApproximator,
                                SpectralFeatures, bound_violations, chain_period,
                                connectivity_bounds, edge_weights, estimate_laplacian_from_trajectories,
                                estimate_normalized_laplacian, estimation_bounds, fiedler_value,
                                laplacian_eigenpairs, make_lazy, misread_laplacian, projection_error,
                                proto_value_functions, sample_trajectories, stationary_distribution,
                                subspace_sin_theta, symmetrized_laplacian, value_function)


@pytest.fixture(scope="module", params=["uniform", "biased", "dirichlet"])
def chain(request):
    world = GridWorld.two_rooms(5, 7, door=1)
    P = world.transition(request.param, seed=3)
    return world, P


def test_stationary_distribution_matches_left_eigenvector(chain):
    _, P = chain
    vals, vecs = np.linalg.eig(P.toarray().T)
    direct = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    direct /= direct.sum()
    np.testing.assert_allclose(stationary_distribution(P), direct, atol=1e-12)


def test_edge_weights_have_degrees_rho_and_laplacian_kills_constants(chain):
    _, P = chain
    rho = stationary_distribution(P)
    W = edge_weights(P, rho).toarray()
    np.testing.assert_allclose(W, W.T, atol=1e-16)
    np.testing.assert_allclose(W.sum(axis=1), rho, atol=1e-14)
    L = symmetrized_laplacian(P, rho).toarray()
    assert np.abs(L @ np.ones(len(rho))).max() < 1e-15
    assert np.linalg.eigvalsh(L).min() > -1e-14


def test_three_forms_share_the_generalized_spectrum(chain):
    _, P = chain
    rho = stationary_distribution(P)
    L = symmetrized_laplacian(P, rho).toarray()
    direct = scipy.linalg.eigh(L, np.diag(rho), eigvals_only=True)
    normalized = np.linalg.eigvalsh(symmetrized_laplacian(P, rho, "normalized").toarray())
    random_walk = np.sort(np.real(np.linalg.eigvals(symmetrized_laplacian(P, rho, "random_walk").toarray())))
    np.testing.assert_allclose(normalized, direct, atol=1e-12)
    np.testing.assert_allclose(random_walk, direct, atol=1e-10)
    evals, U, _ = laplacian_eigenpairs(P)
    np.testing.assert_allclose(evals, np.maximum(direct, 0), atol=1e-12)
    np.testing.assert_allclose(U.T @ (rho[:, None] * U), np.eye(len(rho)), atol=1e-10)
    np.testing.assert_allclose(U[:, 0], np.ones(len(rho)), atol=1e-10)
    assert fiedler_value(P) == pytest.approx(direct[1], abs=1e-12)


def test_sparse_and_dense_eigensolvers_agree():
    P = GridWorld.four_rooms(9).transition("biased")
    dense = SpectralFeatures(n_components=4, method="dense").fit(P)
    sparse = SpectralFeatures(n_components=4, method="sparse").fit(P)
    np.testing.assert_allclose(sparse.eigenvalues_, dense.eigenvalues_, atol=1e-10)
    rho = stationary_distribution(P)
    A = np.sqrt(rho)[:, None] * dense.components_
    B = np.sqrt(rho)[:, None] * sparse.components_
    assert subspace_sin_theta(A, B)[0] < 1e-6


def test_energy_identity_b2_equals_direct_double_sum(chain):
    _, P = chain
    rng = np.random.default_rng(0)
    r = rng.standard_normal(P.shape[0])
    gamma = 0.9
    b = connectivity_bounds(P, r, gamma, k=2)
    rho = stationary_distribution(P)
    W = edge_weights(P, rho).toarray()
    V = value_function(P, r, gamma)
    direct = 0.5 * np.sum(W * (V[:, None] - V[None, :]) ** 2)
    assert b["energy"] == pytest.approx(direct, rel=1e-10)
    assert b["B2_energy"] == pytest.approx(direct, rel=1e-9)


def test_projection_error_equals_weighted_least_squares(chain):
    _, P = chain
    rng = np.random.default_rng(1)
    V = rng.standard_normal(P.shape[0])
    evals, U, rho = laplacian_eigenpairs(P, k=4)
    sw = np.sqrt(rho)
    coef = np.linalg.lstsq(U * sw[:, None], V * sw, rcond=None)[0]
    direct = np.sqrt(np.sum(rho * (V - U @ coef) ** 2))
    assert projection_error(V, U, rho) == pytest.approx(direct, rel=1e-10)


def test_spectral_tail_bound_b1_is_tight_on_an_eigenvector():
    P = GridWorld.two_rooms(5, 7, door=2).transition("biased")
    evals, U, rho = laplacian_eigenpairs(P)
    k = 3
    V = U[:, k]                      # u_{k+1}: e_k = 1 and E(V) = λ_{k+1}
    L = symmetrized_laplacian(P, rho)
    assert projection_error(V, U[:, :k], rho) == pytest.approx(1.0, abs=1e-10)
    assert float(V @ (L @ V)) / evals[k] == pytest.approx(1.0, abs=1e-9)


def test_bounds_hold_on_random_chains_and_fail_when_broken():
    rng = np.random.default_rng(5)
    for trial in range(20):
        world = GridWorld.two_rooms(5, 9, door=int(rng.integers(1, 6)))
        P = world.transition("dirichlet", seed=rng)
        r = rng.standard_normal(world.n_states)
        for k in (1, 2, 5):
            b = connectivity_bounds(P, r, 0.95, k)
            assert not any(bound_violations(b).values()), (trial, k, b)
    broken = dict(b, B4=b["e_k"] * 0.5)
    assert bound_violations(broken)["B4"]


def test_td_fixed_point_matches_approximator_and_is_exact_with_all_features(chain):
    world, P = chain
    r = np.linspace(-1, 1, world.n_states)
    feats = SpectralFeatures(n_components=2).fit(P)   # λ_2 < λ_3: a unique subspace
    td = LinearValueApproximator(feats).fit_td(P, r, 0.9)
    rho = stationary_distribution(P)
    V = value_function(P, r, 0.9)
    b = connectivity_bounds(P, r, 0.9, 2)
    err = np.sqrt(np.sum(rho * (V - td.predict(np.arange(world.n_states))) ** 2))
    assert err == pytest.approx(b["e_td"], rel=1e-8)
    full = SpectralFeatures(n_components=world.n_states).fit(P)  # all features: V itself
    exact = LinearValueApproximator(full).fit_td(P, r, 0.9).predict(np.arange(world.n_states))
    np.testing.assert_allclose(exact, V, atol=1e-8)


def test_projection_fit_equals_projection_error(chain):
    world, P = chain
    V = value_function(P, np.arange(world.n_states, dtype=float), 0.5)
    feats = SpectralFeatures(n_components=4).fit(P)
    rho = stationary_distribution(P)
    model = LinearValueApproximator(feats).fit(np.arange(world.n_states), V, sample_weight=rho)
    err = np.sqrt(np.sum(rho * (V - model.predict(np.arange(world.n_states))) ** 2))
    assert err == pytest.approx(projection_error(V, feats.components_, rho), rel=1e-9)


def test_misreading_differs_only_when_rho_is_not_uniform():
    world = GridWorld.two_rooms(5, 7, door=1)
    ones = np.ones(world.n_states)
    uniform = world.transition("uniform")
    biased = world.transition("biased")
    assert np.linalg.norm(misread_laplacian(uniform) @ ones) < 1e-14
    assert np.linalg.norm(misread_laplacian(biased) @ ones) > 1e-3
    rho = stationary_distribution(uniform)
    np.testing.assert_allclose(misread_laplacian(uniform).toarray(),
                               symmetrized_laplacian(uniform, rho, "random_walk").toarray(), atol=1e-14)


def test_gridworld_two_rooms_layout_and_walls():
    world = GridWorld.two_rooms(5, 7, door=1)
    assert world.n_states == 5 * 7 - 4
    succ = world.successors()
    door_row = 2
    left_of_wall = world.state_of(0, 2)
    assert succ[left_of_wall, 3] == left_of_wall          # "right" into the wall stays
    assert succ[world.state_of(door_row, 2), 3] == world.state_of(door_row, 3)
    P = world.transition("biased")
    np.testing.assert_allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0, atol=1e-14)


def test_chain_period_of_a_cycle_and_of_a_grid():
    cycle = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert chain_period(cycle) == 2
    assert chain_period(make_lazy(cycle)) == 1
    assert chain_period(GridWorld.open_room(3, 3).transition()) == 1


def test_sampler_frequencies_converge_to_p_and_are_seeded():
    P = GridWorld.open_room(3, 3).transition("biased")
    s, s2 = sample_trajectories(P, 200_000, rng=7)
    counts = np.zeros(P.shape)
    np.add.at(counts, (s, s2), 1)
    freq = counts / counts.sum(axis=1, keepdims=True)
    assert np.abs(freq - P.toarray()).max() < 0.02
    again = sample_trajectories(P, 200_000, rng=7)
    np.testing.assert_array_equal(s, again[0])


def test_count_estimator_kills_constants_and_converges():
    P = GridWorld.two_rooms(5, 7, door=2).transition("uniform")
    rho = stationary_distribution(P)
    N = symmetrized_laplacian(P, rho, "normalized").toarray()
    errors = []
    for T in (10_000, 1_000_000):
        s, s2 = sample_trajectories(P, T, rng=0)
        L_hat, D_hat = estimate_laplacian_from_trajectories(s, s2, P.shape[0])
        assert np.abs(L_hat @ np.ones(P.shape[0])).max() < 1e-15
        errors.append(np.linalg.norm(estimate_normalized_laplacian(s, s2, P.shape[0]) - N, 2))
    assert errors[1] < errors[0] / 4


def test_sin_theta_of_a_known_rotation():
    theta = 0.3
    A = np.array([[1.0], [0.0], [0.0]])
    B = np.array([[np.cos(theta)], [np.sin(theta)], [0.0]])
    sin_f, sin_2 = subspace_sin_theta(A, B)
    assert sin_f == pytest.approx(np.sin(theta))
    assert sin_2 == pytest.approx(np.sin(theta))


def test_davis_kahan_holds_under_random_perturbations():
    P = GridWorld.two_rooms(5, 7, door=3).transition("biased")
    N = symmetrized_laplacian(P, form="normalized").toarray()
    rng = np.random.default_rng(2)
    for scale in (1e-4, 1e-3, 1e-2, 1e-1):
        E = rng.standard_normal(N.shape) * scale
        est = estimation_bounds(N, N + 0.5 * (E + E.T), k=3)
        assert est["sin_theta_F"] <= est["DK_bound"] * (1 + 1e-9)
    same = estimation_bounds(N, N, k=3)
    assert same["sin_theta_F"] < 1e-7 and same["norm_diff_2"] == 0.0


def test_proto_value_functions_start_with_a_constant():
    P = GridWorld.two_rooms(5, 7, door=1).transition("biased")
    pvf = proto_value_functions(P, 3)
    assert np.ptp(pvf[:, 0]) < 1e-12


@pytest.fixture
def one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: one thread (spinning threads stall on 2 loaded cores)
    yield
    torch.set_num_threads(before)


def test_graph_drawing_learner_finds_the_slow_subspace_on_a_small_chain(one_torch_thread):
    P = GridWorld.open_room(1, 6).transition("uniform")
    s, s2 = sample_trajectories(P, 20_000, n_chains=32, rng=0)
    rho = stationary_distribution(P)
    learner = GraphDrawingFeatures(n_components=2, lr=1e-2, n_steps=1500, batch_size=512,
                                   random_state=0).fit(s, s2, P.shape[0])
    _, U, _ = laplacian_eigenpairs(P, k=2)
    sin_f, _ = subspace_sin_theta(np.sqrt(rho)[:, None] * U, learner.orthonormal_basis(rho))
    assert sin_f < 0.3


def test_repeated_eigenvalue_at_the_cut_warns():
    P = GridWorld.two_rooms(5, 7, door=1).transition("uniform")   # mirror-symmetric rooms
    evals, _, _ = laplacian_eigenpairs(P, k=4)
    assert evals[3] - evals[2] < 1e-10
    with pytest.warns(RuntimeWarning, match="not unique"):
        SpectralFeatures(n_components=3).fit(P)
