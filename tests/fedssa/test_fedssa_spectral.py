"""Spectral tools and the polynomial filter against direct dense computations."""

import numpy as np
import pytest
import torch

from icml26.fedssa import (PolyFilter, band_moments, chebyshev_band_moments, js_distance_matrix,
                           laplacian_spectrum, normalized_adjacency, spectral_energy)
from icml26.fedssa.spectral import band_edges, grassmann_distance_matrix, high_band_mass, sym_spmm


def _random_graph(n=30, p=0.15, seed=0):
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) < p, 1)
    src, dst = np.nonzero(upper)
    return torch.tensor(np.stack([src, dst])), n


def test_normalized_adjacency_matches_dense_formula():
    edges, n = _random_graph()
    a = torch.zeros(n, n, dtype=torch.float64)
    a[edges[0], edges[1]] = 1.0
    a = a + a.T + torch.eye(n, dtype=torch.float64)
    d = a.sum(1).rsqrt()
    expected = d[:, None] * a * d[None, :]
    got = normalized_adjacency(edges, n, dtype=torch.float64).to_dense()
    assert torch.allclose(got, expected)


def test_poly_filter_matches_dense_polynomial_and_its_frequency_response():
    edges, n = _random_graph()
    adj = normalized_adjacency(edges, n)
    f = PolyFilter(K=4, alpha=0.2)
    with torch.no_grad():
        f.gamma.copy_(torch.tensor([0.3, -0.5, 0.2, 0.1, -0.05]))
    z = torch.randn(n, 3)
    dense = adj.to_dense()
    expected = sum(f.gamma[k] * torch.linalg.matrix_power(dense, k) @ z for k in range(5))
    assert torch.allclose(f(z, adj), expected, atol=1e-5)
    evals, evecs = laplacian_spectrum(edges, n)
    u = evecs[:, 5:6].float()
    response = f.frequency_response(evals[5:6].float())
    assert torch.allclose(f(u, adj), response * u, atol=1e-4)


def test_ppr_initialisation_sums_to_one():
    f = PolyFilter(K=10, alpha=0.1)
    assert torch.isclose(f.gamma.sum(), torch.tensor(1.0))
    assert torch.isclose(f.frequency_response(torch.tensor([0.0])), torch.tensor([1.0]))


def test_band_energy_equals_direct_spectral_sum():
    edges, n = _random_graph(seed=1)
    evals, evecs = laplacian_spectrum(edges, n)
    signal = torch.randn(n, 4, dtype=torch.float64)
    moments = band_moments(evals, evecs, signal, K=3, n_bands=4)
    gamma = torch.tensor([0.4, -0.3, 0.2, 0.1], dtype=torch.float64)
    centred = signal - signal.mean(0)
    c = ((evecs.T @ centred) ** 2).sum(1)
    g = sum(gamma[k] * (1 - evals) ** k for k in range(4))
    band = np.minimum((evals.numpy() / 0.5).astype(int), 3)
    direct = torch.tensor([float((g ** 2 * c)[band == b].sum()) for b in range(4)], dtype=torch.float64)
    energy = torch.einsum("k,bkl,l->b", gamma, moments, gamma)
    assert torch.allclose(energy, direct, atol=1e-9)
    # total energy is ||g(L) H0||_F^2
    dense = normalized_adjacency(edges, n, dtype=torch.float64).to_dense()
    filtered = sum(gamma[k] * torch.linalg.matrix_power(dense, k) @ centred for k in range(4))
    assert torch.isclose(energy.sum(), (filtered ** 2).sum())


def test_chebyshev_band_moments_approximate_exact_ones(tiny_federation):
    g = tiny_federation[2]
    evals, evecs = laplacian_spectrum(g.edge_index, g.n_nodes)
    exact = band_moments(evals, evecs, g.x, K=4)
    approx = chebyshev_band_moments(normalized_adjacency(g.edge_index, g.n_nodes), g.x, K=4, degree=50)
    gamma = PolyFilter(K=4).gamma.double().detach()
    diff = (spectral_energy(gamma, exact) - spectral_energy(gamma, approx)).abs().sum()
    assert diff < 0.1
    # total energy is preserved (the band indicators sum to ~1)
    assert torch.isclose(approx[:, 0, 0].sum(), exact[:, 0, 0].sum(), rtol=0.02)


def test_spectral_energy_is_a_distribution_and_differentiable():
    edges, n = _random_graph(seed=2)
    evals, evecs = laplacian_spectrum(edges, n)
    moments = band_moments(evals, evecs, torch.randn(n, 2, dtype=torch.float64), K=2, n_bands=4)
    gamma = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64, requires_grad=True)
    e = spectral_energy(gamma, moments)
    assert torch.isclose(e.sum(), torch.tensor(1.0, dtype=torch.float64)) and bool((e >= 0).all())
    assert torch.autograd.gradcheck(lambda g: spectral_energy(g, moments), (gamma,))


def test_constant_signal_falls_back_to_uniform_signature_with_warning():
    edges, n = _random_graph()
    evals, evecs = laplacian_spectrum(edges, n)
    moments = band_moments(evals, evecs, torch.ones(n, 2), K=2, n_bands=4)
    with pytest.warns(UserWarning, match="uniform signature"):
        e = spectral_energy(torch.ones(3, dtype=torch.float64), moments)
    assert torch.allclose(e, torch.full((4,), 0.25, dtype=torch.float64))


def test_sym_spmm_gradcheck():
    edges, n = _random_graph(n=8, p=0.4)
    adj = normalized_adjacency(edges, n, dtype=torch.float64)
    x = torch.randn(n, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: sym_spmm(adj, v), (x,))


def test_distances_symmetric_zero_diagonal():
    rng = np.random.default_rng(0)
    sig = rng.dirichlet(np.ones(8), size=5)
    d = js_distance_matrix(sig)
    assert np.allclose(d, d.T) and np.allclose(np.diag(d), 0) and d.max() <= np.sqrt(np.log(2)) + 1e-9
    q = [np.linalg.qr(rng.normal(size=(6, 2)))[0] for _ in range(3)]
    dg = grassmann_distance_matrix(q + [q[0]])
    assert np.allclose(dg, dg.T) and dg[0, 3] < 1e-6 and dg[0, 1] > 0


def test_high_band_mass_counts_bands_above_one():
    assert high_band_mass(np.array([0.1, 0.2, 0.3, 0.4])) == pytest.approx(0.7)
    assert len(band_edges(8)) == 9
