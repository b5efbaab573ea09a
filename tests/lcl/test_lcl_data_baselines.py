"""The simulator's ground truth, log-normalisation, the NB likelihood and the NB-VAE baseline."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.stats import nbinom

from icml26.lcl import NBVAE, log_normalize, simulate_lineage_tracing
from icml26.lcl.baselines import nb_log_likelihood


@pytest.fixture(scope="module")
def data():
    return simulate_lineage_tracing(n_clones=40, seed=0)


def test_simulator_shapes_and_ground_truth(data):
    n = data.n_cells
    assert data.X.shape == data.counts.shape == (n, 600)
    assert data.fate_bias.shape == (40, 3) and np.allclose(data.fate_bias.sum(1), 1)
    early = data.time == 0
    assert np.all(data.fate[early] == -1) and set(data.cell_type[early]) == {"progenitor"}
    late = ~early
    assert np.all(data.cell_type[late] == np.array([f"fate_{f}" for f in data.fate[late]], dtype=object))
    per_clone_early = np.bincount(data.clone[early], minlength=40)
    per_clone_late = np.bincount(data.clone[late], minlength=40)
    assert per_clone_early.min() >= 1 and per_clone_late.min() >= 2
    np.testing.assert_allclose(data.X, log_normalize(data.counts), rtol=1e-6)


def test_simulator_gene_programs_are_disjoint(data):
    roles = data.gene_roles
    blocks = [*roles["terminal"], *roles["priming"], roles["progenitor"], roles["s_phase"], roles["g2m"],
              roles["memory"]]
    genes = np.concatenate(blocks)
    assert genes.size == np.unique(genes).size == 10 * 30


def test_late_fates_follow_the_clone_fate_bias():
    data = simulate_lineage_tracing(n_clones=150, late_mean=30, n_genes=300, seed=1)
    late = data.time == 1
    observed = np.zeros((150, 3))
    np.add.at(observed, (data.clone[late], data.fate[late]), 1)
    observed /= observed.sum(1, keepdims=True)
    assert np.abs(observed - data.fate_bias).mean() < 0.06


def test_priming_genes_carry_fate_bias_in_early_cells_only():
    data = simulate_lineage_tracing(n_clones=200, priming=3.0, seed=2)
    early = data.time == 0
    genes = data.gene_roles["priming"][0]
    signal = data.X[:, genes].mean(1)
    bias = data.fate_bias[data.clone, 0]
    assert np.corrcoef(signal[early], bias[early])[0, 1] > 0.5
    assert abs(np.corrcoef(signal[~early], bias[~early])[0, 1]) < 0.15


def test_same_seed_same_data():
    a, b = simulate_lineage_tracing(n_clones=10, seed=4), simulate_lineage_tracing(n_clones=10, seed=4)
    assert np.array_equal(a.counts, b.counts) and np.array_equal(a.clone, b.clone)


def test_log_normalize_dense_and_sparse_agree_and_reject_bad_counts():
    counts = np.array([[1.0, 3.0, 0.0], [2.0, 2.0, 4.0]])
    dense = log_normalize(counts, target_sum=10)
    np.testing.assert_allclose(dense, np.log1p(10 * counts / counts.sum(1, keepdims=True)), rtol=1e-6)
    np.testing.assert_allclose(log_normalize(sp.csr_matrix(counts), 10).toarray(), dense, rtol=1e-6)
    with pytest.raises(ValueError, match="1 negative values"):
        log_normalize(np.array([[1.0, -1.0]]))
    with pytest.raises(ValueError, match="1 NaN or infinite"):
        log_normalize(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="zero total counts"):
        log_normalize(np.array([[0.0, 0.0], [1.0, 1.0]]))


def test_nb_log_likelihood_matches_scipy():
    x = torch.tensor([0.0, 1.0, 5.0, 20.0], dtype=torch.float64)
    mu = torch.tensor([0.5, 2.0, 4.0, 30.0], dtype=torch.float64)
    theta = torch.tensor([5.0, 0.5, 2.0, 10.0], dtype=torch.float64)
    p = (theta / (theta + mu)).numpy()
    expected = nbinom.logpmf(x.numpy(), theta.numpy(), p)
    np.testing.assert_allclose(nb_log_likelihood(x, mu, theta, eps=0.0).numpy(), expected, rtol=1e-10)


def test_nbvae_fits_lowers_its_loss_and_is_deterministic(data):
    vae = NBVAE(n_latent=4, hidden=32, max_epochs=6, random_state=0).fit(data.counts)
    Z = vae.transform(data.counts)
    assert Z.shape == (data.n_cells, 4) and np.isfinite(Z).all()
    assert vae.history_["loss"][-1] < vae.history_["loss"][0]
    again = NBVAE(n_latent=4, hidden=32, max_epochs=6, random_state=0).fit(data.counts).transform(data.counts)
    assert np.array_equal(Z, again)


def test_nbvae_rejects_negative_and_nan_counts():
    with pytest.raises(ValueError, match="negative values"):
        NBVAE(max_epochs=1).fit(np.array([[1.0, -2.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="NaN"):
        NBVAE(max_epochs=1).fit(np.array([[1.0, np.nan], [1.0, 1.0]]))
