"""Bad input gets a clear error naming the argument; degenerate cases are explicit."""

import numpy as np
import pytest

from icml26.spectral_rl import (GridWorld, LinearValueApproximator, SpectralFeatures,
                                connectivity_bounds, estimate_normalized_laplacian, estimation_bounds,
                                fiedler_value, sample_trajectories, stationary_distribution,
                                symmetrized_laplacian, value_function)

P_OK = GridWorld.open_room(2, 3).transition("uniform")
R_OK = np.arange(6, dtype=float)


def test_rows_not_summing_to_one_are_refused():
    bad = P_OK.toarray()
    bad[0, 0] += 0.1
    with pytest.raises(ValueError, match="rows must sum to 1"):
        stationary_distribution(bad)


@pytest.mark.parametrize("matrix, message", [
    (np.ones((2, 3)) / 3, "square"),
    (np.array([[np.nan, 1.0], [0.5, 0.5]]), "NaN"),
    (np.array([[1.5, -0.5], [0.5, 0.5]]), "negative"),
])
def test_malformed_transition_matrices_are_refused(matrix, message):
    with pytest.raises(ValueError, match=message):
        symmetrized_laplacian(matrix)


def test_disconnected_state_graph_is_named():
    two_islands = np.kron(np.eye(2), np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="reducible.*lambda_2 = 0"):
        stationary_distribution(two_islands)
    with pytest.raises(ValueError, match="reducible"):
        fiedler_value(two_islands)


@pytest.mark.parametrize("gamma", [1.0, -0.1, 1.5])
def test_gamma_outside_unit_interval_is_refused(gamma):
    with pytest.raises(ValueError, match="gamma must be in"):
        value_function(P_OK, R_OK, gamma)
    with pytest.raises(ValueError, match="gamma must be in"):
        connectivity_bounds(P_OK, R_OK, gamma, k=2)


def test_gamma_zero_is_refused_by_the_bounds_that_divide_by_it():
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\)"):
        connectivity_bounds(P_OK, R_OK, 0.0, k=2)
    np.testing.assert_allclose(value_function(P_OK, R_OK, 0.0), R_OK)


@pytest.mark.parametrize("k", [0, 6, 7])
def test_k_outside_one_to_n_minus_one_is_refused(k):
    with pytest.raises(ValueError, match="k must be"):
        connectivity_bounds(P_OK, R_OK, 0.9, k=k)


def test_too_many_components_is_refused():
    with pytest.raises(ValueError, match="n_components must be <= 6"):
        SpectralFeatures(n_components=7).fit(P_OK)


def test_trajectories_with_states_out_of_range_are_refused():
    with pytest.raises(ValueError, match="next_states has indices outside"):
        estimate_normalized_laplacian(np.array([0, 1]), np.array([1, 9]), n_states=6)
    with pytest.raises(ValueError, match="states has indices outside"):
        SpectralFeatures(n_components=2).fit((np.array([-1, 1]), np.array([1, 0])), n_states=6)
    with pytest.raises(ValueError, match="n_states is required"):
        SpectralFeatures(n_components=2).fit((np.array([0, 1]), np.array([1, 0])))


def test_unvisited_states_raise_or_are_isolated_with_a_warning():
    s, s2 = np.array([0, 1, 0]), np.array([1, 0, 0])
    with pytest.raises(ValueError, match="never appear"):
        estimate_normalized_laplacian(s, s2, n_states=3)
    with pytest.warns(RuntimeWarning, match="isolated"):
        N = estimate_normalized_laplacian(s, s2, n_states=3, unvisited="isolate")
    assert N[2, 2] == 1.0 and np.all(N[2, :2] == 0)


def test_zero_eigengap_gives_an_infinite_davis_kahan_bound_with_a_warning():
    N = np.diag([0.0, 0.5, 0.5, 1.0])
    with pytest.warns(RuntimeWarning, match="eigengap"):
        est = estimation_bounds(N, N + 1e-3 * np.eye(4), k=2)
    assert est["DK_bound"] == np.inf


def test_disconnected_operator_bounds_are_infinite_not_an_error():
    # a user-supplied rho on a chain whose symmetrized graph has λ_{k+1} = 0 gives B4 = inf
    from icml26.spectral_rl.bounds import _safe_div

    assert _safe_div(1.0, 0.0) == np.inf


def test_periodic_chain_warns_in_the_sampler():
    cycle = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.warns(RuntimeWarning, match="periodic"):
        sample_trajectories(cycle, 10, n_chains=2, rng=0)


def test_transform_refuses_states_out_of_range_and_unfitted_features():
    feats = SpectralFeatures(n_components=2).fit(P_OK)
    with pytest.raises(ValueError, match="outside"):
        feats.transform([0, 6])
    with pytest.raises(TypeError, match="features must be a SpectralFeatures"):
        LinearValueApproximator("pvf").fit([0, 1], [0.0, 1.0])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        SpectralFeatures().transform([0])


def test_bad_layouts_and_policies_are_refused():
    with pytest.raises(ValueError, match="only '#' and '.'"):
        GridWorld("..x\n...")
    with pytest.raises(ValueError, match="no free cell"):
        GridWorld("##\n##")
    with pytest.raises(ValueError, match="policy must have shape"):
        GridWorld.open_room(2, 2).transition(np.full((3, 4), 0.25))
    with pytest.raises(ValueError, match="kind must be one of"):
        GridWorld.open_room(2, 2).transition("greedy")
