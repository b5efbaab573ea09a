"""SGShift / SGShift-A / SGShift-K estimators: recovery, invariants, API, knockoff math."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline

from icml26.sgshift import (GaussianKnockoffSampler, SGShift, SGShiftA, SGShiftK,
                            make_concept_shift, score_selection)
from icml26.sgshift.knockoffs import derandomized_selection_set, equicorrelated_s, knockoff_w


@pytest.fixture(scope="module")
def shifted():
    data = make_concept_shift(n_source=3000, n_target=800, p=12, n_informative=4, n_shifted=3,
                              magnitude=1.5, seed=3)
    model = LogisticRegression(max_iter=500).fit(data.X_source, data.y_source)
    return data, model


def test_recovers_planted_shift_and_ranks_it_first(shifted):
    data, model = shifted
    est = SGShift().fit(data.X_target, data.y_target, source_model=model)
    scores = est.score_features(data.truth)
    assert set(data.truth) <= set(est.selected_)
    assert scores["auroc"] == 1.0
    assert est.path_["coefs"].shape == (25, 12)
    assert est.lambda_ in est.path_["lambdas"]


def test_no_shift_selects_nothing_on_a_large_sample():
    data = make_concept_shift(n_source=20000, n_target=5000, p=10, n_informative=4,
                              n_shifted=0, seed=1)
    model = LogisticRegression(max_iter=500).fit(data.X_source, data.y_source)
    est = SGShift().fit(data.X_target, data.y_target, source_model=model,
                        X_source=data.X_source)
    assert est.selected_.size == 0


def test_allow_empty_false_mimics_reference_and_never_returns_an_empty_set():
    data = make_concept_shift(n_source=20000, n_target=2000, p=8, n_informative=4,
                              n_shifted=0, seed=2)
    model = LogisticRegression(max_iter=500).fit(data.X_source, data.y_source)
    est = SGShift(allow_empty=False).fit(data.X_target, data.y_target, source_model=model)
    assert est.selected_.size >= 1


def test_offset_argument_equals_source_model(shifted):
    data, model = shifted
    from icml26.sgshift import source_offset
    f = source_offset(model, data.X_target, "classification")
    a = SGShift(lam=0.02).fit(data.X_target, data.y_target, source_model=model)
    b = SGShift(lam=0.02).fit(data.X_target, data.y_target, offset=f)
    np.testing.assert_allclose(a.shift_coef_, b.shift_coef_)
    np.testing.assert_allclose(a.decision_function(data.X_val),
                               b.decision_function(data.X_val,
                                                   offset=source_offset(model, data.X_val,
                                                                        "classification")))


def test_corrected_model_predicts_target_better_than_source(shifted):
    data, model = shifted
    est = SGShift().fit(data.X_target, data.y_target, source_model=model)
    from sklearn.metrics import log_loss
    corrected = log_loss(data.y_val, est.predict_proba(data.X_val)[:, 1])
    source = log_loss(data.y_val, model.predict_proba(data.X_val)[:, 1])
    assert corrected < source - 0.02
    assert set(np.unique(est.predict(data.X_val))) <= {0, 1}


def test_regression_outcome_recovers_shift():
    data = make_concept_shift(n_source=3000, n_target=600, p=10, n_informative=4, n_shifted=2,
                              magnitude=1.0, task="regression", seed=4)
    model = LinearRegression().fit(data.X_source, data.y_source)
    est = SGShift().fit(data.X_target, data.y_target, source_model=model)
    assert est.task_ == "regression"
    assert set(est.selected_) == set(data.truth)
    with pytest.raises(AttributeError):
        est.predict_proba(data.X_val)


def test_absorption_does_not_blame_features_the_source_model_missed():
    data = make_concept_shift(n_source=3000, n_target=1000, p=12, n_informative=5,
                              shifted=(8, 9), magnitude=1.0, omitted=(0, 1), seed=0)
    visible = ColumnTransformer([("v", "passthrough", list(data.visible))])
    model = make_pipeline(visible, LogisticRegression(max_iter=500)).fit(data.X_source,
                                                                        data.y_source)
    basic = SGShift().fit(data.X_target, data.y_target, source_model=model)
    absorb = SGShiftA().fit(data.X_target, data.y_target, source_model=model,
                            X_source=data.X_source, y_source=data.y_source)
    assert basic.entry_score_[[0, 1]].mean() > absorb.entry_score_[[0, 1]].mean()
    assert absorb.score_features(data.truth)["auroc"] >= basic.score_features(data.truth)["auroc"]
    assert np.abs(absorb.absorb_coef_[[0, 1]]).min() > 0.1  # beta absorbed the misfit


def test_knockoffs_select_the_shift_with_frequencies(shifted):
    data, model = shifted
    est = SGShiftK(n_bootstraps=6, random_state=0).fit(
        data.X_target, data.y_target, source_model=model, X_source=data.X_source,
        y_source=data.y_source)
    assert set(data.truth) <= set(est.selected_)
    assert np.all((est.selection_frequency_ >= 0) & (est.selection_frequency_ <= 1))
    np.testing.assert_array_equal(est.entry_score_, est.selection_frequency_)
    assert np.all(est.shift_coef_[np.setdiff1d(np.arange(12), est.selected_)] == 0)


def test_knockoffs_are_deterministic_given_random_state(shifted):
    data, model = shifted
    kwargs = dict(source_model=model, X_source=data.X_source, y_source=data.y_source)
    a = SGShiftK(n_bootstraps=3, lam=0.02, random_state=5).fit(data.X_target, data.y_target,
                                                               **kwargs)
    b = SGShiftK(n_bootstraps=3, lam=0.02, random_state=5).fit(data.X_target, data.y_target,
                                                               **kwargs)
    np.testing.assert_array_equal(a.selection_frequency_, b.selection_frequency_)


def test_spline_basis_is_a_group_lasso_over_feature_blocks(shifted):
    data, model = shifted
    est = SGShift(basis="spline").fit(data.X_target, data.y_target, source_model=model)
    assert est.shift_coef_.shape == (12, 7)
    norms = np.linalg.norm(est.shift_coef_, axis=1)
    np.testing.assert_array_equal(np.flatnonzero(norms > 1e-4), est.selected_)
    assert est.score_features(data.truth)["auroc"] == 1.0
    # every coefficient of a feature's spline block enters the path at the same step
    for coefs in est.path_["coefs"]:
        block_nonzero = np.abs(coefs) > 0
        assert np.all(block_nonzero.all(axis=1) | ~block_nonzero.any(axis=1))


def test_dataframe_input_reports_selected_names(shifted):
    data, model = shifted
    cols = [f"f{j}" for j in range(12)]
    model_df = LogisticRegression(max_iter=500).fit(pd.DataFrame(data.X_source, columns=cols),
                                                    data.y_source)
    est = SGShift().fit(pd.DataFrame(data.X_target, columns=cols), data.y_target,
                        source_model=model_df)
    assert list(est.selected_names_) == [cols[j] for j in est.selected_]


def test_estimators_follow_the_sklearn_parameter_contract():
    est = SGShiftA(lam=0.1, v=2)
    params = est.get_params()
    assert params["absorption"] is True and params["lam"] == 0.1 and params["v"] == 2
    assert SGShiftK().get_params()["knockoffs"] is True
    cloned = clone(est)
    assert type(cloned) is SGShiftA and cloned.get_params() == params


def test_constant_target_column_is_dropped_with_a_warning(shifted):
    data, model = shifted
    X = data.X_target.copy()
    X[:, 5] = 0.7
    with pytest.warns(UserWarning, match="constant features dropped.*5"):
        est = SGShift().fit(X, data.y_target, source_model=model)
    assert est.shift_coef_[5] == 0 and 5 not in est.selected_
    assert list(est.dropped_features_) == [5]


def test_perfectly_collinear_columns_are_reported(shifted):
    data, model = shifted
    X = data.X_target.copy()
    X[:, 7] = -2 * X[:, 6]
    with pytest.warns(UserWarning, match="collinear"):
        est = SGShift(lam=0.05).fit(X, data.y_target, offset=np.zeros(len(X)))
    assert est.collinear_groups_ == [(6, 7)]


def test_score_selection_matches_direct_counts():
    metrics = score_selection([0.9, 0.1, 0.8, 0.0], selected=[0, 1], truth=[0, 2],
                              n_features=4)
    assert metrics["tp"] == 1 and metrics["fp"] == 1 and metrics["fn"] == 1
    assert metrics["recall"] == 0.5 and metrics["precision"] == 0.5
    assert metrics["auroc"] == 1.0


def test_knockoff_statistic_and_derandomized_selection_rule():
    np.testing.assert_allclose(knockoff_w(np.array([2.0, -1.0, 0.0, 0.5, 3.0, 0.0])),
                               [1.5, -2.0, 0.0])
    w = np.array([5.0, -4.0, 3.0, -2.5, 2.0, -1.0, 0.5])
    # v=3: the third negative (|W|=1.0) is at rank 6 -> positives ranked before it
    np.testing.assert_array_equal(derandomized_selection_set(w, v=3), [0, 2, 4])
    np.testing.assert_array_equal(derandomized_selection_set(w, v=1), [0])
    # fewer than v negatives: every positive W
    np.testing.assert_array_equal(derandomized_selection_set(np.array([1.0, -1.0, 2.0]), v=3),
                                  [0, 2])


def test_equicorrelated_s_matches_knockpy():
    smatrix = pytest.importorskip("knockpy.smatrix")
    corr = 0.3 ** np.abs(np.subtract.outer(np.arange(6), np.arange(6)))
    ours = equicorrelated_s(corr)
    theirs = np.diag(smatrix.compute_smatrix(corr, method="equicorrelated"))
    np.testing.assert_allclose(ours, theirs, atol=2e-3)


def test_gaussian_knockoffs_have_the_knockoff_covariance():
    rng = np.random.default_rng(0)
    corr = 0.5 ** np.abs(np.subtract.outer(np.arange(4), np.arange(4)))
    X = rng.multivariate_normal(np.zeros(4), corr, size=20000)
    sampler = GaussianKnockoffSampler().fit(X)
    Xk = sampler.sample(X, rng)
    joint = np.cov(np.hstack([X, Xk]), rowvar=False)
    sigma = sampler.covariance_
    s = np.diag(sampler.s_)
    np.testing.assert_allclose(joint[4:, 4:], sigma, atol=0.05)               # same marginal
    np.testing.assert_allclose(joint[:4, 4:], sigma - s, atol=0.05)          # swap structure


def test_readme_example_selects_the_planted_features():
    # the README's API example (n_T = 1000) must show the method, not an empty selection
    data = make_concept_shift(n_source=4000, n_target=1000, p=30, n_shifted=6, seed=0)
    clf = LogisticRegression().fit(data.X_source, data.y_source)
    est = SGShift(lam="cv").fit(data.X_target, data.y_target, source_model=clf,
                                X_source=data.X_source)
    assert sorted(est.selected_) == sorted(data.truth)
    assert est.score_features(data.truth)["precision"] == 1.0


def test_allow_empty_departs_from_the_reference_on_a_small_target():
    # README: at n_T = 500 the CV rule prefers the empty model; the reference rule does not
    data = make_concept_shift(n_source=4000, n_target=500, p=30, n_shifted=6, seed=0)
    clf = LogisticRegression().fit(data.X_source, data.y_source)
    kw = dict(source_model=clf, X_source=data.X_source)
    ours = SGShift().fit(data.X_target, data.y_target, **kw)
    reference = SGShift(allow_empty=False).fit(data.X_target, data.y_target, **kw)
    assert ours.selected_.size == 0 and np.isnan(ours.score_features(data.truth)["precision"])
    assert reference.selected_.size > 0
