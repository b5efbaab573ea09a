"""LongTailTrainer: training works, is deterministic, follows the sklearn contract."""

import numpy as np
import pytest
from sklearn.base import clone

from icml26.inverse_reweight import LongTailTrainer, make_gaussian_lt

DATA = make_gaussian_lt(n_classes=4, n_features=8, n_max=120, imbalance_ratio=10, n_test_per_class=100,
                        separation=4.0, seed=0)


def _fit(**kwargs):
    X, y = DATA[0], DATA[1]
    params = dict(epochs=6, batch_size=32, network="mlp", random_state=0)
    params.update(kwargs)
    return LongTailTrainer(**params).fit(X, y)


def test_ilr_trainer_learns_and_is_deterministic():
    a, b = _fit(), _fit()
    assert a.history_ == b.history_
    assert np.array_equal(a.decision_function(DATA[2]), b.decision_function(DATA[2]))
    assert a.score(DATA[2], DATA[3]) > 0.5  # chance is 0.25


def test_ilr_presence_counts_start_at_switch_epoch():
    clf = _fit(epochs=4, switch_frac=0.5)
    iters = int(np.ceil(len(DATA[1]) / 32))
    assert clf.switch_epoch_ == 2
    assert clf.loss_.batch_presence.max() == 2 * iters  # the head class is in every batch


@pytest.mark.parametrize("method", ["ce", "focal", "cb", "ce_drw", "ldam_drw", "bsm"])
def test_every_baseline_method_trains(method):
    clf = _fit(method=method, epochs=2)
    assert np.isfinite(clf.history_).all() and clf.predict(DATA[2]).shape == (400,)


def test_mile_schedule_and_all_reweighting_mode_train():
    clf = _fit(schedule="mile", loss_params={"loss_mode": "all_reweighting", "detach_weights": True})
    assert np.isfinite(clf.history_).all()


def test_sklearn_clone_keeps_params():
    clf = LongTailTrainer("ce", epochs=3, loss_params={"gamma": 1.0})
    assert clone(clf).get_params() == clf.get_params()


def test_transform_and_per_sample_loss_shapes():
    clf = _fit(epochs=1)
    assert clf.transform(DATA[2]).shape == (400, 64)
    assert clf.per_sample_loss(DATA[2], DATA[3]).shape == (400,)


def test_trainer_bad_input():
    X, y = DATA[0], DATA[1]
    with pytest.raises(ValueError, match="method"):
        LongTailTrainer("svm").fit(X, y)
    with pytest.raises(ValueError, match="macro_switch_epoch"):
        LongTailTrainer(epochs=4, network="mlp", loss_params={"macro_switch_epoch": 1}).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        LongTailTrainer(network="mlp").fit(X[:5], np.zeros(5, dtype=int))
    with pytest.raises(ValueError, match="X contains NaN"):
        LongTailTrainer(network="mlp").fit(np.full_like(X, np.nan), y)
    clf = _fit(epochs=1)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :3])
    with pytest.raises(ValueError, match="not seen in fit"):
        clf.per_sample_loss(X[:2], np.array([0, 9]))
