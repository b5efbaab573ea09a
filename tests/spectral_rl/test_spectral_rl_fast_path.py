"""The sparse path of ``method="auto"`` (#42): auto goes sparse on large graphs with few
eigenpairs, and gives the same eigenvalues and eigenspaces as the old dense path on fixed inputs;
the biased policy's 'no positive stationary distribution' error says what the user can do."""

import numpy as np
import pytest

import icml26.spectral_rl.laplacian as lap
from icml26.spectral_rl import GridWorld, SpectralFeatures, laplacian_eigenpairs, proto_value_functions
from icml26.spectral_rl.mdp import stationary_distribution


def _projector(vectors, weights=None):
    q = vectors if weights is None else vectors * np.sqrt(weights)[:, None]
    q, _ = np.linalg.qr(q)
    return q @ q.T


@pytest.fixture
def eigsh_calls(monkeypatch):
    calls = []
    real = lap.eigsh

    def counting(*args, **kwargs):
        calls.append(kwargs.get("k"))
        return real(*args, **kwargs)

    monkeypatch.setattr(lap, "eigsh", counting)
    return calls


def test_auto_goes_sparse_above_the_threshold_only_for_few_eigenpairs(eigsh_calls):
    P = GridWorld.open_room(20, 20).transition("uniform")          # n = 400
    laplacian_eigenpairs(P, k=9)
    assert eigsh_calls == [9]
    laplacian_eigenpairs(P, k=60)                                   # k ≥ 0.1 n: dense
    laplacian_eigenpairs(GridWorld.open_room(15, 15).transition("uniform"), k=9)  # n = 225: dense
    assert eigsh_calls == [9]


def test_auto_sparse_equals_dense_on_fixed_inputs(eigsh_calls):
    world = GridWorld.two_rooms(15, 25, door=3)
    P = world.transition("biased")
    ev_a, U_a, rho = laplacian_eigenpairs(P, k=8)
    ev_d, U_d, _ = laplacian_eigenpairs(P, k=8, method="dense")
    assert eigsh_calls, "auto did not use the sparse path"
    np.testing.assert_allclose(ev_a, ev_d, rtol=1e-9, atol=1e-12)
    gram = U_a.T @ (rho[:, None] * U_a)
    np.testing.assert_allclose(gram, np.eye(8), atol=1e-10)
    # Eigenvectors up to sign (fixed) where eigenvalues are simple; compare the spanned spaces.
    np.testing.assert_allclose(_projector(U_a, rho), _projector(U_d, rho), atol=1e-8)


def test_spectral_features_auto_equals_dense(eigsh_calls):
    P = GridWorld.two_rooms(15, 25, door=3).transition("uniform")
    auto = SpectralFeatures(n_components=6).fit(P)
    dense = SpectralFeatures(n_components=6, method="dense").fit(P)
    assert eigsh_calls
    np.testing.assert_allclose(auto.eigenvalues_, dense.eigenvalues_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_projector(auto.components_, auto.weights_),
                               _projector(dense.components_, dense.weights_), atol=1e-8)


def test_proto_value_functions_auto_equals_dense(eigsh_calls):
    P = GridWorld.two_rooms(15, 25, door=3).transition("uniform")
    for normalized in (False, True):
        fast = proto_value_functions(P, 6, normalized=normalized)
        old = proto_value_functions(P, 6, normalized=normalized, method="dense")
        np.testing.assert_allclose(_projector(fast), _projector(old), atol=1e-8)
        np.testing.assert_allclose(np.abs(fast.T @ old), np.eye(6), atol=1e-8)
    assert len(eigsh_calls) == 2


def test_a_too_skewed_stationary_distribution_says_what_to_do():
    P = GridWorld.open_room(60, 60, slip=0.1).transition("biased")
    with pytest.raises(ValueError, match="slip") as info:
        stationary_distribution(P)
    assert "too skewed for float64" in str(info.value) and "smaller grid" in str(info.value)
    rho = stationary_distribution(GridWorld.open_room(60, 60, slip=0.5).transition("biased"))
    assert (rho > 0).all()


def _old_stationary(P):
    """The old solve: one equation of (I − P)ᵀρ = 0 replaced by the normalisation (dense row)."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve

    M = sp.csr_matrix(P)
    n = M.shape[0]
    A = (sp.identity(n, format="csr") - M).T.tolil()
    A[0, :] = np.ones(n)
    b = np.zeros(n)
    b[0] = 1.0
    rho = spsolve(A.tocsc(), b)
    return rho / rho.sum()


@pytest.mark.parametrize("policy", ["uniform", "biased", "dirichlet"])
def test_stationary_distribution_equals_the_old_solve(policy):
    P = GridWorld.two_rooms(9, 15, door=3, slip=0.2).transition(policy, seed=0)
    new, old = stationary_distribution(P), _old_stationary(P)
    np.testing.assert_allclose(new, old, rtol=1e-9, atol=1e-15)
    assert np.abs(P.T @ new - new).sum() < 1e-13


def test_sparse_path_is_deterministic():
    P = GridWorld.open_room(20, 20).transition("uniform")
    a = laplacian_eigenpairs(P, k=9, method="sparse")
    b = laplacian_eigenpairs(P, k=9, method="sparse")
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
