"""The least-squares start of the signed unmixing read-out (a Resolution): its closed form
against direct computations, and the fitted model's step 0 against that closed form."""

import numpy as np
import pytest
import torch

from icml26.epitwin import EpiTwin, make_synthetic_seeg, windows
from icml26.epitwin.baselines import (RidgeReconstructor, lagged, pooled_unmixing_map,
                                      training_mask_distribution)


@pytest.fixture(scope="module")
def world():
    X, montage, _ = make_synthetic_seeg(duration_s=16, n_shafts=4)
    Z = (X - X.mean(1, keepdims=True)) / X.std(1, keepdims=True)
    return windows(Z.astype(np.float32), 256, 256), montage


def _gram(Z, lags):
    A = lagged(Z.astype(np.float64), lags).transpose(1, 0, 2).reshape(Z.shape[1] * len(lags), -1)
    return A @ A.T, Z.shape[0] * Z.shape[2]


def test_mask_distribution_matches_the_training_sampler():
    shaft = np.repeat(np.arange(4), 3)
    dist = training_mask_distribution(shaft, (1, 2), 0)
    assert sum(w for _, w in dist) == pytest.approx(1.0)
    assert dict(dist)[(0,)] == pytest.approx(1 / 3)           # size k has weight prop. to k
    assert {h for h, _ in dist} == {(0,), (0, 1), (0, 2), (0, 3)}
    # the sampler's own frequencies, given shaft 0 is hidden
    rng, counts = np.random.default_rng(0), {}
    model = EpiTwin(mask_shafts=(1, 2))
    for m in model._sample_masks(rng, shaft, 20_000):
        hidden = tuple(sorted(set(shaft[m])))
        if 0 in hidden:
            counts[hidden] = counts.get(hidden, 0) + 1
    total = sum(counts.values())
    for hidden, w in dist:
        assert counts[tuple(sorted(hidden))] / total == pytest.approx(w, abs=0.02)


def test_single_shaft_masks_without_interpolation_give_the_per_mask_ridge(world):
    Z, montage = world
    lags = (-2, 0, 2)
    G, n = _gram(Z, lags)
    M = pooled_unmixing_map(G, n, montage.shaft, lags, 1e-3, mask_shafts=(1, 1))
    ridge = RidgeReconstructor(lags=lags, alpha=1e-3).fit(Z, montage)
    for c in np.unique(montage.shaft):
        mask = montage.mask_for([c])
        B = ridge.coef_for(mask)                       # (n_observed * n_lags, n_masked)
        obs = np.flatnonzero(~mask)
        for col, i in enumerate(np.flatnonzero(mask)):
            np.testing.assert_allclose(M[i][obs].ravel(), B[:, col], rtol=1e-4, atol=1e-6)
            assert np.all(M[i][mask] == 0)             # hidden inputs carry no coefficient


def test_pooled_map_minimises_the_expected_residual(world):
    """The closed form against a direct evaluation: perturbing the solution raises the
    expected squared error (with the interpolation) over the mask distribution."""
    Z, montage = world
    lags, shaft = (0, 2), montage.shaft
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(len(shaft), len(shaft)))
    G, n = _gram(Z, lags)
    M = pooled_unmixing_map(G, n, shaft, lags, 0.0, mask_shafts=(1, 2), interp_logits=logits)
    A = lagged(Z.astype(np.float64), lags)             # (W, N * n_l, T)
    i = int(np.flatnonzero(shaft == 1)[0])

    def risk(coef):
        total = 0.0
        for hidden, w in training_mask_distribution(shaft, (1, 2), 1):
            obs = ~np.isin(shaft, hidden)
            v = np.where(obs, np.exp(logits[i] - logits[i][obs].max()), 0.0)
            v /= v.sum()
            P = np.repeat(obs, len(lags)).astype(float)
            pred = np.einsum("j,wjt->wt", v, Z[:, :, :].astype(np.float64)) + \
                np.einsum("f,wft->wt", coef.ravel() * P, A)
            total += w * np.mean((Z[:, i] - pred) ** 2)
        return total

    best = risk(M[i])
    for _ in range(5):
        assert risk(M[i] + 1e-3 * rng.normal(size=M[i].shape)) > best


