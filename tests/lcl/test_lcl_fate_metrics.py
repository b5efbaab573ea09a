"""Fate compositions, the KL head and the lineage metrics against direct computations."""

import math

import numpy as np
import pytest
from sklearn.metrics import calinski_harabasz_score

from icml26.lcl import (FateCompositionRegressor, clone_calinski_harabasz, clone_fate_compositions, cycle_r2,
                        kl_composition, knn_clone_accuracy, knn_clone_containment, knn_lineage_purity)


def test_compositions_match_a_direct_count():
    clones = [0, 0, 0, 0, 1, 1, 1, 2, 2]
    types = ["p", "a", "a", "b", "p", "b", "x", "p", "a"]
    times = [0, 1, 1, 1, 0, 1, 1, 0, 1]
    idx, Y = clone_fate_compositions(clones, types, times, 0, 1, ["a", "b"], smoothing=0.5)
    assert idx.tolist() == [0, 4, 7]
    np.testing.assert_allclose(Y, [[2.5 / 4, 1.5 / 4], [0.5 / 2, 1.5 / 2], [1.5 / 2, 0.5 / 2]])


def test_min_late_cells_drops_small_clones():
    idx, _ = clone_fate_compositions([0, 0, 0, 1, 1], ["p", "a", "b", "p", "a"], [0, 1, 1, 0, 1], 0, 1,
                                     ["a", "b"], min_late_cells=2)
    assert idx.tolist() == [0]


def test_empty_early_set_names_times_and_classes():
    with pytest.raises(ValueError, match=r"time == 5.*classes \['a', 'b'\]"):
        clone_fate_compositions([0, 0], ["p", "a"], [0, 1], 5, 1, ["a", "b"])


def test_kl_matches_direct_sum_with_zero_entries():
    Y = np.array([[0.0, 0.25, 0.75], [0.5, 0.5, 0.0]])
    P = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])
    direct = np.mean([sum(y * math.log(y / p) for y, p in zip(yr, pr) if y > 0) for yr, pr in zip(Y, P)])
    assert kl_composition(Y, P) == pytest.approx(direct, rel=1e-12)
    assert kl_composition(Y, Y) == pytest.approx(0.0, abs=1e-12)


def test_compositions_are_validated():
    assert np.isfinite(kl_composition([[0.5, 0.5 + 5e-4]], [[0.5, 0.5]]))  # renormalised
    with pytest.raises(ValueError, match="rows must sum to 1"):
        kl_composition([[0.5, 0.7]], [[0.5, 0.5]])
    with pytest.raises(ValueError, match="negative"):
        kl_composition([[1.2, -0.2]], [[0.5, 0.5]])
    with pytest.raises(ValueError, match="NaN"):
        kl_composition([[np.nan, 1.0]], [[0.5, 0.5]])


def test_regressor_recovers_a_linear_softmax_law():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(400, 4))
    logits = Z @ rng.normal(size=(4, 3))
    Y = np.exp(logits - logits.max(1, keepdims=True))
    Y /= Y.sum(1, keepdims=True)
    head = FateCompositionRegressor(max_epochs=400, patience=50).fit(Z[:300], Y[:300])
    assert kl_composition(Y[300:], head.predict(Z[300:])) < 0.05
    assert head.score(Z[300:], Y[300:]) > -0.05
    assert kl_composition(Y[300:], np.full((100, 3), 1 / 3)) > 0.3  # the task is not trivial


def test_regressor_hidden_layer_and_bad_input():
    rng = np.random.default_rng(1)
    Z, Y = rng.normal(size=(50, 3)), np.full((50, 2), 0.5)
    head = FateCompositionRegressor(hidden=10, max_epochs=5, val_fraction=0.0).fit(Z, Y)
    assert head.predict(Z).shape == (50, 2)
    with pytest.raises(ValueError, match="Z has 50 rows but Y has 49"):
        FateCompositionRegressor().fit(Z, Y[:-1])
    with pytest.raises(ValueError, match="features but the head was fitted"):
        head.predict(Z[:, :2])


def test_knn_accuracy_and_adjusted_vote():
    Ztr = np.array([[0.0], [0.1], [0.2], [1.0], [5.0]])
    ytr = ["big", "big", "big", "small", "far"]
    Zte = np.array([[0.9]])
    assert knn_clone_accuracy(Ztr, ytr, Zte, ["small"], k=4) == 0.0  # plain vote: the big clone
    # adjusted: local 1/4 - global 1/5 > 3/4 - 3/5? 0.05 < 0.15, still big; with k=2 small wins
    assert knn_clone_accuracy(Ztr, ytr, Zte, ["small"], k=2, adjusted=True) == 1.0


def test_containment_and_rank():
    Ztr = np.array([[0.0], [1.0], [2.0]])
    found, rank = knn_clone_containment(Ztr, ["a", "b", "c"], np.array([[0.1], [2.6]]), ["b", "z"], k=2)
    assert found == 0.5 and rank == 2.0


def test_purity_counts_self_among_neighbours():
    Z = np.array([[0.0], [0.1], [0.2], [10.0]])
    # cells 0-2 share clone 1 with k=2 -> 1.0 each; cell 3 (clone 2) has cell 2 (clone 1) -> 0.5
    assert knn_lineage_purity(Z, [1, 1, 1, 2], k=2) == pytest.approx((1 + 1 + 1 + 0.5) / 4)


def test_calinski_harabasz_matches_sklearn():
    rng = np.random.default_rng(0)
    Z, y = rng.normal(size=(30, 2)), np.repeat([0, 1, 2], 10)
    assert clone_calinski_harabasz(Z, y) == pytest.approx(calinski_harabasz_score(Z, y))


def test_cycle_r2_is_near_zero_without_signal_and_one_with_it():
    rng = np.random.default_rng(0)
    phi = rng.uniform(0, 2 * np.pi, 400)
    assert cycle_r2(rng.normal(size=(400, 30)), phi) < 0.02
    assert cycle_r2(np.c_[np.cos(phi), np.sin(phi), rng.normal(size=400)], phi) > 0.99
    with pytest.raises(ValueError, match="phase must have 400 values"):
        cycle_r2(rng.normal(size=(400, 3)), phi[:-1])
