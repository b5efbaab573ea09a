"""EpiTwin / LaBraM-style estimators: fit/predict contract, determinism, invariances, bad input."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone

from icml26.epitwin import (EpiTwin, EpiTwinGenerator, LaBraMStyleReconstructor, SEEGMontage,
                            make_synthetic_seeg, montage_tensors, raw_to_arrays, to_raw, windows)

TINY = dict(d_model=8, n_layers=1, n_heads=2, patch=64, epochs=2, batch_size=8, window=256,
            stride=256)


@pytest.fixture(scope="module")
def data():
    X, montage, _ = make_synthetic_seeg(brain_seed=0, patient_seed=1, duration_s=10, n_shafts=3)
    return X, montage


@pytest.fixture(scope="module")
def fitted(data):
    X, montage = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return EpiTwin(**TINY).fit(X[:, :2048], montage, X_val=X[:, 2048:])


def test_fit_predict_contract(data, fitted):
    X, montage = data
    pred = fitted.predict(X, montage, masked_shafts=[1])
    assert pred.shape == X.shape and pred.dtype == X.dtype
    on = montage.shaft == 1
    np.testing.assert_array_equal(pred[~on], X[~on])
    assert np.all(np.isfinite(pred)) and not np.allclose(pred[on], X[on])
    assert len(fitted.history_) == 2 and fitted.refinement_ in ("done",) or "stopped" in fitted.refinement_
    assert fitted.history_[-1]["stage"] == 2  # 30 % of 2 epochs rounds to 1 adversarial epoch
    W = windows(X, 256, 256)
    assert fitted.predict(W, montage, [0]).shape == W.shape
    assert fitted.predict(X.astype(np.float64), montage, [0]).dtype == np.float64
    assert isinstance(fitted.score(W, montage, [0]), float)
    # a Raw works directly (montage and fs taken from it)
    raw = to_raw(X, montage, 256.0)
    np.testing.assert_allclose(fitted.predict(raw, masked_shafts=[1]), pred, rtol=1e-4, atol=1e-4)


def test_same_seed_same_numbers(data):
    X, montage = data
    kw = dict(TINY, adversarial=False, epochs=1)
    a = EpiTwin(**kw).fit(X, montage).predict(X, montage, [2])
    b = EpiTwin(**kw).fit(X, montage).predict(X, montage, [2])
    np.testing.assert_array_equal(a, b)
    c = EpiTwin(**dict(kw, seed=1)).fit(X, montage).predict(X, montage, [2])
    assert not np.array_equal(a, c)


def test_get_params_clone():
    model = EpiTwin(d_model=16, use_gfba=False)
    assert clone(model).get_params()["use_gfba"] is False
    assert LaBraMStyleReconstructor().get_params()["patch"] == 128


def test_masked_values_do_not_matter(data, fitted):
    X, montage = data
    on = montage.shaft == 0
    garbage = X.copy()
    garbage[on] = 1e4 * np.random.default_rng(0).standard_normal(garbage[on].shape)
    np.testing.assert_array_equal(fitted.predict(X, montage, [0]), fitted.predict(garbage, montage, [0]))


def test_static_functional_comes_from_training_only(data, fitted):
    X, montage = data
    key = fitted._key(montage)
    before = fitted.functional_[key].clone()
    fitted.predict(X[:, ::-1].copy(), montage, [0])
    torch.testing.assert_close(fitted.functional_[key], before)
    t = montage_tensors(montage, k_lap=8)
    x = torch.zeros(1, montage.n_contacts, 256)
    F = fitted._functional(t, x, torch.zeros(1, montage.n_contacts, dtype=torch.bool), key)
    assert F is fitted.functional_[key]


def test_no_functional_prior_trains_no_functional_predictor(data):
    X, montage = data
    kw = dict(TINY, epochs=1, adversarial=False)
    off = EpiTwin(**kw, use_functional=False).fit(X, montage)
    assert off.functional_ == {} and off._functional(None, None, None, None) is None
    on = EpiTwin(**kw).fit(X, montage)
    assert list(on.functional_) == [on._key(montage)]   # the prior is fitted only where it is used


def test_dynamic_functional_uses_window_and_prediction(data):
    X, montage = data
    model = EpiTwin(**dict(TINY, epochs=1, adversarial=False, functional="dynamic")).fit(X, montage)
    t = montage_tensors(montage)
    x = torch.as_tensor(X[None, :, :256])
    mask = torch.as_tensor(montage.mask_for([0]))[None]
    F = model._functional(t, x, mask, model._key(montage))
    obs = ~mask[0]
    C = np.abs(np.corrcoef(X[:, :256].astype(np.float64)))
    np.testing.assert_allclose(F[0][obs][:, obs].numpy(), C[obs][:, obs], atol=1e-4)
    F_hat = model._f_hat(t)
    torch.testing.assert_close(F[0][mask[0]], F_hat[mask[0]])


def test_generator_equivariance_and_unseen_montage(data, fitted):
    X, montage = data
    g = EpiTwinGenerator(8, 1, 2, patch=64, k_lap=4).eval()
    t = montage_tensors(montage, k_lap=4)
    x = torch.as_tensor(X[None, :, :256])
    mask = torch.as_tensor(montage.mask_for([0]))[None]
    perm = torch.randperm(montage.n_contacts, generator=torch.Generator().manual_seed(0))
    tp = {k: v[perm] for k, v in t.items()}
    for k in ("dist", "same_shaft", "same_region"):
        tp[k] = t[k][perm][:, perm]
    with torch.no_grad():
        torch.testing.assert_close(g(x[:, perm], mask[:, perm], tp), g(x, mask, t)[:, perm],
                                   rtol=1e-4, atol=1e-5)
    # an unseen montage (another patient) is reconstructed in standardised units by a model
    # without the per-pair signed unmixing, and refused by one with it
    X2, m2, _ = make_synthetic_seeg(brain_seed=0, patient_seed=9, duration_s=4, n_shafts=3)
    with pytest.raises(ValueError, match="signed_unmixing"):
        fitted.predict(X2, m2, [1])
    plain = EpiTwin(**dict(TINY, epochs=1, adversarial=False, signed_unmixing=False))
    assert np.all(np.isfinite(plain.fit(X, montage).predict(X2, m2, [1])))


@pytest.mark.parametrize("cls", [EpiTwin, LaBraMStyleReconstructor])
def test_fit_leaves_the_callers_generator_alone(data, cls):
    X, montage = data
    torch.manual_seed(123)
    before = torch.get_rng_state().clone()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        model = cls(**dict(TINY, epochs=2, patch=128 if cls is LaBraMStyleReconstructor else 64))
        model.fit(X, montage)
    assert torch.equal(torch.get_rng_state(), before)
    # and the fit is still a function of its own seed, whatever the caller's generator holds
    torch.manual_seed(7)
    again = cls(**dict(TINY, epochs=2, patch=128 if cls is LaBraMStyleReconstructor else 64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        again.fit(X, montage)
    np.testing.assert_array_equal(model.predict(X, montage, [1]), again.predict(X, montage, [1]))


def test_labram_style_fits(data):
    X, montage = data
    model = LaBraMStyleReconstructor(**dict(TINY, patch=128, epochs=1)).fit(X, montage)
    assert model.predict(X, montage, [0]).shape == X.shape


# -- bad input ----------------------------------------------------------------------------

def test_contacts_without_positions():
    import mne
    info = mne.create_info(["A1", "A2", "B1"], 256.0, "seeg")
    raw = mne.io.RawArray(np.zeros((3, 512)), info, verbose="error")
    with pytest.raises(ValueError, match=r"contacts without positions: \['A1', 'A2', 'B1'\]"):
        raw_to_arrays(raw)
    with pytest.raises(ValueError, match=r"contacts without positions: \['B1'\]"):
        raw_to_arrays(raw, positions={"A1": (0, 0, 0), "A2": (0, 0, 3.5)})
    with pytest.raises(ValueError, match="montage.pos contains NaN"):
        SEEGMontage(np.array([[0, 0, np.nan]]), [0], [0])


def test_window_shorter_than_patch(data, fitted):
    X, montage = data
    with pytest.raises(ValueError, match="shorter than patch=64"):
        fitted.predict(X[:, :32], montage, [0])
    with pytest.raises(ValueError, match="multiple of patch"):
        EpiTwin(**dict(TINY, window=100)).fit(X, montage)
    with pytest.raises(ValueError, match="multiple of patch"):
        fitted.predict(X[:, :100], montage, [0])


def test_all_contacts_masked(data, fitted):
    X, montage = data
    with pytest.raises(ValueError, match="masks every contact"):
        fitted.predict(X, montage, masked_shafts=list(montage.shafts))
    with pytest.raises(ValueError, match="does not have"):
        fitted.predict(X, montage, masked_shafts=[42])
    g = EpiTwinGenerator(8, 1, 2, patch=64)
    with pytest.raises(ValueError, match="hides every contact"):
        g(torch.zeros(1, 3, 128), torch.ones(1, 3, dtype=torch.bool), {})


def test_nan_samples(data, fitted):
    X, montage = data
    bad = X.copy()
    bad[0, 10] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        fitted.predict(bad, montage, [1])
    with pytest.raises(ValueError, match="X contains NaN"):
        EpiTwin(**TINY).fit(bad, montage)


def test_sampling_rate_mismatch(data, fitted):
    X, montage = data
    with pytest.raises(ValueError, match="fs=512.0 Hz differs from the training sampling rate 256.0"):
        fitted.predict(X, montage, [0], fs=512.0)
    raw = to_raw(X, montage, 500.0)
    with pytest.raises(ValueError, match="differs from the training sampling rate"):
        fitted.predict(raw, masked_shafts=[0])


def test_shape_and_param_errors(data):
    X, montage = data
    with pytest.raises(ValueError, match="contacts but the montage has"):
        EpiTwin(**TINY).fit(X[:-1], montage)
    with pytest.raises(ValueError, match=r"X must be \(N, T\) or \(W, N, T\)"):
        EpiTwin(**TINY).fit(X[0], montage)
    with pytest.raises(TypeError, match="montage must be a SEEGMontage"):
        EpiTwin(**TINY).fit(X, None)
    with pytest.raises(ValueError, match="functional must be one of"):
        EpiTwin(**dict(TINY, functional="bogus")).fit(X, montage)
    with pytest.raises(ValueError, match="divisible by n_heads"):
        EpiTwin(**dict(TINY, d_model=9)).fit(X, montage)
    with pytest.raises(RuntimeError, match="not fitted"):
        EpiTwin().predict(X, montage, [0])
