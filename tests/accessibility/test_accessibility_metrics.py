"""The metrics against direct computations, and the listed wrong implementations on planted data."""

import math
import warnings

import numpy as np
import pytest
import torch

from icml26.accessibility import (LayerStats, accessibility_metrics, capacity_metrics, participation_ratio,
                                  planted_states, profile_table, readout_basis_from_weights, spectrum)
from icml26.accessibility.experiment import e1_statistics


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_layer_stats_matches_torch_cov_with_mask_merge_and_large_mean():
    x = torch.randn(3, 50, 6, dtype=torch.float64, generator=_gen()) + 1e4 * torch.arange(6.0, dtype=torch.float64)
    mask = torch.rand(3, 50, generator=_gen(1)) > 0.3
    rows = x[mask]
    s = LayerStats(6).update(x[:2], mask[:2])
    other = LayerStats(6).update(x[2:], mask[2:])
    s.merge(other)
    assert s.n_tokens == rows.shape[0]
    assert torch.allclose(s.cov(), torch.cov(rows.T, correction=0), rtol=1e-9, atol=1e-6)
    assert torch.allclose(s.cov(centered=False), rows.T @ rows / rows.shape[0], rtol=1e-10)
    assert torch.allclose(s.mean(), rows.mean(0))
    again = LayerStats.from_state_dict(s.state_dict())
    assert torch.equal(again.cov(), s.cov())


def test_capacity_metrics_direct():
    a = torch.randn(40, 10, dtype=torch.float64, generator=_gen(2))
    cov = a.T @ a / 40
    lam = np.sort(np.linalg.eigvalsh(cov.numpy()))[::-1]
    p = lam / lam.sum()
    ent = -(p * np.log(p)).sum()
    m = capacity_metrics(cov)
    assert m["entropy_norm"] == pytest.approx(ent / math.log(10), rel=1e-10)
    assert m["erank"] == pytest.approx(math.exp(ent), rel=1e-10)
    assert m["participation_ratio"] == pytest.approx(lam.sum() ** 2 / (lam ** 2).sum(), rel=1e-10)
    assert m["stable_rank"] == pytest.approx(lam.sum() / lam[0], rel=1e-10)
    assert m["k90"] == int(np.argmax(np.cumsum(p) >= 0.9) + 1)
    iso = capacity_metrics(torch.eye(7))
    assert iso["entropy_norm"] == pytest.approx(1.0) and iso["erank"] == pytest.approx(7.0)
    assert participation_ratio([1.0, 1.0, 0.0]) == 2.0


def test_tiny_negative_eigenvalues_clamped_and_zero_covariance_nan_with_warning():
    assert (spectrum(torch.diag(torch.tensor([1.0, -1e-15, 0.0]))) >= 0).all()
    with pytest.warns(RuntimeWarning, match="all-zero"):
        m = capacity_metrics(torch.zeros(4, 4))
    assert all(math.isnan(v) for v in m.values())
    with pytest.warns(RuntimeWarning, match="all-zero"):
        a = accessibility_metrics(torch.zeros(4, 4), torch.eye(4), torch.ones(4), ks=(2,))
    assert math.isnan(a["enrichment_2"])


def test_readout_basis_is_right_singular_basis_of_w_times_gamma():
    W = torch.randn(300, 12, dtype=torch.float64, generator=_gen(3))
    gamma = torch.rand(12, dtype=torch.float64, generator=_gen(4)) * 3 + 0.1
    Q, sv = readout_basis_from_weights(W, gamma)
    _, S, Vh = torch.linalg.svd(W * gamma, full_matrices=False)
    assert torch.allclose(sv, S, rtol=1e-8)
    for i in range(12):  # same vectors up to sign
        assert abs(float(Q[:, i] @ Vh[i])) == pytest.approx(1.0, abs=1e-6)
    assert torch.allclose(Q.T @ Q, torch.eye(12, dtype=torch.float64), atol=1e-10)