def test_the_fitted_model_starts_at_the_closed_form(world):
    Z, montage = world
    X = np.concatenate(list(Z), axis=1)
    kw = dict(d_model=8, n_layers=1, n_heads=2, patch=64, k_lap=3, epochs=1, window=256,
              stride=256, adversarial=False, seed=0, signed_unmixing=True)
    ls = EpiTwin(unmixing_start="least_squares", **kw).fit(X, montage)
    zero = EpiTwin(**kw).fit(X, montage)
    assert ls.step0_train_rmse_ < zero.step0_train_rmse_        # the linear start beats the interpolation
    coef = ls.step0_state_["unmixing.coef"]
    assert torch.equal(coef[0], coef[-1])                         # every regime starts at the same map
    assert torch.count_nonzero(zero.step0_state_["unmixing.coef"]) == 0
    with pytest.raises(ValueError, match="unmixing_start"):
        EpiTwin(unmixing_start="ridge", **kw).fit(X, montage)
    with pytest.raises(ValueError, match="dynamic"):
        EpiTwin(unmixing_start="least_squares", functional="dynamic", **kw).fit(X, montage)


def test_step0_output_is_the_interpolation_plus_the_pooled_map(world):
    """The model at its start, against numpy: hidden rows = softmax interpolation of the
    observed contacts + the pooled map applied to their lagged samples (coefficient layout,
    lag order and masking as in pooled_unmixing_map)."""
    Z, montage = world
    X = np.concatenate(list(Z), axis=1)
    model = EpiTwin(d_model=8, n_layers=1, n_heads=2, patch=64, k_lap=3, epochs=1, window=256,
                    stride=256, adversarial=False, seed=0, unmixing_start="least_squares").fit(X, montage)
    gen = model.model_
    gen.load_state_dict(model.step0_state_)
    gen.eval()
    p = {"t": model._patient_tensors(montage), "key": model.train_key_}
    x = torch.as_tensor(Z[:2])
    mask = torch.as_tensor(np.broadcast_to(montage.mask_for([1]), (2, len(montage.shaft))).copy())
    with torch.no_grad():
        out = model._forward(gen, p, x, mask).numpy()
        F = model._functional(p["t"], None, None, p["key"])
        logits = gen.blocks[0].spatial.bias(p["t"]["dist"], p["t"]["same_shaft"], F).mean(-3).numpy()
    lags = gen.unmixing.lags
    M = gen.unmixing.coef[0, :len(montage.shaft), :len(montage.shaft)].detach().numpy()
    obs = ~montage.mask_for([1])
    A = lagged(np.where(obs[None, :, None], Z[:2], 0.0).astype(np.float64), lags)
    for i in np.flatnonzero(~obs):
        v = np.where(obs, np.exp(logits[i] - logits[i][obs].max()), 0.0)
        v /= v.sum()
        want = np.einsum("j,bjt->bt", v, Z[:2].astype(np.float64)) + np.einsum("f,bft->bt", M[i].ravel(), A)
        np.testing.assert_allclose(out[:, i], want, rtol=1e-4, atol=1e-4)


def test_unmixing_lr_moves_only_the_read_out_slowly(world):
    Z, montage = world
    X = np.concatenate(list(Z), axis=1)
    kw = dict(d_model=8, n_layers=1, n_heads=2, patch=64, k_lap=3, epochs=1, window=256,
              stride=256, adversarial=False, seed=0, unmixing_start="least_squares")
    slow = EpiTwin(unmixing_lr=1e-9, **kw).fit(X, montage)
    start, end = slow.step0_state_["unmixing.coef"], slow.model_.unmixing.coef.detach()
    assert torch.allclose(start, end, atol=1e-6)                      # the read-out barely moved
    now = slow.model_.state_dict()
    moved = max(float((now[k].float() - v.float()).abs().max()) for k, v in slow.step0_state_.items()
                if k != "unmixing.coef" and v.is_floating_point())
    assert moved > 1e-4                                                # the rest trains at lr
    same = EpiTwin(**kw).fit(X, montage)
    assert not torch.allclose(same.step0_state_["unmixing.coef"], same.model_.unmixing.coef.detach(), atol=1e-6)
    with pytest.raises(ValueError, match="unmixing_lr"):
        EpiTwin(unmixing_lr=0.0, **kw).fit(X, montage)
