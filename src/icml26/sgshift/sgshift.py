"""SGShift: attribute concept shift to a sparse set of features with an offset GLM.

Reference
---------
Ruiqi Lyu, Alistair Turcan, Bryan Wilder, "Explaining Concept Shift with Interpretable
Feature Attribution", arXiv 2505.20634 (2025). Official code: ``Rachel-Lyu/SGShift`` (MIT).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from scipy.special import expit, logit
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import KFold
from sklearn.preprocessing import SplineTransformer
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_is_fitted

from ..core.validation import (check_choice, check_int, check_matrix, check_same_length,
                               check_scalar_in, check_vector)
from .knockoffs import (KNOCKOFF_METHODS, GaussianKnockoffSampler, derandomized_selection_set,
                        knockoff_w)
from .offset_glm import (lambda_grid, lambda_max, offset_glm_path,
                         solve_offset_glm)

__all__ = ["SGShift", "SGShiftA", "SGShiftK", "source_offset", "score_selection", "entry_scores",
           "collinear_groups", "identifiable_truth"]

NONZERO_TOL = 1e-4          # |coefficient| (or group norm) above which a feature counts as selected
PROB_CLIP = 1e-6            # source probabilities are clipped to [PROB_CLIP, 1 - PROB_CLIP]
CV_SEED = 42                # the reference code's KFold seed
SPLINE_KNOTS, SPLINE_DEGREE = 5, 3
COLLINEAR_TOL = 1e-8        # residual norm / column norm below which a column is an exact
                            # linear combination of the others (and of the constant)
MIN_TARGET = 10


def source_offset(model, X, task: str) -> np.ndarray:
    """Link-scale offset f(x) of a fitted source model.

    Classification: logit of ``predict_proba(X)[:, 1]`` (or ``expit(decision_function)``
    when the model has no ``predict_proba``), clipped to [1e-6, 1 - 1e-6]. Regression:
    ``predict(X)``.
    """
    if task == "classification":
        if hasattr(model, "predict_proba"):
            prob = np.asarray(model.predict_proba(X), dtype=float)[:, 1]
        else:
            prob = expit(np.asarray(model.decision_function(X), dtype=float))
        return logit(np.clip(prob, PROB_CLIP, 1 - PROB_CLIP))
    return np.asarray(model.predict(X), dtype=float).ravel()


def entry_scores(path_coefs: np.ndarray, column_feature: np.ndarray, n_features: int) -> np.ndarray:
    """Fraction of path steps at which each feature's coefficient group is non-zero.

    Parameters
    ----------
    path_coefs : ndarray (L, d)
        Coefficients along a decreasing penalty path.
    column_feature : ndarray of int (d,)
        Feature index of each column (-1 for columns that belong to no feature).
    n_features : int
    """
    path_coefs = np.atleast_2d(path_coefs)
    scores = np.zeros(n_features)
    mask = column_feature >= 0
    for row in path_coefs:
        norms = np.sqrt(np.bincount(column_feature[mask], weights=row[mask] ** 2,
                                    minlength=n_features))
        scores += norms > NONZERO_TOL
    return scores / len(path_coefs)


def score_selection(scores, selected, truth, n_features: int, features=None) -> dict:
    """Feature-identification metrics against a planted set.

    Parameters
    ----------
    scores : array-like (n_features,)
        Ranking score per feature (higher = more likely shifted).
    selected : array-like of int
        The selected features.
    truth : array-like of int
        The truly shifted features.
    n_features : int
    features : array-like of int, optional
        Evaluate on these features only (e.g. the identifiable ones, see
        :func:`identifiable_truth`); selections and truth outside them are ignored.

    Returns
    -------
    dict
        ``auroc`` (``roc_auc_score(1{j in truth}, scores)``), ``recall``, ``precision``
        (NaN for an empty selection: the precision of no selection is undefined),
        ``tp``, ``fp``, ``fn`` and ``n_selected``.
    """
    features = (np.arange(n_features) if features is None
                else np.asarray(sorted(set(int(f) for f in features)), dtype=int))
    universe = set(features.tolist())
    truth = np.asarray(sorted(set(int(t) for t in truth) & universe), dtype=int)
    labels = np.isin(features, truth).astype(int)
    scores = np.asarray(scores, dtype=float)[features]
    auroc = (float(roc_auc_score(labels, scores)) if 0 < labels.sum() < features.size
             else float("nan"))
    sel = set(int(s) for s in np.asarray(selected).ravel()) & universe
    tp = len(sel & set(truth.tolist()))
    fp = len(sel) - tp
    fn = len(truth) - tp
    return {"auroc": auroc, "recall": tp / len(truth) if len(truth) else float("nan"),
            "precision": tp / len(sel) if sel else float("nan"), "tp": tp, "fp": fp,
            "fn": fn, "n_selected": len(sel)}


def identifiable_truth(X, shift_coef, aliased, tol: float = 1e-6):
    """The planted shift re-expressed on the features left after dropping aliased columns.

    When ``aliased`` reference columns are exact linear combinations of other columns (and the
    constant), a planted shift ``X @ shift_coef`` is only identified up to those relations:
    ``Home = -Transferred`` makes a shift of ``Home`` a shift of ``Transferred``, and equal
    planted shifts on both cancel. The planted shift is projected (least squares, with a
    constant) on the kept columns; a kept feature is truly shifted when its coefficient there is
    non-zero (above ``tol`` times the largest planted |coefficient|).

    Parameters
    ----------
    X : ndarray (n, p)
        The target sample the shift model is fitted on (same scale as ``shift_coef``).
    shift_coef : ndarray (p,)
        Planted shift coefficients.
    aliased : array-like of int
        Dropped reference columns (``SGShift.aliased_features_``).
    tol : float

    Returns
    -------
    features : ndarray of int
        The kept (identifiable) features.
    truth : ndarray of int
        The kept features carrying a non-zero part of the planted shift.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.array([0., 1, 1, 0, 1, 0]); X = np.column_stack([t, 1 - t, np.arange(6.)])
    >>> identifiable_truth(X, np.array([1.0, -1.0, 0.0]), aliased=[1])
    (array([0, 2]), array([0]))
    >>> identifiable_truth(X, np.array([1.0, 1.0, 0.0]), aliased=[1])[1]   # cancels
    array([], dtype=int64)
    """
    X = np.asarray(X, dtype=float)
    shift_coef = np.asarray(shift_coef, dtype=float)
    features = np.setdiff1d(np.arange(X.shape[1]), np.asarray(aliased, dtype=int))
    Z = X[:, features] - X[:, features].mean(axis=0)
    target = X @ shift_coef
    gamma = np.linalg.lstsq(Z, target - target.mean(), rcond=None)[0]
    scale = max(float(np.max(np.abs(shift_coef))), 1e-300)
    return features, features[np.abs(gamma) > tol * scale]


def collinear_groups(X, tol: float = COLLINEAR_TOL):
    """Exactly collinear column groups of ``X`` (with the constant) and one reference per dependency.

    Columns are visited in order; a column whose centred values lie in the span of the
    centred columns kept before it (relative residual norm below ``tol``) is a *reference*
    column: it is an exact linear combination of those columns and the constant, so its
    coefficient cannot be told apart from theirs. One-hot blocks that sum to one (and a pair
    with ``a = 1 - b``) are the usual case; the last column of the block is the reference.

    Parameters
    ----------
    X : ndarray (n, d)
    tol : float

    Returns
    -------
    groups : list of tuple of int
        Column indices of each connected collinear group (sorted), in order of first column.
    references : ndarray of int
        The dependent columns (one per independent linear relation); dropping them leaves a
        design of full column rank.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([1., 0, 0, 1, 0, 1]); b = np.array([0., 1, 0, 0, 1, 0])
    >>> X = np.column_stack([a, b, 1 - a - b, np.arange(6.)])
    >>> collinear_groups(X)
    ([(0, 1, 2)], array([2]))
    """
    X = np.asarray(X, dtype=float)
    Z = X - X.mean(axis=0)
    norms = np.linalg.norm(Z, axis=0)
    basis, kept, references = [], [], []
    parent = list(range(X.shape[1]))

    def root(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for j in range(X.shape[1]):
        if norms[j] == 0:
            continue
        residual = Z[:, j].copy()
        for _ in range(2):                      # Gram-Schmidt with one re-orthogonalisation
            for q in basis:
                residual -= (q @ residual) * q
        if np.linalg.norm(residual) <= tol * norms[j]:
            coef = np.linalg.lstsq(Z[:, kept], Z[:, j], rcond=None)[0]
            scaled = np.abs(coef) * norms[kept]
            for k in np.asarray(kept)[scaled > 1e-6 * norms[j]]:
                parent[root(int(k))] = root(j)
            references.append(j)
        else:
            basis.append(residual / np.linalg.norm(residual))
            kept.append(j)
    members: dict = {}
    for j in range(X.shape[1]):
        members.setdefault(root(j), []).append(j)
    groups = sorted(tuple(m) for m in members.values() if len(m) > 1)
    return groups, np.asarray(references, dtype=int)


class _Design:
    """Maps raw features to the penalised design: standardise, drop constants and (by default)
    one reference column per exactly collinear group, optional splines."""

    def __init__(self, basis: str, standardize: bool, collinear: str = "drop"):
        self.basis = basis
        self.standardize = standardize
        self.collinear = collinear

    def fit(self, X_reference: np.ndarray, X_target: np.ndarray) -> "_Design":
        p = X_reference.shape[1]
        self.mean_ = X_reference.mean(axis=0) if self.standardize else np.zeros(p)
        scale = X_reference.std(axis=0) if self.standardize else np.ones(p)
        target_constant = np.ptp(X_target, axis=0) == 0
        self.nonconstant_ = np.flatnonzero((scale > 0) & ~target_constant)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        groups, refs = collinear_groups(X_target[:, self.nonconstant_])
        self.collinear_groups_ = [tuple(int(self.nonconstant_[c]) for c in g) for g in groups]
        self.aliased_ = (self.nonconstant_[refs] if self.collinear == "drop"
                         else np.zeros(0, dtype=int))
        self.kept_ = np.setdiff1d(self.nonconstant_, self.aliased_)
        self.splines_ = {}
        column_feature = []
        ref = (X_reference - self.mean_) / self.scale_
        for j in self.kept_:
            is_binary = np.unique(X_reference[:, j]).size <= 2
            if self.basis == "spline" and not is_binary:
                spline = SplineTransformer(n_knots=SPLINE_KNOTS, degree=SPLINE_DEGREE)
                basis = spline.fit_transform(ref[:, [j]])
                self.splines_[j] = (spline, basis.mean(axis=0))
                column_feature += [j] * basis.shape[1]
            else:
                column_feature.append(j)
        self.column_feature_ = np.asarray(column_feature, dtype=int)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        Z = (X - self.mean_) / self.scale_
        blocks = []
        for j in self.kept_:
            if j in self.splines_:
                spline, centre = self.splines_[j]
                blocks.append(spline.transform(Z[:, [j]]) - centre)
            else:
                blocks.append(Z[:, [j]])
        return np.hstack(blocks) if blocks else np.zeros((X.shape[0], 0))


def _lam_spec(lam):
    """Validate ``lam``: "cv", a positive float, or a 1-D array of positive floats."""
    if isinstance(lam, str):
        check_choice(lam, "lam", ["cv"])
        return lam
    if isinstance(lam, numbers.Real) and not isinstance(lam, bool):
        return check_scalar_in(lam, "lam", low=0.0, low_inclusive=False)
    arr = np.asarray(lam, dtype=float)
    if arr.ndim != 1 or arr.size < 1 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"lam must be 'cv', a positive float or a 1-D array of positive "
                         f"floats, got {lam!r}")
    return np.sort(arr)[::-1]


class SGShift(BaseEstimator):
    """Sparse offset model that explains concept shift by a few features (SGShift).

    Keeps a fitted source model ``f_S`` fixed as an offset on the link scale and fits,
    on the target sample, a sparse additive correction
    ``g(E_T[y | x]) = f_S(x) + sum_j h_j(x_j)``; features with ``h_j != 0`` are the shifted
    features. ``absorption=True`` adds a source-side sparse term fitted on source + target
    (SGShift-A); ``knockoffs=True`` selects with derandomised model-X knockoffs (SGShift-K;
    with absorption, SGShift-KA).

    Parameters
    ----------
    task : {"auto", "classification", "regression"}
        ``"auto"``: classification when ``y_target`` has at most two distinct values or
        ``source_model`` is a classifier (then a ``y_target`` with more than two classes is
        refused: multiclass concept shift is not supported).
    lam : "cv", float or array-like
        ``"cv"``: automatic path (``n_lambdas`` levels from lambda_max down to
        ``lambda_max * lambda_min_ratio``) and the BIC-type 5-fold CV rule of the reference
        code; an array: that path, with the same CV rule; a float: one fit at that level.
    n_lambdas : int
    lambda_min_ratio : float in (0, 1)
    absorption : bool
        Fit the stacked source/target model (needs ``X_source``, ``y_source``).
    absorption_ratio : float > 0
        lambda_beta = absorption_ratio * lambda_delta (0.9 in the reference).
    knockoffs : bool
        Derandomised knockoff selection (needs ``X_source``, ``y_source``; refits clones
        of ``source_model`` on bootstrap halves of the source).
    n_bootstraps : int
        Knockoff runs B.
    v : int
        Per-run PFER parameter of the derandomised filter.
    threshold : float in (0, 1]
        Selection-frequency threshold eta.
    knockoff_method : {"equicorrelated", "mvr", "sdp", "maxent"}
    basis : {"linear", "spline"}
        ``"spline"`` (extension, not in the reference code): cubic B-splines (5 knots,
        7 centred columns) per continuous feature with a group-lasso penalty
        ``lam * sqrt(q_j) ||theta_j||``; binary features stay linear.
    fit_intercept : bool
        Add an unpenalised target intercept (off by default: the offset carries it).
    standardize : bool
        Standardise features with the source mean/std (target's when no source given).
    cv : int
        Folds of the lambda selection.
    allow_empty : bool
        Allow the CV rule to choose an empty selection (default; the reference code scores
        an empty model +inf, so it never returns one: ``allow_empty=False`` mimics it).
    collinear : {"drop", "keep"}
        ``"drop"`` (default, our fix; not in the reference code): in each group of exactly
        collinear features of the target sample (one-hot blocks that sum to one, ``a = 1 - b``
        pairs), drop one reference column (the last in column order) from the shift model, with
        a warning. Without it the minimum-L1 solution can route a shift of the planted columns
        through an unplanted member of the group (e.g. ``E + El = 1 - U``). ``"keep"``: the
        reference code's design (every column kept; the groups are only reported).
    max_iter, tol : int, float
        FISTA limits per penalty level.
    force : bool
        Run knockoffs even when ``n_target < 2 * p``.
    random_state : int, numpy Generator or None
        Seeds bootstraps, knockoff draws and column permutations.

    Attributes
    ----------
    task_ : str
    classes_ : ndarray (classification)
    n_features_in_ : int
    feature_names_in_ : ndarray (when X had column names)
    lambda_ : float
        The chosen penalty level.
    path_ : dict
        ``lambdas`` (L,), ``coefs`` (L, p) of delta (linear basis), ``cv_scores`` (L,) (mean
        held-out BIC-type score; None for a single lambda) and ``bic`` (L,) (in-sample).
    shift_coef_ : ndarray (p,) or (p, q)
        delta at ``lambda_`` on the standardised scale (zeros for unselected/dropped features).
    absorb_coef_ : ndarray or None
        beta (absorption only).
    intercept_ : float
    selected_ : ndarray of int
        Indices of the shifted features. ``selected_names_`` when names are known.
    entry_score_ : ndarray (p,)
        Fraction of path steps at which the feature is in the model (knockoffs: the
        selection frequency).
    selection_frequency_ : ndarray (p,) or None
        Knockoff selection frequency pi_j.
    dropped_features_ : ndarray of int
        Features constant in the target (or in the standardisation reference).
    collinear_groups_ : list of tuple
        Exactly collinear feature groups found in the target sample (names when known).
    aliased_features_ : ndarray of int
        Reference columns dropped from the shift model (``collinear="drop"``): coefficient 0,
        entry score 0; their shift is expressed by the rest of their group.

    Notes
    -----
    Basic: delta = argmin (1/n_T) sum_T loss(f(x) + x^T delta, y) + lam ||delta||_1;
    loss = log(1 + e^eta) - y eta (classification) or (eta - y)^2 (regression).
    Absorption: (beta, delta) = argmin (1/(n_S + n_T)) [sum_S loss(f + x^T beta) +
    sum_T loss(f + x^T (beta + delta))] + 0.9 lam ||beta||_1 + lam ||delta||_1.
    CV score per held-out fold: 2 dev + k log n (classification) or
    n log(RSS/n + 1e-12) + k log n (regression), k = number of non-zero coefficients.
    Knockoffs: for b = 1..B, refit the source model on a bootstrap half, draw Gaussian
    knockoffs of the target, solve the lasso on the permuted [X, X~] at ``lambda_``,
    W_j = |Z_j| - |Z_{j+p}|, keep the positive W ranked before the v-th negative;
    pi_j = frequency, selected = {pi_j >= threshold}; then refit delta on the selection.

    References
    ----------
    R. Lyu, A. Turcan, B. Wilder, "Explaining Concept Shift with Interpretable Feature
    Attribution", arXiv 2505.20634 (2025).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from icml26.sgshift import SGShift, make_concept_shift
    >>> data = make_concept_shift(n_source=2000, n_target=800, p=10, n_informative=4,
    ...                           n_shifted=2, magnitude=1.5, seed=0)
    >>> clf = LogisticRegression().fit(data.X_source, data.y_source)
    >>> est = SGShift().fit(data.X_target, data.y_target, source_model=clf)
    >>> set(data.truth) <= set(est.selected_)
    True
    """

    def __init__(self, task="auto", lam="cv", n_lambdas=25, lambda_min_ratio=1e-3,
                 absorption=False, absorption_ratio=0.9, knockoffs=False, n_bootstraps=20,
                 v=3, threshold=0.5, knockoff_method="equicorrelated", basis="linear",
                 fit_intercept=False, standardize=True, cv=5, allow_empty=True,
                 collinear="drop", max_iter=2000, tol=1e-6, force=False, random_state=None):
        self.task = task
        self.lam = lam
        self.n_lambdas = n_lambdas
        self.lambda_min_ratio = lambda_min_ratio
        self.absorption = absorption
        self.absorption_ratio = absorption_ratio
        self.knockoffs = knockoffs
        self.n_bootstraps = n_bootstraps
        self.v = v
        self.threshold = threshold
        self.knockoff_method = knockoff_method
        self.basis = basis
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.cv = cv
        self.allow_empty = allow_empty
        self.collinear = collinear
        self.max_iter = max_iter
        self.tol = tol
        self.force = force
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        check_choice(self.task, "task", ["auto", "classification", "regression"])
        self._lam = _lam_spec(self.lam)
        check_int(self.n_lambdas, "n_lambdas", min_value=2)
        check_scalar_in(self.lambda_min_ratio, "lambda_min_ratio", low=0.0, high=1.0,
                        low_inclusive=False, high_inclusive=False)
        check_scalar_in(self.absorption_ratio, "absorption_ratio", low=0.0, low_inclusive=False)
        check_int(self.n_bootstraps, "n_bootstraps", min_value=1)
        check_int(self.v, "v", min_value=1)
        check_scalar_in(self.threshold, "threshold", low=0.0, high=1.0, low_inclusive=False)
        check_choice(self.knockoff_method, "knockoff_method", KNOCKOFF_METHODS)
        check_choice(self.basis, "basis", ["linear", "spline"])
        check_int(self.cv, "cv", min_value=2)
        check_choice(self.collinear, "collinear", ["drop", "keep"])
        check_int(self.max_iter, "max_iter", min_value=1)
        check_scalar_in(self.tol, "tol", low=0.0, low_inclusive=False)
        if self.knockoffs and self.basis != "linear":
            raise ValueError("knockoffs=True supports basis='linear' only")
        if self.knockoffs and not isinstance(self._lam, (str, float)):
            raise ValueError("with knockoffs=True, lam must be 'cv' or a float (the fixed "
                             "knockoff penalty), got an array")

    def _encode_y(self, y, name):
        if self.task_ == "regression":
            return y.astype(float)
        if not np.all(np.isin(y, self.classes_)):
            raise ValueError(f"{name} has labels {np.unique(y)[:5]} outside the target "
                             f"classes {self.classes_}")
        return (y == self.classes_[1]).astype(float)

    def _resolve_task(self, y, source_model=None):
        labels = np.unique(y)
        task = self.task
        logistic_model = source_model is not None and (
            is_classifier(source_model) or hasattr(source_model, "predict_proba"))
        if task == "auto":
            # A classifier's offset is a logit: y is then a class label, never a regression
            # target, whatever its number of distinct values.
            task = "classification" if labels.size <= 2 or logistic_model else "regression"
        if task == "classification":
            if labels.size > 2:
                origin = (" (task='auto' with a classifier as source_model)"
                          if self.task == "auto" else "")
                raise ValueError(f"y_target has {labels.size} distinct values; the logistic "
                                 f"(classification) outcome{origin} needs binary labels — "
                                 "multiclass concept shift is not supported")
            if labels.size < 2:
                raise ValueError("y_target has a single class; classification needs both "
                                 "classes in the target sample")
            self.classes_ = labels
        self.task_ = task

    def _check_model(self, model, p, name="source_model"):
        if not hasattr(model, "predict"):
            raise TypeError(f"{name} must be a fitted scikit-learn estimator, got "
                            f"{type(model).__name__}")
        check_is_fitted(model)
        n_in = getattr(model, "n_features_in_", None)
        if n_in is not None and n_in != p:
            raise ValueError(f"{name} was fitted on {n_in} features but X_target has {p}; "
                             "expected the same features")

    def _offset(self, model, X, name):
        f = source_offset(model, X, self.task_)
        if f.shape != (len(f),) or not np.all(np.isfinite(f)):
            raise ValueError(f"the offset of {name} contains NaN or infinity")
        return f

    # ------------------------------------------------------------------ fit
    def fit(self, X_target, y_target, source_model=None, offset=None, X_source=None,
            y_source=None):
        """Fit the shift model on the target sample.

        Parameters
        ----------
        X_target : array-like (n_T, p)
        y_target : array-like (n_T,)
        source_model : fitted estimator, optional
            The source model whose link-scale prediction is the offset. Required unless
            ``offset`` is given; required for absorption and knockoffs.
        offset : array-like (n_T,), optional
            Precomputed link-scale offset f(x) on ``X_target`` (instead of ``source_model``).
        X_source, y_source : array-like, optional
            Source sample (absorption, knockoffs; also the standardisation reference).

        Returns
        -------
        self
        """
        self._check_params()
        X_raw = X_target
        X = check_matrix(X_target, "X_target", min_samples=MIN_TARGET)
        y = check_vector(y_target, "y_target", dtype=None)
        check_same_length(X_target=X, y_target=y)
        if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):
            raise ValueError("y_target contains NaN or infinity; expected finite values")
        n, p = X.shape
        self.n_features_in_ = p
        if hasattr(X_raw, "columns"):
            self.feature_names_in_ = np.asarray(X_raw.columns, dtype=object)
        self._resolve_task(y, source_model)
        y_enc = self._encode_y(y, "y_target")

        needs_source = self.absorption or self.knockoffs
        if source_model is None and offset is None:
            raise ValueError("pass source_model (a fitted estimator) or offset (link-scale "
                             "predictions on X_target)")
        if needs_source and (source_model is None or X_source is None or y_source is None):
            raise ValueError("absorption/knockoffs need source_model, X_source and y_source")
        if source_model is not None:
            self._check_model(source_model, p)
        self.source_model_ = source_model
        if offset is not None:
            f_target = check_vector(offset, "offset")
            check_same_length(X_target=X, offset=f_target)
        else:
            f_target = self._offset(source_model, X_raw, "source_model on X_target")

        XS = yS = fS = None
        if X_source is not None:
            XS = check_matrix(X_source, "X_source")
            if XS.shape[1] != p:
                raise ValueError(f"X_source has {XS.shape[1]} features but X_target has {p}; "
                                 "expected the same features")
            if y_source is not None:
                yS = check_vector(y_source, "y_source", dtype=None)
                check_same_length(X_source=XS, y_source=yS)
                yS = self._encode_y(yS, "y_source")
            if source_model is not None and needs_source:
                fS = self._offset(source_model, X_source, "source_model on X_source")

        self._design = _Design(self.basis, self.standardize, self.collinear).fit(
            XS if XS is not None else X, X)
        self.dropped_features_ = np.setdiff1d(np.arange(p), self._design.nonconstant_)
        if self.dropped_features_.size == p:
            raise ValueError("every column of X_target is constant; expected at least one "
                             "feature that varies in the target sample")
        if self.dropped_features_.size:
            warnings.warn(f"constant features dropped from the shift model (coefficient 0): "
                          f"{self._names(self.dropped_features_)}", UserWarning, stacklevel=2)
        self.collinear_groups_ = [tuple(self._names(g)) for g in self._design.collinear_groups_]
        self.aliased_features_ = self._design.aliased_
        if self.aliased_features_.size:
            warnings.warn("exactly collinear features in X_target "
                          f"{self.collinear_groups_}: reference columns "
                          f"{self._names(self.aliased_features_)} dropped from the shift model "
                          "(their shift is carried by the rest of their group; "
                          "collinear='keep' keeps them)", UserWarning, stacklevel=2)
        elif self.collinear_groups_:
            warnings.warn("exactly collinear features in X_target (the minimum-L1 fit picks "
                          f"among them arbitrarily): {self.collinear_groups_}", UserWarning,
                          stacklevel=2)
        DT = self._design.transform(X)
        if self.knockoffs and n < 2 * DT.shape[1] and not self.force:
            raise ValueError(f"knockoffs need n_target >= 2 * p for a usable covariance "
                             f"estimate (n_target={n}, p={DT.shape[1]}); pass force=True to "
                             "run anyway")
        DS = self._design.transform(XS) if (XS is not None and needs_source) else None
        self._family = "binomial" if self.task_ == "classification" else "gaussian"
        rng = self.random_state if isinstance(self.random_state, np.random.Generator) \
            else np.random.default_rng(self.random_state)

        # --- path and lambda selection
        problem = _Problem(DT, y_enc, f_target, self._design.column_feature_, self.absorption,
                           self.absorption_ratio, self.fit_intercept, DS, yS, fS)
        lam = self._lam
        cv_scores = None
        if isinstance(lam, float):
            lambdas = np.array([lam])
        else:
            if isinstance(lam, str):
                lam_top = lambda_max(*problem.arrays(), family=self._family,
                                     groups=problem.groups, group_weights=problem.weights)
                lambdas = lambda_grid(lam_top, self.n_lambdas, self.lambda_min_ratio)
            else:
                lambdas = lam
        path = offset_glm_path(*problem.arrays(), lambdas, family=self._family,
                               groups=problem.groups, group_weights=problem.weights,
                               max_iter=self.max_iter, tol=self.tol)
        if len(lambdas) > 1:
            cv_scores = self._cv_scores(problem, lambdas)
            best = int(np.argmin(cv_scores))
        else:
            best = 0
        self.lambda_ = float(lambdas[best])
        delta_path = path.coefs[:, problem.delta_cols]
        self.path_ = {"lambdas": lambdas, "coefs": self._per_feature(delta_path),
                      "cv_scores": cv_scores, "bic": self._in_sample_bic(problem, path.coefs)}
        coef = path.coefs[best]
        self.entry_score_ = entry_scores(delta_path, self._design.column_feature_, p)
        self.selection_frequency_ = None
        if self.knockoffs:
            coef = self._fit_knockoffs(problem, rng, source_model, X_raw, X_source, y_source,
                                       yS, DT, DS, f_target)
        else:
            norms = entry_scores(coef[problem.delta_cols], self._design.column_feature_, p)
            self.selected_ = np.flatnonzero(norms > 0)
        self._theta = coef
        self._problem_layout = problem.layout()
        self.shift_coef_ = self._per_feature(coef[problem.delta_cols])
        self.absorb_coef_ = (self._per_feature(coef[problem.beta_cols]) if self.absorption
                             else None)
        self.intercept_ = float(coef[problem.intercept_col]) if self.fit_intercept else 0.0
        if hasattr(self, "feature_names_in_"):
            self.selected_names_ = self.feature_names_in_[self.selected_]
        return self

    # ------------------------------------------------------------------ helpers
    def _names(self, idx):
        if hasattr(self, "feature_names_in_"):
            return [str(self.feature_names_in_[i]) for i in idx]
        return [int(i) for i in idx]

    def _per_feature(self, block):
        """Map design columns to features: (..., p) for linear, (..., p, q) for splines."""
        cf = self._design.column_feature_
        p = self.n_features_in_
        block = np.asarray(block)
        if self.basis == "linear":
            out = np.zeros(block.shape[:-1] + (p,))
            out[..., cf] = block
            return out
        q = max(np.bincount(cf, minlength=p).max(), 1)
        out = np.zeros(block.shape[:-1] + (p, q))
        position = np.zeros(p, dtype=int)
        for col, j in enumerate(cf):
            out[..., j, position[j]] = block[..., col]
            position[j] += 1
        return out

    def _information_score(self, eta, y, k_nonzero):
        """BIC-type score of the reference code: 2 NLL + k log n, or n log(RSS/n) + k log n."""
        n = len(y)
        if self._family == "binomial":
            fit_term = 2.0 * float(np.sum(np.logaddexp(0.0, eta) - y * eta))
        else:
            fit_term = n * np.log(float(np.sum((eta - y) ** 2)) / n + 1e-12)
        return fit_term + k_nonzero * np.log(n)

    def _in_sample_bic(self, problem, coefs):
        """BIC of each path solution on the data it was fitted on (stacked for absorption)."""
        X, y, offset = problem.arrays()
        return np.array([self._information_score(
            offset + X @ coef, y, int(np.sum(np.abs(coef[problem.penalised_cols]) > NONZERO_TOL)))
            for coef in coefs])

    def _cv_scores(self, problem, lambdas):
        folds = KFold(n_splits=self.cv, shuffle=True, random_state=CV_SEED)
        scores = np.zeros((self.cv, len(lambdas)))
        n_target = problem.n_target
        for k, (train, test) in enumerate(folds.split(np.zeros(n_target))):
            sub = problem.subset(train)
            path = offset_glm_path(*sub.arrays(), lambdas, family=self._family,
                                   groups=sub.groups, group_weights=sub.weights,
                                   max_iter=self.max_iter, tol=self.tol, warn=False)
            for i, coef in enumerate(path.coefs):
                eta = problem.target_eta(coef, test)
                y_val = problem.y_target[test]
                k_nonzero = int(np.sum(np.abs(coef[problem.penalised_cols]) > NONZERO_TOL))
                score = self._information_score(eta, y_val, k_nonzero)
                if k_nonzero == 0 and not self.allow_empty:
                    score = np.inf
                scores[k, i] = score
        return scores.mean(axis=0)

    def _fit_knockoffs(self, problem, rng, source_model, X_raw, X_source, y_source, yS, DT,
                       DS, f_target):
        n_t, d = DT.shape
        lam = self.lambda_
        sampler = GaussianKnockoffSampler(self.knockoff_method).fit(DT)
        n_source = len(yS)
        counts = np.zeros(d)
        for _ in range(self.n_bootstraps):
            boot = rng.integers(0, n_source, size=n_source // 2)
            model_b = clone(source_model).fit(_safe_indexing(X_source, boot),
                                              _safe_indexing(np.asarray(y_source), boot))
            f_b = self._offset(model_b, X_raw, "bootstrap source model")
            knock = sampler.sample(DT, rng)
            perm = rng.permutation(2 * d)
            augmented = np.hstack([DT, knock])[:, perm]
            if self.absorption:
                f_bs = self._offset(model_b, _safe_indexing(X_source, boot),
                                    "bootstrap source model")
                design = np.vstack([np.hstack([DS[boot], np.zeros((len(boot), 2 * d))]),
                                    np.hstack([DT, augmented])])
                weights = np.r_[np.full(d, self.absorption_ratio), np.ones(2 * d)]
                coef, _, _ = solve_offset_glm(design, np.r_[yS[boot], problem.y_target],
                                              np.r_[f_bs, f_b], lam, family=self._family,
                                              group_weights=weights, max_iter=self.max_iter,
                                              tol=self.tol)
                z_perm = coef[d:]
            else:
                design, weights = augmented, np.ones(2 * d)
                if self.fit_intercept:
                    design = np.hstack([design, np.ones((n_t, 1))])
                    weights = np.r_[weights, 0.0]
                coef, _, _ = solve_offset_glm(design, problem.y_target, f_b, lam,
                                              family=self._family, group_weights=weights,
                                              max_iter=self.max_iter, tol=self.tol)
                z_perm = coef[:2 * d]
            z = np.empty(2 * d)
            z[perm] = z_perm
            counts[derandomized_selection_set(knockoff_w(z), self.v)] += 1
        freq_cols = counts / self.n_bootstraps
        freq = np.zeros(self.n_features_in_)
        freq[self._design.column_feature_] = freq_cols
        self.selection_frequency_ = freq
        self.entry_score_ = freq
        self.selected_ = np.flatnonzero(freq >= self.threshold)

        # Refit delta on the selected columns only (the reference code's prediction model).
        theta = np.zeros(problem.n_params)
        offset = f_target.copy()
        if self.absorption:
            full = problem.subset(np.arange(n_t))
            coef_full, _, _ = solve_offset_glm(*full.arrays(), lam, family=self._family,
                                               groups=full.groups, group_weights=full.weights,
                                               max_iter=self.max_iter, tol=self.tol)
            theta[problem.beta_cols] = coef_full[problem.beta_cols]
            offset = offset + DT @ theta[problem.beta_cols]
        cols = np.flatnonzero(freq_cols >= self.threshold)
        design = DT[:, cols]
        weights = np.ones(len(cols))
        if self.fit_intercept:
            design = np.hstack([design, np.ones((n_t, 1))])
            weights = np.r_[weights, 0.0]
        if design.shape[1]:
            coef, _, _ = solve_offset_glm(design, problem.y_target, offset, lam,
                                          family=self._family, group_weights=weights,
                                          max_iter=self.max_iter, tol=self.tol)
            theta[problem.delta_cols[cols]] = coef[:len(cols)]
            if self.fit_intercept:
                theta[problem.intercept_col] = coef[-1]
        return theta

    # ------------------------------------------------------------------ predict
    def decision_function(self, X, offset=None):
        """Shift-corrected link-scale prediction f(x) + x^T (beta + delta) (+ intercept)."""
        check_is_fitted(self, "shift_coef_")
        Xc = check_matrix(X, "X")
        if Xc.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xc.shape[1]} features, expected {self.n_features_in_}")
        if offset is None:
            if self.source_model_ is None:
                raise ValueError("this model was fitted with an offset; pass offset= for X")
            f = self._offset(self.source_model_, X, "source_model on X")
        else:
            f = check_vector(offset, "offset")
            check_same_length(X=Xc, offset=f)
        D = self._design.transform(Xc)
        beta_cols, delta_cols, intercept_col = self._problem_layout
        coef = self._theta[delta_cols].copy()
        if beta_cols is not None:
            coef = coef + self._theta[beta_cols]
        eta = f + D @ coef
        if intercept_col is not None:
            eta = eta + self._theta[intercept_col]
        return eta

    def predict_proba(self, X, offset=None):
        """Class probabilities of the shift-corrected target model (classification)."""
        if getattr(self, "task_", None) != "classification":
            raise AttributeError("predict_proba is only available for classification")
        prob = expit(self.decision_function(X, offset))
        return np.column_stack([1 - prob, prob])

    def predict(self, X, offset=None):
        """Class labels (classification) or the corrected mean (regression)."""
        eta = self.decision_function(X, offset)
        if self.task_ == "classification":
            return self.classes_[(eta > 0).astype(int)]
        return eta

    def score_features(self, true_idx, features=None) -> dict:
        """Feature AUROC (entry score / selection frequency), recall, precision, TP, FP, FN.

        ``features`` restricts the evaluation (see :func:`score_selection`); precision is NaN
        when nothing is selected.
        """
        check_is_fitted(self, "entry_score_")
        return score_selection(self.entry_score_, self.selected_, true_idx, self.n_features_in_,
                               features=features)


class _Problem:
    """Stacked design of the basic or absorption fit and its column layout.

    Basic: columns [delta (d) | intercept?]; rows = target.
    Absorption: columns [beta (d) | delta (d) | intercept?]; rows = source then target,
    with the delta block zero on source rows.
    """

    def __init__(self, DT, yT, fT, column_feature, absorption, ratio, intercept, DS=None,
                 yS=None, fS=None):
        self.DT, self.y_target, self.f_target = DT, yT, fT
        self.DS, self.yS, self.fS = DS, yS, fS
        self.absorption, self.ratio, self.intercept = absorption, ratio, intercept
        self.column_feature = column_feature
        d = DT.shape[1]
        self.n_target = DT.shape[0]
        group_sizes = np.bincount(column_feature, minlength=column_feature.max() + 1 if d else 0)
        # group id per design column: consecutive ids per feature (features are contiguous)
        _, group_of_col = np.unique(column_feature, return_inverse=True)
        base_weights = np.sqrt(group_sizes[np.unique(column_feature)]) if d else np.zeros(0)
        n_groups = len(base_weights)
        if absorption:
            self.beta_cols = np.arange(d)
            self.delta_cols = np.arange(d, 2 * d)
            groups = [group_of_col, group_of_col + n_groups]
            weights = [ratio * base_weights, base_weights]
        else:
            self.beta_cols = None
            self.delta_cols = np.arange(d)
            groups, weights = [group_of_col], [base_weights]
        next_col = 2 * d if absorption else d
        self.intercept_col = next_col if intercept else None
        if intercept:
            groups.append(np.array([2 * n_groups if absorption else n_groups]))
            weights.append(np.array([0.0]))
        self.groups = np.concatenate(groups).astype(int)
        self.weights = np.concatenate(weights)
        self.n_params = len(self.groups)
        self.penalised_cols = np.flatnonzero(self.weights[self.groups] > 0)

    def layout(self):
        return self.beta_cols, self.delta_cols, self.intercept_col

    def subset(self, rows):
        return _Problem(self.DT[rows], self.y_target[rows], self.f_target[rows],
                        self.column_feature, self.absorption, self.ratio, self.intercept,
                        self.DS, self.yS, self.fS)

    def arrays(self):
        """(X, y, offset) of the stacked problem."""
        DT, d = self.DT, self.DT.shape[1]
        ones = [np.ones((len(DT), 1))] if self.intercept else []
        if not self.absorption:
            return np.hstack([DT, *ones]), self.y_target, self.f_target
        nS = self.DS.shape[0]
        zeros = [np.zeros((nS, 1))] if self.intercept else []
        top = np.hstack([self.DS, np.zeros((nS, d)), *zeros])
        bottom = np.hstack([DT, DT, *ones])
        return (np.vstack([top, bottom]), np.r_[self.yS, self.y_target],
                np.r_[self.fS, self.f_target])

    def target_eta(self, coef, rows):
        coef_t = coef[self.delta_cols].copy()
        if self.absorption:
            coef_t = coef_t + coef[self.beta_cols]
        eta = self.f_target[rows] + self.DT[rows] @ coef_t
        if self.intercept:
            eta = eta + coef[self.intercept_col]
        return eta


def _with_defaults(cls_name, doc, **overrides):
    """Make an SGShift subclass whose __init__ has different defaults (sklearn-compatible)."""
    import inspect

    params = inspect.signature(SGShift.__init__).parameters
    names = [n for n in params if n != "self"]
    defaults = {n: overrides.get(n, params[n].default) for n in names}
    arg_list = ", ".join(f"{n}={defaults[n]!r}" for n in names)
    body = "\n".join(f"    self.{n} = {n}" for n in names)
    namespace: dict = {}
    exec(f"def __init__(self, {arg_list}):\n{body}\n", namespace)  # noqa: S102
    cls = type(cls_name, (SGShift,), {"__init__": namespace["__init__"], "__doc__": doc,
                                       "__module__": __name__})
    return cls


SGShiftA = _with_defaults(
    "SGShiftA",
    """SGShift with absorption (SGShift-A): a source-side sparse term beta fitted on source
    + target absorbs the source model's misfit, so only the target-specific delta is reported.

    Same parameters as :class:`SGShift` with ``absorption=True`` by default; ``fit`` needs
    ``X_source`` and ``y_source``.

    References
    ----------
    R. Lyu, A. Turcan, B. Wilder, arXiv 2505.20634 (2025).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from icml26.sgshift import SGShiftA, make_concept_shift
    >>> data = make_concept_shift(n_source=2000, n_target=800, p=10, n_shifted=2, seed=0)
    >>> clf = LogisticRegression().fit(data.X_source, data.y_source)
    >>> est = SGShiftA().fit(data.X_target, data.y_target, source_model=clf,
    ...                      X_source=data.X_source, y_source=data.y_source)
    >>> est.absorb_coef_.shape
    (10,)
    """,
    absorption=True)

SGShiftK = _with_defaults(
    "SGShiftK",
    """SGShift with derandomised model-X knockoffs (SGShift-K): selection frequency over B
    bootstrap refits of the source model, each with fresh Gaussian knockoffs, bounding the
    expected number of false selections by about v / threshold.

    Same parameters as :class:`SGShift` with ``knockoffs=True`` by default (add
    ``absorption=True`` for SGShift-KA); ``fit`` needs ``X_source`` and ``y_source``.

    References
    ----------
    R. Lyu, A. Turcan, B. Wilder, arXiv 2505.20634 (2025); Z. Ren, Y. Wei, E. Candès,
    "Derandomizing knockoffs", JASA (2023).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from icml26.sgshift import SGShiftK, make_concept_shift
    >>> data = make_concept_shift(n_source=1000, n_target=400, p=10, n_shifted=2, seed=0)
    >>> clf = LogisticRegression().fit(data.X_source, data.y_source)
    >>> est = SGShiftK(n_bootstraps=5, random_state=0).fit(
    ...     data.X_target, data.y_target, source_model=clf,
    ...     X_source=data.X_source, y_source=data.y_source)
    >>> est.selection_frequency_.shape
    (10,)
    """,
    knockoffs=True)
