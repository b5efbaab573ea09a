"""Bad inputs over epitwin's public entry points: the shared sweep plus the two inputs
the issue found slipping through (fs <= 0 or NaN; metrics of constant signals)."""

import math
import warnings

import numpy as np
import pytest
from sweep import Entry, check_case, sweep_cases

from icml26.epitwin import (EpiTwin, IDWReconstructor, RidgeReconstructor, make_synthetic_seeg,
                            reconstruction_metrics)
from icml26.epitwin.metrics import BANDS

_X, _MONTAGE, _ = make_synthetic_seeg(duration_s=4, n_shafts=3, patient_seed=0)


@pytest.mark.parametrize("fs", [0, -256, math.nan, math.inf])
def test_fit_rejects_a_sampling_rate_that_is_not_positive_and_finite(fs):
    model = IDWReconstructor()
    with pytest.raises(ValueError, match="fs"):
        model.fit(_X, _MONTAGE, fs=fs)
    with pytest.raises(ValueError, match="fs"):
        EpiTwin(d_model=8, n_layers=1, n_heads=2, patch=64, epochs=1, window=256,
                stride=256).fit(_X, _MONTAGE, fs=fs)


def test_predict_rejects_a_bad_sampling_rate():
    model = IDWReconstructor().fit(_X, _MONTAGE, fs=256.0)
    with pytest.raises(ValueError, match="fs"):
        model.predict(_X, _MONTAGE, masked_shafts=[0], fs=-1)


def test_metrics_of_constant_truth_warn_and_name_the_undefined_ratios():
    rng = np.random.default_rng(0)
    flat = np.full((3, 512), 5.0)
    pred = rng.standard_normal((3, 512))
    with pytest.warns(RuntimeWarning, match="y_true has no power") as record:
        m = reconstruction_metrics(flat, pred, fs=256)
    assert len([w for w in record if "y_true" in str(w.message)]) == 1
    for name in BANDS:
        assert math.isnan(m[f"bpr_{name}"])
    assert math.isnan(m["soi"])
    assert all(math.isfinite(m[k]) for k in ("rmse", "mae", "lsd", "pearson"))


def test_metrics_of_a_constant_reconstruction_are_defined_without_warning():
    """A flat *reconstruction* lost all power: ratios 0, SOI 1, no warning."""
    rng = np.random.default_rng(0)
    truth = rng.standard_normal((3, 512))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = reconstruction_metrics(truth, np.zeros_like(truth), fs=256)
    assert m["soi"] == pytest.approx(1.0)
    assert all(m[f"bpr_{name}"] == 0.0 for name in BANDS if name != "high_gamma")


def _fitted(cls):
    return cls().fit(_X, _MONTAGE)


_IDW = _fitted(IDWReconstructor)
_RIDGE = _fitted(RidgeReconstructor)
_Y = np.random.default_rng(1).standard_normal((4, 512))

ENTRIES = [
    Entry("IDWReconstructor.fit", lambda X: IDWReconstructor().fit(X, _MONTAGE),
          good=lambda: {"X": _X}, arrays=["X"], accepts=["mismatched"]),
    Entry("IDWReconstructor.predict", lambda X: _IDW.predict(X, _MONTAGE, masked_shafts=[0]),
          good=lambda: {"X": _X}, arrays=["X"], accepts=["mismatched"]),
    Entry("RidgeReconstructor.fit", lambda X: RidgeReconstructor().fit(X, _MONTAGE),
          good=lambda: {"X": _X}, arrays=["X"], accepts=["mismatched"]),
    Entry("RidgeReconstructor.predict", lambda X: _RIDGE.predict(X, _MONTAGE, masked_shafts=[0]),
          good=lambda: {"X": _X}, arrays=["X"], accepts=["mismatched"]),
    Entry("reconstruction_metrics", lambda y_true, y_pred: reconstruction_metrics(y_true, y_pred, fs=256),
          good=lambda: {"y_true": _Y, "y_pred": _Y * 0.5}, arrays=["y_true", "y_pred"],
          aligned=["y_true", "y_pred"], accepts=["one_sample"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)


def test_more_contacts_than_the_montage_is_rejected():
    """(The sweep's one-column-more case is one time sample more, which is fine; a contact more
    is not.)"""
    with pytest.raises(ValueError, match="X has"):
        IDWReconstructor().fit(np.vstack([_X, _X[:1]]), _MONTAGE)
