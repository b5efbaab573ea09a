"""The math against direct computations: Laplacian PE, functional similarity, GFBA logits,
HSPE, discriminator arithmetic, metrics, IDW and ridge; gradcheck of the differentiable parts."""

import numpy as np
import pytest
import torch
from scipy.signal import welch
from sklearn.linear_model import Ridge

from icml26.epitwin import (GFBAttention, HybridSpatialPE, IDWReconstructor, MultiScaleDiscriminator,
                            RidgeReconstructor, SEEGMontage, functional_similarity, laplacian_pe,
                            make_synthetic_seeg, montage_tensors, reconstruction_metrics, windows)
from icml26.epitwin.baselines import lagged
from icml26.epitwin.experiment import laplacian_pe_error
from icml26.epitwin.spatial import contact_graph, idw_weights


@pytest.fixture(scope="module")
def small():
    X, montage, _ = make_synthetic_seeg(brain_seed=1, patient_seed=2, duration_s=8, n_shafts=3)
    return X, montage


def test_contact_graph_edges(small):
    _, m = small
    W = contact_graph(m, knn=6, tau_mm=10.0)
    assert np.allclose(W, W.T) and np.all(np.diag(W) == 0)
    d = np.linalg.norm(m.pos[:, None] - m.pos[None], axis=-1)
    for i in range(m.n_contacts):
        for j in range(m.n_contacts):
            consecutive = m.shaft[i] == m.shaft[j] and abs(m.index[i] - m.index[j]) == 1
            if consecutive:
                assert W[i, j] == 1.0
            elif W[i, j] > 0:
                assert np.isclose(W[i, j], np.exp(-d[i, j] ** 2 / 200))
    # every contact has at least its 6 nearest neighbours
    assert np.all((W > 0).sum(1) >= 6)


def test_laplacian_pe_matches_eigh_up_to_sign(small):
    _, m = small
    W = contact_graph(m)
    deg = W.sum(1)
    L = np.diag(np.ones(len(W))) - np.diag(deg ** -0.5) @ W @ np.diag(deg ** -0.5)
    vals, vecs = np.linalg.eigh(L)
    phi = laplacian_pe(m, k=5)
    n_zero = int((vals <= 1e-8).sum())  # one per connected component
    assert n_zero >= 1
    assert laplacian_pe_error(phi, vals, vecs, n_zero) < 1e-8
    for c in range(5):
        assert np.allclose(L @ phi[:, c], vals[n_zero + c] * phi[:, c], atol=1e-10)


def test_laplacian_pe_disconnected_pads_zeros():
    pos = np.array([[0, 0, 0], [0, 0, 3.5], [500, 0, 0.0], [500, 0, 3.5]])
    m = SEEGMontage(pos, [0, 0, 1, 1], [0, 1, 0, 1])
    phi = laplacian_pe(m, k=4, knn=1)
    # two components -> two zero eigenvalues skipped; 2 non-zero remain, 2 padded
    assert np.all(phi[:, 2:] == 0) and np.all(np.abs(phi[:, :2]).sum(0) > 0)


def test_functional_similarity_is_abs_pearson(small):
    X, _ = small
    F = functional_similarity(X)
    np.testing.assert_allclose(F, np.abs(np.corrcoef(X.astype(np.float64))), atol=1e-10)
    Xf = X.copy()
    Xf[0] = 3.0  # flat contact
    F = functional_similarity(windows(Xf, 512, 512))
    assert F[0, 0] == 1.0 and np.all(F[0, 1:] == 0) and np.all(np.isfinite(F))


