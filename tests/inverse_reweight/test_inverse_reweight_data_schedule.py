"""Long-tailed data builders and the learning-rate schedules."""

import math
import random

import numpy as np
import pytest
import torch

from icml26.inverse_reweight import (MittagLefflerLR, load_mnist1d, long_tail_counts, make_gaussian_lt,
                                     make_long_tailed, mittag_leffler, warmup_cosine_lr)
from icml26.inverse_reweight.schedule import mittag_leffler_order


@pytest.mark.parametrize("rho, total", [(10, 6535), (50, 4476), (100, 3967)])
def test_mnist1d_lt_profile_sizes_match_spec(rho, total):
    counts = long_tail_counts(1600, 10, rho)
    assert counts.sum() == total and counts[0] == 1600 and counts[-1] == 1600 // rho


def test_make_long_tailed_subsamples_each_class_deterministically():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 50)
    X = rng.standard_normal((200, 3))
    X1, y1, counts = make_long_tailed(X, y, imbalance_ratio=10, seed=3)
    X2, y2, _ = make_long_tailed(X, y, imbalance_ratio=10, seed=3)
    assert counts.tolist() == [50, 23, 10, 5]
    assert np.bincount(y1).tolist() == counts.tolist()
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    rows = {tuple(r) for r in X}
    assert all(tuple(r) in rows for r in X1)


def test_make_long_tailed_bad_input():
    y = np.repeat(np.arange(3), 10)
    X = np.zeros((30, 2))
    with pytest.raises(ValueError, match="imbalance_ratio"):
        make_long_tailed(X, y, imbalance_ratio=0.5)
    with pytest.raises(ValueError, match="0 samples"):
        make_long_tailed(X, y, imbalance_ratio=100)
    with pytest.raises(ValueError, match="inconsistent lengths"):
        make_long_tailed(X[:5], y, imbalance_ratio=2)
    with pytest.raises(TypeError, match="integer class labels"):
        make_long_tailed(X, y + 0.5, imbalance_ratio=2)


def test_load_mnist1d_is_offline_and_keeps_global_rng(monkeypatch):
    import requests

    def no_network(*args, **kwargs):
        raise AssertionError("load_mnist1d must not use the network")

    monkeypatch.setattr(requests, "get", no_network)
    np.random.seed(123)
    random.seed(123)
    expected_np, expected_py = np.random.rand(), random.random()
    np.random.seed(123)
    random.seed(123)
    X, y, X_test, y_test = load_mnist1d(num_samples=500)
    assert (np.random.rand(), random.random()) == (expected_np, expected_py)
    assert X.shape == (400, 40) and X_test.shape == (100, 40) and set(np.unique(y)) == set(range(10))


def test_gaussian_generator_profile_and_means():
    X, y, X_test, y_test, means = make_gaussian_lt(n_classes=4, n_features=6, n_max=80, imbalance_ratio=8)
    assert np.bincount(y).tolist() == long_tail_counts(80, 4, 8).tolist()
    assert np.bincount(y_test).tolist() == [200] * 4
    assert np.allclose(np.linalg.norm(means, axis=1), 2.5)


@pytest.mark.parametrize("n_max, n_classes, a", [(5000, 10, 0.785), (500, 100, 0.903)])
def test_mittag_leffler_order_matches_official_cifar_values(n_max, n_classes, a):
    assert mittag_leffler_order(long_tail_counts(n_max, n_classes, 100)) == pytest.approx(a, abs=2e-3)


def test_mittag_leffler_series_reduces_to_exponential_at_order_one():
    for z in (0.0, 0.3, 0.9):
        assert mittag_leffler(z, 1.0) == pytest.approx(math.exp(-z), rel=1e-9)


def test_mile_schedule_shape():
    counts = long_tail_counts(500, 100, 100)
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    sched = MittagLefflerLR(opt, counts, total_steps=200, warmup_steps=10, switch_step=160)
    lrs = []
    for _ in range(200):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert lrs[159] == pytest.approx(0.38, abs=0.03)
    assert lrs[160] == pytest.approx(1 / math.gamma(1 - sched.order), rel=1e-9)
    assert lrs[160] == pytest.approx(0.10, abs=0.01)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))
    assert lrs[-1] < 0.01


def test_mile_rejects_balanced_counts_and_bad_steps():
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    with pytest.raises(ValueError, match="perfectly balanced"):
        MittagLefflerLR(opt, [10, 10, 10], total_steps=100, warmup_steps=5, switch_step=80)
    with pytest.raises(ValueError, match="switch_step"):
        MittagLefflerLR(opt, [10, 5, 1], total_steps=100, warmup_steps=5, switch_step=100)


def test_warmup_cosine_values():
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=2.0)
    sched = warmup_cosine_lr(opt, total_steps=12, warmup_steps=2)
    lrs = []
    for _ in range(12):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[:3] == pytest.approx([1.0, 2.0, 2.0])
    assert lrs[7] == pytest.approx(1.0)  # halfway through the cosine
