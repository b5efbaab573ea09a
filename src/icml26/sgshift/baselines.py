"""Baselines of the SGShift paper's simulations: Diff (lasso on the difference of separately
fitted source and target models), SHAP-diff (needs the optional ``shap`` package) and a
WhyShift-style region tree.

Both follow the official simulation scripts of Lyu, Turcan & Wilder, "Explaining Concept
Shift with Interpretable Feature Attribution" (arXiv 2505.20634; Rachel-Lyu/SGShift).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeRegressor

from scipy.special import expit
from scipy.stats import norm
from sklearn.utils.validation import check_is_fitted

from ..core.validation import check_int, check_matrix, check_probability, check_vector
from .sgshift import NONZERO_TOL, _Design, score_selection, source_offset

__all__ = ["DiffLasso", "WhyShiftTree", "ShapDiff", "OffsetWald"]

PROB_EPS = 1e-5  # WhyShift clips probabilities to [1e-5, 1 - 1e-5]


def _split_fit(model, X_source, y_source, X_target, y_target, seed):
    """Fit clones of ``model`` on one half of each domain; return them and the held-out stack."""
    XS_fit, XS_out, yS_fit, _ = train_test_split(X_source, y_source, test_size=0.5,
                                                 random_state=seed)
    XT_fit, XT_out, yT_fit, _ = train_test_split(X_target, y_target, test_size=0.5,
                                                 random_state=seed)
    source_model = clone(model).fit(XS_fit, yS_fit)
    target_model = clone(model).fit(XT_fit, yT_fit)
    return source_model, target_model, np.vstack([XS_out, XT_out])


def _task_of(y):
    return "classification" if np.unique(y).size <= 2 else "regression"


def _check_inputs(model, X_source, y_source, X_target, y_target):
    """Validate the baseline inputs; returns arrays and the task."""
    if model is None:
        raise ValueError("model must be an (unfitted) scikit-learn estimator, got None")
    XS, yS, XT, yT = _check_pair(X_source, y_source, X_target, y_target)
    return XS, yS, XT, yT, _task_of(yT)


def _check_pair(X_source, y_source, X_target, y_target):
    XS = check_matrix(X_source, "X_source", min_samples=4)
    XT = check_matrix(X_target, "X_target", min_samples=4)
    if XS.shape[1] != XT.shape[1]:
        raise ValueError(f"X_source has {XS.shape[1]} features but X_target has {XT.shape[1]}")
    yS = check_vector(y_source, "y_source")
    yT = check_vector(y_target, "y_target")
    if len(yS) != len(XS) or len(yT) != len(XT):
        raise ValueError("X_source/y_source or X_target/y_target lengths differ")
    return XS, yS, XT, yT


class DiffLasso(BaseEstimator):
    """Diff baseline: lasso regression of f_T(x) - f_S(x) on x.

    Split each domain 50/50; fit a clone of ``model`` on one half of the source and of the
    target; on the stacked held-out halves regress the link-scale difference
    ``f_T(x) - f_S(x)`` (logits for classifiers) on x with scikit-learn ``Lasso`` along a
    decreasing ``alphas`` path. Selected = non-zero coefficients at ``alpha``.

    Parameters
    ----------
    model : estimator
        The model class fitted on each domain (unfitted).
    alphas : array-like
        Lasso path (reference: geomspace(1e-5, 100, 29) for Diabetes/COVID).
    alpha : float or None
        Level for ``selected_``; default: the path's median level.
    random_state : int

    Attributes
    ----------
    path_coefs_ : ndarray (L, p)
    entry_score_ : ndarray (p,)
        Fraction of path levels at which each feature is non-zero (the feature-AUROC score).
    selected_ : ndarray of int
    coef_ : ndarray (p,)

    References
    ----------
    Lyu, Turcan & Wilder, arXiv 2505.20634 (the "Diff" baseline).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from icml26.sgshift import make_concept_shift
    >>> from icml26.sgshift.baselines import DiffLasso
    >>> d = make_concept_shift(n_source=1000, n_target=600, p=6, n_informative=3, n_shifted=2,
    ...                        seed=0)
    >>> DiffLasso(LogisticRegression()).fit(d.X_source, d.y_source, d.X_target,
    ...                                      d.y_target).entry_score_.shape
    (6,)
    """

    def __init__(self, model=None, alphas=tuple(np.geomspace(1e-5, 100, 29)), alpha=None,
                 random_state=0):
        self.model = model
        self.alphas = alphas
        self.alpha = alpha
        self.random_state = random_state

    def fit(self, X_source, y_source, X_target, y_target):
        """Fit both domain models and the lasso path of their difference."""
        XS, yS, XT, yT, task = _check_inputs(self.model, X_source, y_source, X_target, y_target)
        alphas = np.sort(np.asarray(self.alphas, dtype=float))[::-1]
        if alphas.ndim != 1 or alphas.size < 1 or np.any(alphas <= 0):
            raise ValueError("alphas must be a 1-D array of positive floats")
        source_model, target_model, X_stack = _split_fit(self.model, XS, yS, XT, yT,
                                                         self.random_state)
        difference = (source_offset(target_model, X_stack, task)
                      - source_offset(source_model, X_stack, task))
        coefs = np.zeros((len(alphas), XS.shape[1]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for k, a in enumerate(alphas):
                coefs[k] = Lasso(alpha=a, max_iter=10000).fit(X_stack, difference).coef_
        self.alphas_ = alphas
        self.path_coefs_ = coefs
        self.entry_score_ = np.mean(np.abs(coefs) > NONZERO_TOL, axis=0)
        level = np.median(alphas) if self.alpha is None else float(self.alpha)
        self.coef_ = Lasso(alpha=level, max_iter=10000).fit(X_stack, difference).coef_
        self.selected_ = np.flatnonzero(np.abs(self.coef_) > NONZERO_TOL)
        self.n_features_in_ = XS.shape[1]
        return self

    def score_features(self, true_idx) -> dict:
        """Feature AUROC of the entry score, and recall/precision of ``selected_``."""
        return score_selection(self.entry_score_, self.selected_, true_idx, self.n_features_in_)


class WhyShiftTree(BaseEstimator):
    """WhyShift-style region tree: where do the separately fitted models disagree?

    For each of ``n_repeats`` random 50/50 splits: fit a clone of ``model`` on a half of
    each domain, fit ``DecisionTreeRegressor(max_depth=6, min_samples_leaf=100,
    min_samples_split=200, min_weight_fraction_leaf=0.05, ccp_alpha=1e-4)`` to
    |p_S(x) - p_T(x)| (regression: |f_S - f_T|) on the stacked held-out halves; a feature is
    selected in that repeat when its importance is > 0. The score is the selection
    frequency over repeats; ``selected_`` = frequency >= ``threshold``.

    Parameters
    ----------
    model : estimator
    n_repeats : int
        Repeats (the reference pools the last 5 simulation repetitions).
    threshold : float
    random_state : int

    Attributes
    ----------
    selection_frequency_, entry_score_ : ndarray (p,)
    importance_ : ndarray (p,)
        Mean tree importance over repeats.
    selected_ : ndarray of int

    References
    ----------
    Liu et al., "On the need for a language describing distribution shifts: illustrations
    on tabular datasets" (WhyShift), NeurIPS 2023; as adapted in arXiv 2505.20634.
    """

    def __init__(self, model=None, n_repeats=5, threshold=0.6, random_state=0):
        self.model = model
        self.n_repeats = n_repeats
        self.threshold = threshold
        self.random_state = random_state

    def fit(self, X_source, y_source, X_target, y_target):
        """Fit the repeats and aggregate the selection frequencies."""
        check_int(self.n_repeats, "n_repeats", min_value=1)
        XS, yS, XT, yT, task = _check_inputs(self.model, X_source, y_source, X_target, y_target)
        hits = np.zeros(XS.shape[1])
        importance = np.zeros(XS.shape[1])
        for r in range(self.n_repeats):
            seed = self.random_state + r
            source_model, target_model, X_stack = _split_fit(self.model, XS, yS, XT, yT, seed)
            if task == "classification":
                gap = np.abs(np.clip(source_model.predict_proba(X_stack)[:, -1], PROB_EPS,
                                     1 - PROB_EPS)
                             - np.clip(target_model.predict_proba(X_stack)[:, -1], PROB_EPS,
                                       1 - PROB_EPS))
            else:
                gap = np.abs(source_model.predict(X_stack) - target_model.predict(X_stack))
            tree = DecisionTreeRegressor(max_depth=6, min_samples_leaf=100,
                                         min_samples_split=200, min_weight_fraction_leaf=0.05,
                                         ccp_alpha=1e-4, random_state=seed).fit(X_stack, gap)
            hits += tree.feature_importances_ > 0
            importance += tree.feature_importances_
        self.selection_frequency_ = hits / self.n_repeats
        self.importance_ = importance / self.n_repeats
        # Frequency first; mean importance breaks ties so the ranking is informative.
        self.entry_score_ = self.selection_frequency_ + 1e-3 * self.importance_
        self.selected_ = np.flatnonzero(self.selection_frequency_ >= self.threshold)
        self.n_features_in_ = XS.shape[1]
        return self

    def score_features(self, true_idx) -> dict:
        """Feature AUROC of the frequency score, and recall/precision of ``selected_``."""
        return score_selection(self.entry_score_, self.selected_, true_idx, self.n_features_in_)


class ShapDiff(BaseEstimator):
    """SHAP-diff baseline: mean |phi_S - phi_T| of SHAP values of separately fitted models.

    Split each domain 50/50, fit a clone of ``model`` on a half of each, explain both on
    the stacked held-out halves with ``shap.Explainer(f, X_stack)`` (f = positive-class
    probability for classifiers, ``predict`` for regressors) and score feature j by
    mean_i |phi_S,ij - phi_T,ij|. Needs the optional ``shap`` package; slow (model-agnostic
    permutation explainer).

    Parameters
    ----------
    model : estimator
    n_explain : int or None
        Explain at most this many stacked rows (random subset; None = all, as the reference).
    random_state : int

    Attributes
    ----------
    entry_score_ : ndarray (p,)
        The SHAP gap (ranking score).
    selected_ : ndarray of int
        Features whose gap exceeds the mean gap (our rule; the reference sweeps every
        threshold of the ranking).

    References
    ----------
    Lundberg & Lee, "A unified approach to interpreting model predictions", NeurIPS 2017;
    the SHAP-diff baseline of arXiv 2505.20634.
    """

    def __init__(self, model=None, n_explain=200, random_state=0):
        self.model = model
        self.n_explain = n_explain
        self.random_state = random_state

    def fit(self, X_source, y_source, X_target, y_target):
        """Fit both domain models and compute the SHAP gap per feature."""
        XS, yS, XT, yT, task = _check_inputs(self.model, X_source, y_source, X_target, y_target)
        try:
            import shap
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("ShapDiff needs the shap package: pip install 'icml26[sgshift]'") from exc
        source_model, target_model, X_stack = _split_fit(self.model, XS, yS, XT, yT,
                                                         self.random_state)
        if self.n_explain is not None and len(X_stack) > self.n_explain:
            rows = np.random.default_rng(self.random_state).choice(len(X_stack), self.n_explain,
                                                                   replace=False)
            X_stack = X_stack[rows]

        def explain(fitted):
            if task == "classification":
                def predict(X):
                    return fitted.predict_proba(X)[:, 1]
            else:
                predict = fitted.predict
            explainer = shap.Explainer(predict, X_stack, seed=self.random_state)
            return np.asarray(explainer(X_stack, silent=True).values)

        gap = np.abs(explain(source_model) - explain(target_model)).mean(axis=0)
        self.entry_score_ = gap
        self.selected_ = np.flatnonzero(gap > gap.mean())
        self.n_features_in_ = XS.shape[1]
        return self

    def score_features(self, true_idx) -> dict:
        """Feature AUROC of the SHAP gap, and recall/precision of ``selected_``."""
        return score_selection(self.entry_score_, self.selected_, true_idx, self.n_features_in_)


class OffsetWald(BaseEstimator):
    """Unpenalised offset GLM on the target with features ranked by their Wald |z|.

    SGShift without its sparsity penalty: the source model's link-scale prediction is the
    offset, ``g(E_T[y|x]) = f_S(x) + x^T delta`` is fitted by maximum likelihood (Newton /
    IRLS for the logistic link, least squares for the identity link) on the same design as
    :class:`~icml26.sgshift.SGShift` (source-standardised, constant columns and one
    reference column per exactly collinear group dropped, no intercept), and feature j is
    scored by ``|z_j| = |delta_j| / se_j`` from the inverse Fisher information. The natural
    competitor of a sparse shift model, and the negative control of the sparsity penalty.

    Parameters
    ----------
    task : {"classification", "regression"}
    level : float
        Two-sided level of the per-feature Wald test behind ``selected_`` (``|z| > z_{1-level/2}``).
    ridge : float
        A tiny ridge added to the information matrix (keeps Newton steps finite under
        quasi-separation; 1e-8 relative to its trace by default).
    max_iter : int
        Newton iterations (with step halving).

    Attributes
    ----------
    coef_ : ndarray (p,)
        delta on the standardised scale (0 for dropped columns).
    z_ : ndarray (p,)
        Wald statistics (0 for dropped columns).
    entry_score_ : ndarray (p,)
        ``|z_|``, the ranking used for the feature AUROC.
    selected_ : ndarray of int
    aliased_features_ : ndarray of int
        Reference columns dropped from exactly collinear groups.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from icml26.sgshift import make_concept_shift
    >>> d = make_concept_shift(n_source=1000, n_target=600, p=6, n_informative=3, n_shifted=2,
    ...                        magnitude=1.5, seed=0)
    >>> clf = LogisticRegression().fit(d.X_source, d.y_source)
    >>> wald = OffsetWald().fit(d.X_target, d.y_target, source_model=clf, X_source=d.X_source)
    >>> sorted(np.argsort(-wald.entry_score_)[:2].tolist()) == sorted(d.truth.tolist())
    True
    """

    def __init__(self, task="classification", level=0.05, ridge=1e-8, max_iter=100):
        self.task = task
        self.level = level
        self.ridge = ridge
        self.max_iter = max_iter

    def fit(self, X_target, y_target, source_model, X_source=None):
        """Fit the offset GLM on the target sample; ``X_source`` gives the standardisation."""
        if self.task not in ("classification", "regression"):
            raise ValueError(f"task must be 'classification' or 'regression', got {self.task!r}")
        level = check_probability(self.level, "level")
        max_iter = check_int(self.max_iter, "max_iter", min_value=1)
        XT = check_matrix(X_target, "X_target", min_samples=4)
        y = check_vector(y_target, "y_target")
        if len(y) != len(XT):
            raise ValueError(f"X_target has {len(XT)} rows but y_target has {len(y)}")
        check_is_fitted(source_model)
        if self.task == "classification" and not np.isin(y, (0, 1)).all():
            raise ValueError("y_target must be 0/1 for task='classification'")
        XS = XT if X_source is None else check_matrix(X_source, "X_source")
        if XS.shape[1] != XT.shape[1]:
            raise ValueError(f"X_source has {XS.shape[1]} features but X_target has {XT.shape[1]}")
        design = _Design("linear", standardize=True).fit(XS, XT)
        D = design.transform(XT)
        offset = source_offset(source_model, XT, self.task)
        coef, info = self._solve(D, y.astype(float), offset, max_iter)
        cov = np.linalg.pinv(info)
        se = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
        p = XT.shape[1]
        self.coef_, self.z_ = np.zeros(p), np.zeros(p)
        self.coef_[design.column_feature_] = coef
        self.z_[design.column_feature_] = coef / se
        self.entry_score_ = np.abs(self.z_)
        self.selected_ = np.flatnonzero(self.entry_score_ > norm.ppf(1 - level / 2))
        self.aliased_features_ = design.aliased_
        self.n_features_in_ = p
        return self

    def _solve(self, D, y, offset, max_iter):
        n, d = D.shape
        if self.task == "regression":
            info = D.T @ D
            info += self.ridge * np.trace(info) / max(d, 1) * np.eye(d)
            coef = np.linalg.solve(info, D.T @ (y - offset))
            sigma2 = np.sum((y - offset - D @ coef) ** 2) / max(n - d, 1)
            return coef, info / sigma2

        def nll(c):
            eta = offset + D @ c
            return float(np.sum(np.logaddexp(0.0, eta) - y * eta))

        coef = np.zeros(d)
        current = nll(coef)
        for _ in range(max_iter):
            prob = expit(offset + D @ coef)
            info = (D * (prob * (1 - prob))[:, None]).T @ D
            info += self.ridge * max(np.trace(info), 1.0) / max(d, 1) * np.eye(d)
            step = np.linalg.solve(info, D.T @ (y - prob))
            t = 1.0
            while t > 1e-6 and nll(coef + t * step) > current:
                t /= 2
            coef = coef + t * step
            new = nll(coef)
            if abs(current - new) < 1e-10 * max(1.0, abs(current)):
                current = new
                break
            current = new
        prob = expit(offset + D @ coef)
        info = (D * (prob * (1 - prob))[:, None]).T @ D
        info += self.ridge * max(np.trace(info), 1.0) / max(d, 1) * np.eye(d)
        return coef, info

    def score_features(self, true_idx, features=None) -> dict:
        """Feature AUROC of |z|, and recall/precision of ``selected_``."""
        check_is_fitted(self, "z_")
        return score_selection(self.entry_score_, self.selected_, true_idx, self.n_features_in_,
                               features=features)
