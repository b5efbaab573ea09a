"""Fast paths of the baselines, each compared with the old code on fixed inputs, and the
MNE baseline on every generated recording (it used to fail on the default one)."""

import numpy as np
import pytest

import icml26.epitwin.baselines as baselines
from icml26.epitwin import IDWReconstructor, RidgeReconstructor, make_synthetic_seeg, mne_interpolate
from icml26.epitwin.spatial import idw_weights


def _old_lagged(Z, lags):
    W, N, T = Z.shape
    t = np.arange(T)
    out = np.empty((W, N, len(lags), T), dtype=Z.dtype)
    for k, lag in enumerate(lags):
        out[:, :, k] = Z[:, :, np.clip(t + int(lag), 0, T - 1)]
    return out.reshape(W, N * len(lags), T)


def _old_idw(self, Z, mask, montage):
    W = idw_weights(montage.pos, ~mask, power=self.power, n_nearest=self.n_nearest)
    return np.einsum("ij,wjt->wit", W, Z)


def _old_ridge(self, Z, mask, montage):
    B = self.coef_for(mask)
    n_l = len(self.lags)
    obs = np.flatnonzero(~mask)
    feats = _old_lagged(Z.astype(np.float64), self.lags)
    sel = (obs[:, None] * n_l + np.arange(n_l)[None]).ravel()
    out = np.zeros(Z.shape)
    out[:, mask] = np.einsum("fm,wft->wmt", B, feats[:, sel])
    return out


@pytest.fixture(scope="module")
def recording():
    X, montage, _ = make_synthetic_seeg(duration_s=16, n_shafts=5, patient_seed=0)
    return X.astype(np.float32), montage


@pytest.mark.parametrize("lags", [(-4, -2, 0, 2, 4), (0,), (-3, 0, 7), (-600, 0, 600)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lagged_equals_the_old_indexing(lags, dtype):
    Z = np.random.default_rng(0).standard_normal((3, 4, 512)).astype(dtype)
    np.testing.assert_array_equal(baselines.lagged(Z, lags), _old_lagged(Z, lags))


@pytest.mark.parametrize("model", [IDWReconstructor(), IDWReconstructor(power=1.0, n_nearest=4),
                                   RidgeReconstructor()], ids=["idw", "idw-nearest", "ridge"])
def test_predict_equals_the_old_einsum(model, recording, monkeypatch):
    X, montage = recording
    model.fit(X, montage)
    for shafts in ([0], [1, 3]):
        fast = model.predict(X, montage, masked_shafts=shafts)
        cls = type(model)
        monkeypatch.setattr(cls, "_reconstruct", _old_idw if cls is IDWReconstructor else _old_ridge)
        old = model.predict(X, montage, masked_shafts=shafts)
        monkeypatch.undo()
        assert fast.dtype == old.dtype == np.float32
        np.testing.assert_allclose(fast, old, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_mne_baseline_works_on_every_recording(seed):
    """patient_seed=0 (the default recording) used to raise in MNE's shaft detection for every
    contact; MNE now gets one shaft at a time."""
    X, montage, _ = make_synthetic_seeg(patient_seed=seed, n_shafts=10)
    X = X[:, :1024]
    for s in montage.shafts[:4]:
        on = np.flatnonzero(montage.shaft == s)
        c = int(on[len(on) // 2])
        Y = mne_interpolate(X, montage, [c], 256.0)
        assert np.isfinite(Y).all()
        np.testing.assert_allclose(np.delete(Y, c, 0), np.delete(X, c, 0), rtol=1e-5, atol=1e-6)
        assert np.corrcoef(Y[c], X[c])[0, 1] > 0.5
        if seed == 1:   # where MNE's whole-recording detection works, the result is the same
            np.testing.assert_allclose(Y, mne_interpolate(X, montage, [c], 256.0, per_shaft=False),
                                       atol=1e-10)


def test_mne_whole_shaft_is_still_mne_s_own_refusal():
    X, montage, _ = make_synthetic_seeg(patient_seed=0, n_shafts=10)
    with pytest.raises(RuntimeError, match="good channels"):
        mne_interpolate(X[:, :1024], montage, np.flatnonzero(montage.shaft == montage.shafts[0]), 256.0)


def _old_predict(self, X, montage=None, masked_shafts=(0,), fs=None):
    arr, montage, fs, dtype = self._one(X, montage, fs, "X")
    self._check_fs(fs)
    mask = montage.mask_for(masked_shafts)
    W = arr[None] if arr.ndim == 2 else arr
    W2 = W.copy()
    W2[:, mask] = 0.0
    mean, std = self._stats_for(montage, W2, mask)
    Z = ((W2 - mean[None, :, None]) / std[None, :, None]).astype(np.float32)
    Z[:, mask] = 0.0
    R = self._reconstruct_any(Z, mask, montage)
    out = W.astype(np.float64).copy()
    out[:, mask] = R[:, mask] * std[None, mask, None] + mean[None, mask, None]
    out = out[0] if arr.ndim == 2 else out
    return out.astype(dtype if np.issubdtype(dtype, np.floating) else np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_predict_wrapper_equals_the_old_one_bitwise(recording, dtype):
    X, montage = recording
    model = IDWReconstructor().fit(X, montage)
    Xd = X.astype(dtype)
    other = montage.subset(np.flatnonzero(montage.shaft != montage.shafts[-1]))   # not a training montage
    Xo = Xd[montage.shaft != montage.shafts[-1]]
    for args in ((Xd, montage, [0]), (Xd[:, :1024], montage, [1, 2]), (Xo, other, [0])):
        new, old = model.predict(*args), _old_predict(model, *args)
        assert new.dtype == old.dtype == dtype
        np.testing.assert_array_equal(new, old)
