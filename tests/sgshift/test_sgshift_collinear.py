"""Exactly collinear feature groups: detection, one dropped reference column, identifiable truth."""

import warnings

import numpy as np
import pytest

from icml26.sgshift import SGShift, collinear_groups, identifiable_truth, score_selection


def _one_hot_design(n=600, seed=0):
    """Columns: x0, x1 continuous; 2-4 a one-hot block (sums to 1); 5, 6 with 6 = 1 - 5."""
    rng = np.random.default_rng(seed)
    block = np.eye(3)[rng.choice(3, size=n, p=[0.6, 0.3, 0.1])]
    pair = (rng.random(n) < 0.4).astype(float)
    X = np.column_stack([rng.standard_normal((n, 2)), block, pair, 1 - pair])
    return (X - X.mean(0)) / X.std(0)


def test_groups_and_references_match_the_linear_relations():
    X = _one_hot_design()
    groups, refs = collinear_groups(X)
    assert groups == [(2, 3, 4), (5, 6)]
    assert list(refs) == [4, 6]
    # dropping the references leaves full column rank; any one fewer column does not
    kept = np.setdiff1d(np.arange(7), refs)
    assert np.linalg.matrix_rank(X[:, kept]) == kept.size
    assert np.linalg.matrix_rank(X) == kept.size


def test_no_groups_in_generic_data():
    X = np.random.default_rng(1).standard_normal((50, 6))
    groups, refs = collinear_groups(X)
    assert groups == [] and refs.size == 0


def test_identifiable_truth_reexpresses_the_planted_shift():
    X = _one_hot_design()
    beta = np.zeros(7)
    beta[[2, 3]] = 1.0                       # planted on two one-hots of the block: E + El = -U
    features, truth = identifiable_truth(X, beta, aliased=[4, 6])
    assert list(features) == [0, 1, 2, 3, 5] and list(truth) == [2, 3]
    beta = np.zeros(7)
    beta[6] = 1.0                            # planted on a dropped reference: carried by 5
    assert list(identifiable_truth(X, beta, aliased=[4, 6])[1]) == [5]
    beta[5] = 1.0                            # 5 and 6 = -5 with equal shifts cancel
    assert list(identifiable_truth(X, beta, aliased=[4, 6])[1]) == []


def _shifted_target(seed=0, n=2000):
    X = _one_hot_design(n, seed)
    beta = np.zeros(7)
    beta[[0, 2, 3]] = [1.0, 1.0, 1.0]        # the shift lives on x0 and the first two one-hots
    rng = np.random.default_rng(seed + 10)
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ beta))).astype(int)
    return X, y, beta


def test_drop_routes_no_shift_through_the_unplanted_reference():
    X, y, beta = _shifted_target()
    with pytest.warns(UserWarning, match=r"reference columns \[4, 6\] dropped"):
        est = SGShift().fit(X, y, offset=np.zeros(len(y)))
    assert list(est.aliased_features_) == [4, 6]
    assert est.collinear_groups_ == [(2, 3, 4), (5, 6)]
    assert est.shift_coef_[4] == 0 and est.shift_coef_[6] == 0
    assert est.entry_score_[4] == 0
    assert {0, 2, 3} <= set(est.selected_)
    features, truth = identifiable_truth(X, beta, est.aliased_features_)
    assert est.score_features(truth, features=features)["auroc"] == 1.0


def test_keep_is_the_reference_design_and_uses_the_unplanted_column():
    # the minimum-L1 solution writes 1*E + 1*El as -(sd ratio)*U: the unplanted column 4 enters
    X, y, _ = _shifted_target()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SGShift(collinear="keep").fit(X, y, offset=np.zeros(len(y)))
    assert est.aliased_features_.size == 0
    assert est.collinear_groups_ == [(2, 3, 4), (5, 6)]
    assert 4 in est.selected_


def test_precision_of_an_empty_selection_is_undefined():
    metrics = score_selection([0.3, 0.1, 0.0], selected=[], truth=[0], n_features=3)
    assert np.isnan(metrics["precision"]) and metrics["recall"] == 0.0
    assert metrics["n_selected"] == 0


def test_score_selection_restricted_to_features():
    metrics = score_selection([0.9, 0.95, 0.8, 0.0], selected=[0, 1], truth=[0, 2],
                              n_features=4, features=[0, 2, 3])
    assert metrics["auroc"] == 1.0 and metrics["fp"] == 0 and metrics["tp"] == 1
