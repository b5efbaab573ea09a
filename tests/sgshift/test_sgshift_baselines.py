"""Diff and WhyShift-tree baselines."""

import numpy as np
import pytest
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


# -- the offset-GLM Wald baseline -----------------------------------------------------------

def _wald_data(seed=0, n_target=800):
    from sklearn.linear_model import LogisticRegression

    from icml26.sgshift import make_concept_shift

    d = make_concept_shift(n_source=2000, n_target=n_target, p=8, n_informative=3, n_shifted=2,
                           magnitude=1.0, seed=seed)
    return d, LogisticRegression(max_iter=500).fit(d.X_source, d.y_source)


def test_offset_wald_is_the_unpenalised_offset_mle_with_fisher_z():
    from scipy.optimize import minimize
    from scipy.special import expit

    from icml26.sgshift.baselines import OffsetWald
    from icml26.sgshift.sgshift import source_offset

    d, clf = _wald_data()
    wald = OffsetWald(ridge=0.0).fit(d.X_target, d.y_target, source_model=clf, X_source=d.X_source)
    X = (d.X_target - d.X_source.mean(0)) / d.X_source.std(0)
    off = source_offset(clf, d.X_target, "classification")
    y = d.y_target

    def nll(c):
        eta = off + X @ c
        return np.sum(np.logaddexp(0, eta) - y * eta)

    ref = minimize(nll, np.zeros(X.shape[1]), method="BFGS", options={"gtol": 1e-8}).x
    np.testing.assert_allclose(wald.coef_, ref, atol=1e-4)
    prob = expit(off + X @ ref)
    se = np.sqrt(np.diag(np.linalg.inv((X * (prob * (1 - prob))[:, None]).T @ X)))
    np.testing.assert_allclose(wald.z_, ref / se, rtol=1e-3)
    assert set(np.argsort(-wald.entry_score_)[:2]) == set(d.truth)


def test_offset_wald_regression_is_ols_on_the_residual():
    from sklearn.linear_model import LinearRegression

    from icml26.sgshift import make_concept_shift
    from icml26.sgshift.baselines import OffsetWald

    d = make_concept_shift(n_source=1000, n_target=400, p=5, n_informative=2, n_shifted=1,
                           task="regression", seed=1)
    reg = LinearRegression().fit(d.X_source, d.y_source)
    wald = OffsetWald(task="regression", ridge=0.0).fit(d.X_target, d.y_target, source_model=reg,
                                                       X_source=d.X_source)
    X = (d.X_target - d.X_source.mean(0)) / d.X_source.std(0)
    ref = np.linalg.lstsq(X, d.y_target - reg.predict(d.X_target), rcond=None)[0]
    np.testing.assert_allclose(wald.coef_, ref, atol=1e-8)


def test_offset_wald_drops_exactly_collinear_reference_columns():
    from icml26.sgshift.baselines import OffsetWald

    d, clf = _wald_data(seed=2)
    XT = np.column_stack([d.X_target, d.X_target[:, 0] + d.X_target[:, 1]])
    XS = np.column_stack([d.X_source, d.X_source[:, 0] + d.X_source[:, 1]])
    clf2 = type(clf)(max_iter=500).fit(XS, d.y_source)
    wald = OffsetWald().fit(XT, d.y_target, source_model=clf2, X_source=XS)
    assert wald.aliased_features_.size == 1 and wald.z_[wald.aliased_features_[0]] == 0
    assert np.isfinite(wald.z_).all()


def test_offset_wald_bad_inputs():
    from icml26.sgshift.baselines import OffsetWald

    d, clf = _wald_data()
    with pytest.raises(ValueError, match="task"):
        OffsetWald(task="poisson").fit(d.X_target, d.y_target, source_model=clf)
    with pytest.raises(ValueError, match="0/1"):
        OffsetWald().fit(d.X_target, d.y_target + 2, source_model=clf)
    with pytest.raises(ValueError, match="rows"):
        OffsetWald().fit(d.X_target, d.y_target[:-1], source_model=clf)
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LogisticRegression
    with pytest.raises(NotFittedError):
        OffsetWald().fit(d.X_target, d.y_target, source_model=LogisticRegression())
