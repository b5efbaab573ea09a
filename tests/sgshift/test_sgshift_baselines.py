"""Diff and WhyShift-tree baselines."""

import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression

from icml26.sgshift import make_concept_shift
from icml26.sgshift.baselines import DiffLasso, WhyShiftTree


def test_diff_lasso_path_ranks_a_strong_linear_shift_first():
    d = make_concept_shift(n_source=3000, n_target=3000, p=8, n_informative=3, n_shifted=2,
                           magnitude=2.0, task="regression", seed=0)
    est = DiffLasso(LinearRegression(), alphas=np.geomspace(1e-4, 10, 15)).fit(
        d.X_source, d.y_source, d.X_target, d.y_target)
    assert est.path_coefs_.shape == (15, 8)
    assert est.score_features(d.truth)["auroc"] == 1.0
    # the difference of two linear fits is linear: the lasso recovers the shift coefficients
    dense = est.path_coefs_[-1]
    np.testing.assert_allclose(dense[d.truth], d.shift_coef[d.truth], atol=0.15)


def test_diff_lasso_entry_score_is_the_fraction_of_nonzero_path_steps():
    d = make_concept_shift(n_source=800, n_target=800, p=6, n_informative=2, n_shifted=1,
                           seed=1)
    est = DiffLasso(LogisticRegression()).fit(d.X_source, d.y_source, d.X_target, d.y_target)
    np.testing.assert_allclose(est.entry_score_, np.mean(np.abs(est.path_coefs_) > 1e-4, axis=0))


def test_whyshift_frequencies_are_fractions_of_repeats():
    d = make_concept_shift(n_source=1500, n_target=1500, p=6, n_informative=2, n_shifted=2,
                           magnitude=2.0, seed=2)
    est = WhyShiftTree(LogisticRegression(), n_repeats=4).fit(d.X_source, d.y_source,
                                                               d.X_target, d.y_target)
    assert set(np.round(est.selection_frequency_ * 4, 6)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    np.testing.assert_array_equal(est.selected_,
                                  np.flatnonzero(est.selection_frequency_ >= est.threshold))
    assert set(d.truth) <= set(est.selected_)


def test_shap_diff_gap_ranks_a_strong_shift_first():
    import pytest
    pytest.importorskip("shap")
    from icml26.sgshift.baselines import ShapDiff
    d = make_concept_shift(n_source=600, n_target=600, p=4, n_informative=2, n_shifted=1,
                           magnitude=3.0, seed=3)
    est = ShapDiff(LogisticRegression(), n_explain=10).fit(d.X_source, d.y_source,
                                                           d.X_target, d.y_target)
    assert est.entry_score_.shape == (4,)
    assert int(np.argmax(est.entry_score_)) == int(d.truth[0])
