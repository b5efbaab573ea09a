"""The "mixture" start of the signed unmixing read-out (a Resolution): the hard-EM fit against
direct computations of its M- and E-steps, its recovery of planted regimes, and the fitted
model's start."""

import numpy as np
import pytest
import torch

from icml26.epitwin import EpiTwin, make_synthetic_seeg, windows
from icml26.epitwin.baselines import (StateRidgeReconstructor, lagged, mixture_unmixing_maps,
                                      pooled_unmixing_map)

LAGS = (-2, 0, 2)


def _planted(seed=0, W=24, T=256, patch=64):
    """4 shafts x 3 contacts; shaft 0's contacts copy shaft 1 (regime 0) or shaft 2 (regime 1)
    patch by patch, the rest are white noise: the best map for shaft 0 depends on the regime."""
    rng = np.random.default_rng(seed)
    shaft = np.repeat(np.arange(4), 3)
    Z = rng.normal(size=(W, 12, T))
    regime = rng.integers(0, 2, size=(W, T // patch))
    src = np.where(np.repeat(regime, patch, axis=1)[:, None] == 0, Z[:, 3:6], Z[:, 6:9])
    Z[:, 0:3] = src + 0.1 * rng.normal(size=src.shape)
    return Z, shaft, regime


def test_em_recovers_planted_regimes_and_its_maps_are_the_m_step():
    Z, shaft, regime = _planted()
    fit = mixture_unmixing_maps(Z, shaft, LAGS, 1e-3, n_regimes=2, patch=64, tol=0.0, max_iter=50)
    labels = fit["labels"]
    agree = max(np.mean(labels == regime), np.mean(labels != regime))
    assert agree >= 0.95
    # M-step: each map is the read-out class's pooled map on that regime's patches
    oracle = StateRidgeReconstructor(lags=LAGS, alpha=1e-3, mask_shafts=(1, 2)).fit(
        Z, _Montage(shaft), np.repeat(labels, 64, axis=1))
    for k in range(2):
        np.testing.assert_allclose(fit["maps"][k], oracle.maps_[k], rtol=1e-8, atol=1e-10)
    # the regime maps for shaft 0 differ: one reads shaft 1, the other shaft 2
    i0 = 0
    on1 = np.abs(fit["maps"][:, i0, 3:6]).sum((1, 2))
    on2 = np.abs(fit["maps"][:, i0, 6:9]).sum((1, 2))
    assert set(np.argmax(np.stack([on1, on2]), axis=1)) == {0, 1}
    assert fit["counts"].sum() == labels.size
    assert all(b <= a * (1 + 1e-9) for a, b in zip(fit["objective"], fit["objective"][1:]))


def test_e_step_against_a_direct_leave_one_shaft_out_error():
    Z, shaft, _ = _planted(seed=1)
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(12, 12))
    fit = mixture_unmixing_maps(Z, shaft, LAGS, 1e-3, n_regimes=2, patch=64, tol=0.0,
                                max_iter=50, interp_logits=logits)
    # converged: every patch sits with the map of least squared error, computed directly
    errs = np.zeros(fit["labels"].shape + (2,))
    for c in np.unique(shaft):
        obs = shaft != c
        Zo = np.where(obs[None, :, None], Z, 0.0)
        A = lagged(Zo, LAGS)
        for i in np.flatnonzero(~obs):
            v = np.where(obs, np.exp(logits[i] - logits[i][obs].max()), 0.0)
            v /= v.sum()
            for k in range(2):
                pred = np.einsum("j,wjt->wt", v, Z) + np.einsum("f,wft->wt", fit["maps"][k][i].ravel(), A)
                errs[..., k] += ((Z[:, i] - pred) ** 2).reshape(len(Z), -1, 64).sum(-1)
    np.testing.assert_array_equal(fit["labels"], errs.argmin(-1))
    assert fit["objective"][-1] == pytest.approx(errs.min(-1).sum(), rel=1e-9)


def test_one_regime_is_the_pooled_map():
    Z, shaft, _ = _planted(seed=3)
    fit = mixture_unmixing_maps(Z, shaft, LAGS, 1e-3, n_regimes=1, patch=64)
    A = lagged(Z, LAGS).transpose(1, 0, 2).reshape(12 * 3, -1)
    want = pooled_unmixing_map(A @ A.T, Z.shape[0] * Z.shape[2], shaft, LAGS, 1e-3)
    np.testing.assert_allclose(fit["maps"][0], want, rtol=1e-8, atol=1e-10)
    assert np.all(fit["labels"] == 0)


def test_same_seed_same_fit_and_bad_inputs():
    Z, shaft, _ = _planted(seed=4)
    a = mixture_unmixing_maps(Z, shaft, LAGS, 1e-3, 2, 64, seed=5)
    b = mixture_unmixing_maps(Z, shaft, LAGS, 1e-3, 2, 64, seed=5)
    np.testing.assert_array_equal(a["maps"], b["maps"])
    with pytest.raises(ValueError, match="patch"):
        mixture_unmixing_maps(Z, shaft, LAGS, 1e-3, 2, 100)
    with pytest.raises(ValueError, match="n_regimes"):
        mixture_unmixing_maps(Z, shaft, LAGS, 1e-3, 0, 64)
    with pytest.raises(ValueError, match="Z must be"):
        mixture_unmixing_maps(Z[:, :5], shaft, LAGS, 1e-3, 2, 64)
    with pytest.raises(ValueError, match="tol"):
        mixture_unmixing_maps(Z, shaft, LAGS, 1e-3, 2, 64, tol=-1.0)
    with pytest.raises(ValueError, match="max_iter"):
        mixture_unmixing_maps(Z, shaft, LAGS, 1e-3, 2, 64, max_iter=0)


class _Montage:
    """The two attributes StateRidgeReconstructor reads (a full montage is not needed)."""

    def __init__(self, shaft):
        self.shaft, self.n_contacts = shaft, len(shaft)
        self.shafts = np.unique(shaft)
        self.pos = np.zeros((len(shaft), 3))

    def mask_for(self, shafts):
        return np.isin(self.shaft, shafts)


def test_the_fitted_model_starts_at_distinct_regime_maps():
    X, montage, _ = make_synthetic_seeg(duration_s=16, n_shafts=4, world="routing")
    Z = (X - X.mean(1, keepdims=True)) / X.std(1, keepdims=True)
    X = np.concatenate(list(windows(Z.astype(np.float32), 256, 256)), axis=1)
    kw = dict(d_model=8, n_layers=1, n_heads=2, patch=64, k_lap=3, epochs=1, window=256,
              stride=256, adversarial=False, seed=0, n_regimes=2)
    model = EpiTwin(unmixing_start="mixture", **kw).fit(X, montage)
    coef = model.step0_state_["unmixing.coef"]
    assert not torch.allclose(coef[0], coef[1])                   # the saddle is broken
    assert sum(model.unmixing_start_["counts"]) > 0
    assert EpiTwin(unmixing_start="least_squares", **kw).fit(X, montage).unmixing_start_ is None
    with pytest.raises(ValueError, match="dynamic"):
        EpiTwin(unmixing_start="mixture", functional="dynamic", **kw).fit(X, montage)