def test_gfba_logits_direct():
    torch.manual_seed(0)
    att = GFBAttention(8, 2).double()
    N = 5
    x = torch.randn(1, N, 8, dtype=torch.float64)
    pos = torch.randn(N, 3, dtype=torch.float64) * 30
    dist = torch.cdist(pos, pos)
    shaft = torch.tensor([0, 0, 1, 1, 2])
    same = shaft[:, None] == shaft[None]
    F = torch.rand(N, N, dtype=torch.float64)
    with torch.no_grad():
        att.same.copy_(torch.tensor([0.3, -0.2]))
        att.lam.copy_(torch.tensor([0.7, 1.5]))
    bias = att.bias(dist, same, F)
    out = att(x, bias[None])
    # direct loop
    q, k, v = att.qkv(x[0]).chunk(3, dim=-1)
    heads = []
    for h in range(2):
        sl = slice(4 * h, 4 * h + 4)
        logits = torch.empty(N, N, dtype=torch.float64)
        for i in range(N):
            for j in range(N):
                centers = torch.linspace(0, 120, 16, dtype=torch.float64)
                r = torch.exp(-(dist[i, j].clamp(max=120) - centers) ** 2 / 128)
                r = r / r.sum()
                beta = att.mlp(r)[h] + att.readout(r)[h]
                logits[i, j] = (q[i, sl] @ k[j, sl]) / 2.0 + beta + att.same[h] * same[i, j] + att.lam[h] * F[i, j]
        heads.append(torch.softmax(logits, -1) @ v[:, sl])
    ref = att.out(torch.cat(heads, -1))
    torch.testing.assert_close(out[0], ref)


def test_rbf_bias_monotone_and_close_to_minus_d_over_20():
    att = GFBAttention(8, 2)
    d = torch.linspace(0, 150, 301)
    beta = att.distance_bias(d).detach()
    assert bool((beta[1:] <= beta[:-1] + 1e-7).all())
    assert bool((beta[20:-60] < beta[19:-61]).all())  # strictly decreasing inside 0-120 mm
    interior = (d > 15) & (d < 105)
    assert float((beta[interior] + d[interior, None] / 20).abs().max()) < 0.1


def test_gradcheck_gfba_and_hspe():
    torch.manual_seed(0)
    att = GFBAttention(4, 2).double()
    N = 4
    pos = torch.randn(N, 3, dtype=torch.float64) * 20
    dist = torch.cdist(pos, pos)
    same = torch.eye(N, dtype=torch.bool)
    x = torch.randn(1, N, 4, dtype=torch.float64, requires_grad=True)
    F = torch.rand(N, N, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, F: att(x, att.bias(dist, same, F)[None]), (x, F))
    pe = HybridSpatialPE(4, k_lap=2).double()
    lap = torch.randn(N, 2, dtype=torch.float64, requires_grad=True)
    p = pos.clone().requires_grad_(True)
    idx = torch.zeros(N, dtype=torch.long)
    assert torch.autograd.gradcheck(lambda p, lap: pe(p, lap, idx, idx, idx), (p, lap))


def test_hspe_fourier_features():
    pe = HybridSpatialPE(8, k_lap=2, sigma_b=1 / 30, seed=3)
    p = torch.tensor([[10.0, -5.0, 2.0]])
    proj = 2 * np.pi * p.numpy() @ pe.B.numpy().T
    np.testing.assert_allclose(pe.fourier(p).numpy(), np.concatenate([np.sin(proj), np.cos(proj)], 1),
                               rtol=1e-5, atol=1e-6)
    assert abs(float(pe.B.std()) - 1 / 30) < 0.015


def test_discriminator_lengths_and_gradcheck():
    D = MultiScaleDiscriminator()
    for T in (512, 256):
        out = D(torch.zeros(2, 2, T))
        assert [s.shape[-1] for s, _ in out] == MultiScaleDiscriminator.output_lengths(T)
        assert all(len(f) == 4 for _, f in out)
    assert MultiScaleDiscriminator.output_lengths(512) == [32, 16, 8]
    D = MultiScaleDiscriminator(n_scales=2).double()
    x = torch.randn(1, 2, 16, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: D(x)[1][0].sum(), (x,), fast_mode=True)