def test_accessibility_metrics_direct():
    d, k = 10, 3
    W = torch.randn(200, d, dtype=torch.float64, generator=_gen(5))
    Q, sv = readout_basis_from_weights(W)
    X = torch.randn(500, d, dtype=torch.float64, generator=_gen(6)) * torch.linspace(0.2, 3, d, dtype=torch.float64)
    Xc = X - X.mean(0)
    cov = Xc.T @ Xc / 500
    m = accessibility_metrics(cov, Q, sv, ks=(k,))
    direct = float((Xc @ Q[:, :k]).pow(2).sum() / Xc.pow(2).sum())
    assert m[f"access_{k}"] == pytest.approx(direct, rel=1e-10)
    assert m[f"enrichment_{k}"] == pytest.approx(direct * d / k, rel=1e-10)
    # readout energy: E||W h||^2 over E||W g||^2 for isotropic g of equal energy
    energy = float((Xc @ W.T).pow(2).sum(1).mean())
    iso = float(Xc.pow(2).sum(1).mean()) / d * float(W.pow(2).sum())
    assert m["readout_energy"] == pytest.approx(energy / iso, rel=1e-10)
    with pytest.raises(ValueError, match="exceeds the hidden size"):
        accessibility_metrics(cov, Q, sv, ks=(d + 1,))
    with pytest.raises(ValueError, match="cov contains NaN"):
        accessibility_metrics(cov * float("nan"), Q, sv, ks=(1,))


def _bars(ps, Q, sv, final=None):
    stats = []
    for layer in range(ps.n_layers + 1):
        h = final if (layer == ps.n_layers and final is not None) else ps.states[layer]
        stats.append(LayerStats(h.shape[1]).update(h))
    frame = profile_table(stats, Q, sv, ks=(8,))
    return e1_statistics(frame, ps.n_layers), frame


def _basis(ps, kind):
    W, g = ps.unembedding, ps.gamma
    d = W.shape[1]
    if kind == "right":
        return readout_basis_from_weights(W, g)
    if kind == "no_gamma":  # forgot the final norm's gain
        return readout_basis_from_weights(W)
    U, S, Vh = torch.linalg.svd(W * g, full_matrices=False)
    if kind == "left":  # left singular vectors, cut to d rows
        return torch.linalg.qr(U[:d])[0], S
    if kind == "transposed":  # columns of Vh taken as the singular vectors
        return Vh, S
    raise AssertionError(kind)


@pytest.fixture(scope="module")
def planted():
    return planted_states(seed=0)


def test_planted_correct_implementation_passes_b_and_c(planted):
    stats, frame = _bars(planted, *_basis(planted, "right"))
    assert stats["erank_ratio"] >= 2.5 and stats["access_ratio"] <= 0.8
    assert stats["min_entropy"] >= 0.74 and stats["entropy_spread"] <= 0.06
    # the planted subspace is what the right basis finds
    Q, _ = _basis(planted, "right")
    overlap = torch.linalg.svdvals(Q[:, :8].T @ planted.q_true)
    assert float(overlap.min()) > 0.999


@pytest.mark.parametrize("wrong", ["post_norm", "left", "transposed", "no_gamma"])
def test_planted_wrong_implementation_breaks_b_or_c(planted, wrong):
    if wrong == "post_norm":  # h^L taken from output_hidden_states[-1] (after the final norm)
        stats, _ = _bars(planted, *_basis(planted, "right"), final=planted.post_norm_final())
    else:
        stats, _ = _bars(planted, *_basis(planted, wrong))
    assert stats["erank_ratio"] < 2.5 or stats["access_ratio"] > 0.8, stats


@pytest.mark.parametrize("wrong", ["left", "transposed", "no_gamma"])
def test_wrong_bases_miss_the_planted_subspace_on_every_seed(wrong):
    for seed in range(4):
        ps = planted_states(n_tokens=64, seed=seed)
        right = torch.linalg.svdvals(_basis(ps, "right")[0][:, :8].T @ ps.q_true)
        bad = torch.linalg.svdvals(_basis(ps, wrong)[0][:, :8].T.to(torch.float64) @ ps.q_true)
        assert float(right.min()) > 0.999
        assert float(bad.min()) < 0.9


def test_bad_inputs_of_metrics():
    with pytest.raises(ValueError, match="last dimension d_model=4"):
        LayerStats(4).update(torch.zeros(2, 3))
    with pytest.raises(FloatingPointError, match="NaN"):
        LayerStats(2).update(torch.tensor([[1.0, float("nan")]]))
    with pytest.raises(ValueError, match="no tokens"):
        LayerStats(2).cov()
    with pytest.raises(ValueError, match="square"):
        capacity_metrics(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="gamma must have shape"):
        readout_basis_from_weights(torch.zeros(5, 3), torch.ones(4))
    with pytest.raises(ValueError, match="unembedding must be"):
        readout_basis_from_weights(torch.zeros(5))
    stats = [LayerStats(8).update(torch.randn(5, 8, generator=_gen()))]
    with pytest.warns(RuntimeWarning, match="rank-deficient"):
        profile_table(stats, torch.eye(8, dtype=torch.float64), torch.ones(8, dtype=torch.float64), ks=(2,))