def test_metrics_direct():
    rng = np.random.default_rng(0)
    y = rng.standard_normal((6, 512))
    yh = 0.5 * y + 0.1 * rng.standard_normal((6, 512))
    m = reconstruction_metrics(y, yh, fs=256)
    assert np.isclose(m["rmse"], np.sqrt(np.mean((yh - y) ** 2)))
    assert np.isclose(m["mae"], np.mean(np.abs(yh - y)))
    assert np.isclose(m["pearson"], np.mean([np.corrcoef(a, b)[0, 1] for a, b in zip(y, yh)]))
    f, P = welch(y, fs=256, nperseg=256)
    _, Ph = welch(yh, fs=256, nperseg=256)
    band = (f >= 1) & (f <= 100)
    lsd = np.mean(np.sqrt(np.mean((10 * np.log10(Ph[:, band]) - 10 * np.log10(P[:, band])) ** 2, 1)))
    assert np.isclose(m["lsd"], lsd, rtol=1e-6)
    hi = (f >= 30) & (f <= 100)
    assert np.isclose(m["soi"], 1 - Ph[:, hi].sum() / P[:, hi].sum())
    # halving the amplitude scales power by ~0.25: over-smoothed
    assert m["soi"] > 0.6
    with pytest.raises(ValueError, match="same shape"):
        reconstruction_metrics(y, yh[:2], fs=256)
    with pytest.raises(ValueError, match="y_pred contains NaN"):
        reconstruction_metrics(y, np.full_like(y, np.nan), fs=256)


def test_idw_direct(small):
    X, m = small
    observed = m.shaft != 0
    W = idw_weights(m.pos, observed)
    i = int(np.flatnonzero(~observed)[0])
    w = np.array([1 / np.sum((m.pos[i] - m.pos[j]) ** 2) if observed[j] else 0.0
                  for j in range(m.n_contacts)])
    np.testing.assert_allclose(W[i], w / w.sum())
    pred = IDWReconstructor().fit(X, m).predict(X, m, [0])
    mean, std = X.mean(1, keepdims=True), X.std(1, keepdims=True)
    Z = (X - mean) / std
    Zo = np.where(observed[:, None], Z, 0)
    ref = (w / w.sum()) @ Zo * std[i] + mean[i]
    # observed statistics come from the windows IDW was fitted on (2-s windows, 1-s stride)
    assert np.corrcoef(pred[i], ref)[0, 1] > 0.999
    np.testing.assert_array_equal(pred[observed], X[observed])


def test_ridge_matches_sklearn(small):
    X, m = small
    Wn = windows(X, 512, 256)
    lags = (-2, 0, 2)
    model = RidgeReconstructor(lags=lags, alpha=1e-2).fit(Wn, m)
    mean, std = model.stats_[model._key(m)]
    Z = (Wn - mean[None, :, None]) / std[None, :, None]
    mask = m.shaft == 1
    feats = lagged(Z, lags)
    obs = np.flatnonzero(~mask)
    sel = (obs[:, None] * 3 + np.arange(3)[None]).ravel()
    A = feats[:, sel].transpose(0, 2, 1).reshape(-1, len(sel))
    Y = Z[:, mask].transpose(0, 2, 1).reshape(-1, mask.sum())
    sk = Ridge(alpha=1e-2 * A.shape[0], fit_intercept=False).fit(A, Y)
    np.testing.assert_allclose(model.coef_for(mask), sk.coef_.T, rtol=1e-5, atol=1e-7)
    pred = model.predict(Wn, m, [1])
    ref = (A @ sk.coef_.T).reshape(len(Wn), 512, -1).transpose(0, 2, 1) * std[mask, None] + mean[mask, None]
    np.testing.assert_allclose(pred[:, mask], ref, rtol=1e-4, atol=1e-4)


def test_lagged_direct():
    Z = np.arange(10, dtype=float).reshape(1, 1, 10)
    out = lagged(Z, (-2, 0, 3))
    np.testing.assert_array_equal(out[0, 0], [0, 0, 0, 1, 2, 3, 4, 5, 6, 7])
    np.testing.assert_array_equal(out[0, 2], [3, 4, 5, 6, 7, 8, 9, 9, 9, 9])


def test_montage_tensors(small):
    _, m = small
    t = montage_tensors(m, k_lap=4)
    assert t["lap"].shape == (m.n_contacts, 4) and t["dist"].shape == (m.n_contacts,) * 2
    assert bool(t["same_shaft"].diagonal().all())
