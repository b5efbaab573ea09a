"""Structural-isomorphism probes: regime balancing, trajectory splits, the linear probe and
the three diagnostics ``Q_stat``, ``Q_dyn``, ``Q_con``.

A representation ``z = g(x)`` is *structurally isomorphic* to the physical state ``y`` if
one injective linear map ``A`` gives ``z = A y + ε_μ(y)`` with small residual (and small
residual Jacobian) *uniformly over regimes* ``μ``.  With a left inverse ``L`` this implies
(Prop. 2.1 of the paper) regime-uniform bounds on static error ``E|y − L z|``, dynamic
error ``E|ẏ − L ż|`` and constraint violation ``E|𝒫(L z)|``.  The probes test these
necessary conditions with *linear* heads, so a failure means "not linearly present".

References
----------
Yao, Polesello, Pervez, Muller, Locatello. *The Perception–Physics Paradox: Probing
Scientific Alignment with TC-Bench.* ICML 2026 (arXiv 2605.24782); official code
``CausalLearningAI/tc-bench`` (``probing/``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.linalg import LinAlgWarning
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import LassoCV, Ridge
from sklearn.model_selection import GroupKFold, KFold, train_test_split
from sklearn.neural_network import MLPRegressor
from sklearn.utils.validation import check_is_fitted

from ..core.validation import (check_choice, check_finite_array, check_int, check_matrix,
                               check_probability, check_scalar_in, renamed_seed)
from .data import INTENSE_THRESHOLD, TCFrames, as_frames

__all__ = ["regime_balance", "trajectory_split", "StructuralAlignmentProbe", "q_stat",
           "q_dyn", "q_con", "bin_profile", "regime_ratio", "cross_agency_ood", "DEFAULT_ALPHAS"]

DEFAULT_ALPHAS = np.logspace(-3, 6, 10)        # repo sweep: 1e-3 … 1e6
LASSO_ALPHAS = np.logspace(-3, 2, 6)           # repo: 1e-3 … 1e2
SIGMA_FLOOR = 1e-12
DYN_BIN_WIDTH = 5.0                            # Q_dyn bins of P_c(t), hPa
CON_BIN_WIDTH = 10.0                           # Q_con bins of true P_c, hPa


# -- sampling -----------------------------------------------------------------------------
def regime_balance(pressure: Any, threshold: float = INTENSE_THRESHOLD, seed: int = 42,
                   min_per_regime: int = 1) -> np.ndarray:
    """Indices of a regime-balanced subsample: ``min(n_intense, n_moderate)`` frames per regime.

    Frames are split into intense (``pressure < threshold``) and moderate
    (``pressure >= threshold``); each side is sampled *without replacement* down to the
    smaller count with ``numpy.random.default_rng(seed)`` (the repo fixes ``seed=42`` for
    every probe seed).

    Parameters
    ----------
    pressure : array of shape (n,)
        Central pressure (hPa), finite.
    threshold : float, default 980
    seed : int, default 42
    min_per_regime : int, default 1
        Fewer frames than this in either regime raises (the repo silently returns an
        empty sample).

    Returns
    -------
    ndarray of int
        Sorted indices into ``pressure``.

    Examples
    --------
    >>> regime_balance([1000, 1001, 1002, 950], seed=0).size
    2
    """
    pressure = check_finite_array(pressure, "pressure", ndim=1)
    min_per_regime = check_int(min_per_regime, "min_per_regime", min_value=1)
    intense = np.flatnonzero(pressure < threshold)
    moderate = np.flatnonzero(pressure >= threshold)
    for name, idx in (("intense", intense), ("moderate", moderate)):
        if idx.size < min_per_regime:
            side = "<" if name == "intense" else ">="
            raise ValueError(f"regime_balance: the {name} regime (pressure {side} {threshold:g}) "
                             f"has {idx.size} frames; need at least {min_per_regime} to balance")
    n = min(intense.size, moderate.size)
    rng = np.random.default_rng(seed)
    picked = np.concatenate([rng.choice(intense, n, replace=False),
                             rng.choice(moderate, n, replace=False)])
    return np.sort(picked)


def trajectory_split(trajectory_id: Any, test_size: float = 0.2, seed: int = 42
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Trajectory-level train/test split: every frame of a storm lands on the same side.

    The repo splits unique trajectory ids with ``train_test_split(test_size, random_state=seed)``
    (this fixes the frame-level leakage of naive splits, spec §10).

    Returns
    -------
    train_index, test_index : ndarray of int
        Sorted positions into ``trajectory_id``.

    Examples
    --------
    >>> tr, te = trajectory_split([0, 0, 1, 1, 2, 2, 3, 3, 4, 4], test_size=0.2, seed=0)
    >>> len(te)
    2
    """
    ids = np.asarray(trajectory_id)
    if ids.ndim != 1:
        raise ValueError(f"trajectory_id must be 1-dimensional, got shape {ids.shape}")
    test_size = check_probability(test_size, "test_size")
    unique = np.unique(ids)
    if unique.size < 2:
        raise ValueError(f"trajectory_split needs at least 2 trajectories, got {unique.size}")
    n_test = int(np.ceil(test_size * unique.size))
    if n_test < 1 or n_test >= unique.size:
        raise ValueError(f"test_size={test_size:g} with {unique.size} trajectories leaves an "
                         "empty train or test side")
    train_ids, test_ids = train_test_split(unique, test_size=test_size, random_state=seed)
    test_mask = np.isin(ids, test_ids)
    return np.flatnonzero(~test_mask), np.flatnonzero(test_mask)


# -- the probe ----------------------------------------------------------------------------
def ridge_path_cv(X: np.ndarray, y: np.ndarray, alphas: np.ndarray, splits) -> np.ndarray:
    """Mean validation MSE of ridge (with intercept) for every alpha, one eigendecomposition per fold.

    Equivalent to ``RidgeCV(alphas, cv=splits, scoring="neg_mean_squared_error")``'s grid
    search (each fold centres its own train side), at ``O(N d² + d³)`` per fold instead of
    one solve per alpha.
    """
    mse = np.zeros((len(splits), len(alphas)))
    for k, (train, val) in enumerate(splits):
        x_mean, y_mean = X[train].mean(axis=0), y[train].mean()
        centred = X[train] - x_mean
        eigval, eigvec = np.linalg.eigh(centred.T @ centred)
        eigval = np.clip(eigval, 0.0, None)
        rotated_rhs = eigvec.T @ (centred.T @ (y[train] - y_mean))
        rotated_val = (X[val] - x_mean) @ eigvec
        coefs = rotated_rhs[:, None] / (eigval[:, None] + alphas[None, :])  # (d, n_alphas)
        pred = rotated_val @ coefs + y_mean
        mse[k] = np.mean((pred - y[val][:, None]) ** 2, axis=0)
    return mse.mean(axis=0)


def _check_features(Z: Any, n_frames: int | None = None, name: str = "Z") -> np.ndarray:
    Z = check_matrix(Z, name, allow_nan=True)
    bad = ~np.isfinite(Z).all(axis=1)
    if bad.any():
        raise ValueError(f"{name} has {int(bad.sum())} rows with NaN or infinity; "
                         "expected finite features for every frame")
    if n_frames is not None and Z.shape[0] != n_frames:
        raise ValueError(f"{name} has {Z.shape[0]} rows but frames has {n_frames} frames; "
                         "expected one feature row per frame")
    return Z


def _regression_metrics(y: np.ndarray, pred: np.ndarray, sigma: float) -> dict:
    n = y.size
    if n == 0:
        nan = float("nan")
        return dict(n=0, rmse=nan, mae=nan, r2=nan, pearson=nan, spearman=nan, nrmse=nan, nmae=nan)
    err = pred - y
    rmse = float(np.sqrt(np.mean(err ** 2)))
    mae = float(np.mean(np.abs(err)))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(err ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    varied = n > 1 and np.ptp(y) > 0 and np.ptp(pred) > 0
    pearson = float(stats.pearsonr(y, pred)[0]) if varied else float("nan")
    spearman = float(stats.spearmanr(y, pred)[0]) if varied else float("nan")
    return dict(n=int(n), rmse=rmse, mae=mae, r2=r2, pearson=pearson, spearman=spearman,
                nrmse=rmse / sigma, nmae=mae / sigma)


def _safe_sigma(values: np.ndarray, what: str) -> float:
    sigma = float(np.std(values)) if values.size else 0.0
    if sigma <= 0:
        warnings.warn(f"{what} is constant (σ = 0); normalized errors use σ = {SIGMA_FLOOR:g}",
                      RuntimeWarning, stacklevel=3)
    return max(sigma, SIGMA_FLOOR)


class StructuralAlignmentProbe(RegressorMixin, BaseEstimator):
    """Regime-balanced, trajectory-split linear probe of a physical variable (TC-Bench §2.3).

    ``fit(Z, frames)`` runs the repo's protocol: keep frames with a finite target (and
    ``frames.valid``), balance the intense (``P_c < regime_threshold``) and moderate regimes,
    split *trajectories* into train/test, choose the ridge penalty by cross-validation on
    the train side and refit.  The global normalizer ``sigma_ = std(y_test)`` is shared by
    every regime: a per-regime σ would hide the collapse.

    Parameters
    ----------
    target : {"pressure", "wind"}, default "pressure"
    regime_threshold : float, default 980
        Regimes are always defined by the true *pressure* (the repo applies 980 to wind
        values for wind targets, a bug; spec §10.3).
    balance : bool, default True
        Regime balancing before the split.
    balance_seed : int, default 42
        Seed of the balancing sample (the repo fixes 42 for every probe seed).
    alphas : array-like, optional
        Ridge grid; default ``logspace(-3, 6, 10)``.  Lasso uses ``logspace(-3, 2, 6)``.
    cv : int, default 5
        Folds for the penalty search.
    group_cv : bool, default True
        ``GroupKFold`` by trajectory inside the train side; ``False`` reproduces the repo's
        frame-level ``KFold`` (alpha chosen with correlated frames; spec §10.2).
    test_size : float, default 0.2
        Fraction of trajectories held out.
    random_state : int, default 42
        Split seed (paper: 42–46); also the MLP head's seed.
    seed : int, optional
        Deprecated alias of ``random_state``.
    standardize : bool, default False
        Standardize features with train statistics (repo: raw features).  ``coef_`` is
        always expressed in the raw feature space.
    head : {"ridge", "lasso", "mlp"}, default "ridge"
        ``"mlp"`` is the repo's capacity check (``MLPRegressor((2048,), max_iter=100)``);
        it has no linear map, so :func:`q_dyn` refuses it.

    Attributes
    ----------
    coef_, intercept_ : linear map ``L`` and offset in raw feature space (linear heads).
    alpha_ : float, chosen penalty (linear heads).
    sigma_ : float, ``std`` of the target over the test frames.
    train_mask_, test_mask_ : bool arrays over the frames given to ``fit``.
    test_trajectories_ : ndarray, ids of the held-out trajectories.
    estimator_ : the fitted scikit-learn head.
    n_features_in_ : int
    n_linalg_warnings_ : int, ill-conditioning warnings collected (never raised).

    References
    ----------
    Yao et al., *The Perception–Physics Paradox: Probing Scientific Alignment with TC-Bench*,
    ICML 2026, §2–4; repo ``probing/fit.py``.

    Examples
    --------
    >>> from icml26.tcbench import SynthTC
    >>> f = SynthTC(n_trajectories=60, render=False, seed=1).generate()
    >>> Z = np.c_[f.pressure, f.lat]
    >>> probe = StructuralAlignmentProbe(random_state=42).fit(Z, f)
    >>> probe.evaluate(Z, f)["intense"]["mae"] < 1e-3
    True
    """

    def __init__(self, target: str = "pressure", regime_threshold: float = INTENSE_THRESHOLD,
                 balance: bool = True, balance_seed: int = 42, alphas=None, cv: int = 5,
                 group_cv: bool = True, test_size: float = 0.2, random_state: int = 42,
                 standardize: bool = False, head: str = "ridge", seed: int | None = None):
        self.target = target
        self.regime_threshold = regime_threshold
        self.balance = balance
        self.balance_seed = balance_seed
        self.alphas = alphas
        self.cv = cv
        self.group_cv = group_cv
        self.test_size = test_size
        self.random_state = random_state
        self.standardize = standardize
        self.head = head
        self.seed = seed

    # -- fit -------------------------------------------------------------------------
    def fit(self, Z, frames) -> "StructuralAlignmentProbe":
        """Balance, split by trajectory, cross-validate the penalty and fit the head."""
        check_choice(self.target, "target", ["pressure", "wind"])
        check_choice(self.head, "head", ["ridge", "lasso", "mlp"])
        check_scalar_in(self.regime_threshold, "regime_threshold")
        check_int(self.cv, "cv", min_value=2)
        self._split_seed = renamed_seed(self.random_state, self.seed,
                                        "StructuralAlignmentProbe", stacklevel=2)
        frames = as_frames(frames)
        Z = _check_features(Z, len(frames))
        y_all = frames.target(self.target)
        usable = frames.valid & np.isfinite(y_all) & np.isfinite(frames.pressure)
        if not usable.any():
            raise ValueError(f"target {self.target!r} has no finite values among valid frames "
                             "(fully NaN)")
        index = np.flatnonzero(usable)
        if self.balance:
            index = index[regime_balance(frames.pressure[index], self.regime_threshold,
                                         self.balance_seed)]
        train_pos, test_pos = trajectory_split(frames.trajectory_id[index], self.test_size,
                                               self._split_seed)
        train, test = index[train_pos], index[test_pos]
        groups = frames.trajectory_id[train]
        n_groups = np.unique(groups).size
        if self.group_cv and n_groups < self.cv:
            raise ValueError(f"cv={self.cv} group folds need at least {self.cv} train "
                             f"trajectories, got {n_groups}")
        X, y = Z[train], y_all[train]
        self.mean_ = X.mean(axis=0) if self.standardize else np.zeros(Z.shape[1])
        scale = X.std(axis=0) if self.standardize else np.ones(Z.shape[1])
        self.scale_ = np.where(scale > 0, scale, 1.0)
        Xs = (X - self.mean_) / self.scale_
        splits = (list(GroupKFold(n_splits=self.cv).split(Xs, y, groups)) if self.group_cv
                  else list(KFold(n_splits=self.cv).split(Xs)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LinAlgWarning)
            warnings.filterwarnings("ignore", category=UserWarning, module="sklearn")
            self.estimator_ = self._make_head(Xs, y, splits)
            self.estimator_.fit(Xs, y)
        self.n_linalg_warnings_ = sum(issubclass(w.category, LinAlgWarning) for w in caught)
        if self.head != "mlp":
            self.coef_ = np.asarray(self.estimator_.coef_, dtype=float) / self.scale_
            self.intercept_ = float(self.estimator_.intercept_ - self.coef_ @ self.mean_)
            self.alpha_ = float(getattr(self.estimator_, "alpha_", self.estimator_.alpha))
        n = len(frames)
        self.train_mask_ = np.zeros(n, dtype=bool)
        self.train_mask_[train] = True
        self.test_mask_ = np.zeros(n, dtype=bool)
        self.test_mask_[test] = True
        self.test_trajectories_ = np.unique(frames.trajectory_id[test])
        self.sigma_ = _safe_sigma(y_all[test], f"test target {self.target!r}")
        self.n_features_in_ = Z.shape[1]
        return self

    def _make_head(self, X, y, splits):
        if self.head == "ridge":
            alphas = DEFAULT_ALPHAS if self.alphas is None else np.asarray(self.alphas, float)
            check_finite_array(alphas, "alphas", ndim=1)
            if np.any(alphas <= 0):
                raise ValueError(f"alphas must be positive, got {alphas}")
            self.cv_mse_ = ridge_path_cv(X, y, alphas, splits)
            return Ridge(alpha=float(alphas[int(np.argmin(self.cv_mse_))]))
        if self.head == "lasso":
            alphas = LASSO_ALPHAS if self.alphas is None else np.asarray(self.alphas, float)
            return LassoCV(alphas=alphas, cv=splits, max_iter=10_000)
        return MLPRegressor(hidden_layer_sizes=(2048,), max_iter=100, random_state=self._split_seed)

    @property
    def is_linear(self) -> bool:
        """Whether the fitted head is a linear map ``L`` (ridge/lasso)."""
        return self.head in ("ridge", "lasso")

    # -- predict / evaluate ----------------------------------------------------------
    def predict(self, Z) -> np.ndarray:
        """Probe prediction ``h(z)`` for each row of ``Z``."""
        check_is_fitted(self, "estimator_")
        Z = _check_features(Z)
        if Z.shape[1] != self.n_features_in_:
            raise ValueError(f"Z has {Z.shape[1]} features; the probe was fitted with "
                             f"{self.n_features_in_}")
        if self.is_linear:
            return Z @ self.coef_ + self.intercept_
        return self.estimator_.predict((Z - self.mean_) / self.scale_)

    def score(self, Z, frames, sample_weight=None) -> float:
        """R² on the test frames (the sklearn ``score`` contract, on ``fit``'s split)."""
        return self.evaluate(Z, frames)["overall"]["r2"]

    def evaluate(self, Z, frames, mask=None) -> dict:
        """Overall / moderate / intense metrics on the test frames (or ``mask``).

        Metrics: ``n, rmse, mae, r2, pearson, spearman`` and ``nrmse, nmae`` normalized by
        the *global* σ of the evaluated target (one σ for every regime).
        """
        check_is_fitted(self, "estimator_")
        frames, Z, y, pred, sel = self._evaluated(Z, frames, mask)
        sigma = _safe_sigma(y, f"evaluated target {self.target!r}")
        intense = frames.pressure[sel] < self.regime_threshold
        out = {"overall": _regression_metrics(y, pred, sigma),
               "moderate": _regression_metrics(y[~intense], pred[~intense], sigma),
               "intense": _regression_metrics(y[intense], pred[intense], sigma)}
        out.update(sigma=sigma, alpha=getattr(self, "alpha_", float("nan")), target=self.target)
        return out

    def _evaluated(self, Z, frames, mask):
        frames = as_frames(frames)
        Z = _check_features(Z, len(frames))
        if len(frames) != self.test_mask_.size:
            raise ValueError(f"frames has {len(frames)} frames; the probe was fitted on "
                             f"{self.test_mask_.size} (pass the same frames, or a mask)")
        sel = self.test_mask_ if mask is None else np.asarray(mask, dtype=bool)
        y_all = frames.target(self.target)
        sel = sel & np.isfinite(y_all) & np.isfinite(frames.pressure)
        if not sel.any():
            raise ValueError("no frames to evaluate (empty mask or all targets NaN)")
        return frames, Z, y_all[sel], self.predict(Z[sel]), sel


# -- diagnostics -----------------------------------------------------------------------------
def q_stat(probe: StructuralAlignmentProbe, Z, frames, mask=None) -> pd.DataFrame:
    """Static fidelity ``ξ_stat = |h(z) − y| / σ`` per evaluated frame (Eq. 4.1).

    ``σ = std(y)`` over the evaluated frames (default: the probe's test frames), shared by
    both regimes; 1 equals the mean predictor.

    Returns
    -------
    DataFrame with columns ``frame, trajectory_id, t, pressure, regime, y_true, y_pred, xi_stat``.
    """
    check_is_fitted(probe, "estimator_")
    frames, Z, y, pred, sel = probe._evaluated(Z, frames, mask)
    sigma = _safe_sigma(y, "evaluated target")
    pressure = frames.pressure[sel]
    return pd.DataFrame({
        "frame": np.flatnonzero(sel), "trajectory_id": frames.trajectory_id[sel],
        "t": frames.t[sel], "pressure": pressure,
        "regime": np.where(pressure < probe.regime_threshold, "intense", "moderate"),
        "y_true": y, "y_pred": pred, "xi_stat": np.abs(pred - y) / sigma})


def _transitions(frames: TCFrames, keep: np.ndarray, target: np.ndarray):
    """Pairs (i, j) of consecutive steps (t, t+1) of one trajectory, both usable."""
    ok = keep & frames.valid & np.isfinite(target) & np.isfinite(frames.pressure)
    idx = np.flatnonzero(ok)
    order = np.lexsort((frames.t[idx], frames.trajectory_id[idx]))
    idx = idx[order]
    same = frames.trajectory_id[idx[1:]] == frames.trajectory_id[idx[:-1]]
    step = frames.t[idx[1:]] - frames.t[idx[:-1]] == 1
    link = same & step
    return idx[:-1][link], idx[1:][link]


def q_dyn(probe: StructuralAlignmentProbe, Z, frames, subset: str = "test") -> pd.DataFrame:
    """Dynamic coherence ``ξ_dyn = |L·Δz_t − Δy_t|`` per transition (Eq. 4.2).

    Reuses the *static* linear map ``L = probe.coef_`` (no refit; the intercept cancels)
    on consecutive frames ``t, t+1`` of the same trajectory, both valid and finite.  Units
    of the target per 3-hour step.

    Parameters
    ----------
    probe : StructuralAlignmentProbe
        A fitted *linear* probe (non-linear heads raise ``ValueError``).
    subset : {"test", "all"}, default "test"
        ``"test"``: every frame of the probe's held-out trajectories; ``"all"``: all frames.

    Returns
    -------
    DataFrame with columns ``trajectory_id, t, pressure, regime, bin, dy_true, dy_pred, xi_dyn``
    (``bin = floor(P_c(t)/5)·5 + 2.5``).
    """
    check_is_fitted(probe, "estimator_")
    if not getattr(probe, "is_linear", False) or not hasattr(probe, "coef_"):
        raise ValueError(f"q_dyn needs a linear probe (head 'ridge' or 'lasso'); got head="
                         f"{getattr(probe, 'head', type(probe).__name__)!r}")
    check_choice(subset, "subset", ["test", "all"])
    frames = as_frames(frames)
    Z = _check_features(Z, len(frames))
    y = frames.target(probe.target)
    keep = (np.isin(frames.trajectory_id, probe.test_trajectories_) if subset == "test"
            else np.ones(len(frames), dtype=bool))
    i, j = _transitions(frames, keep, y)
    if i.size == 0:
        raise ValueError("q_dyn found no transitions: no trajectory has two consecutive "
                         "valid frames with finite targets")
    dy_true = y[j] - y[i]
    dy_pred = (Z[j] - Z[i]) @ probe.coef_
    pressure = frames.pressure[i]
    return pd.DataFrame({
        "trajectory_id": frames.trajectory_id[i], "t": frames.t[i], "pressure": pressure,
        "regime": np.where(pressure < probe.regime_threshold, "intense", "moderate"),
        "bin": np.floor(pressure / DYN_BIN_WIDTH) * DYN_BIN_WIDTH + DYN_BIN_WIDTH / 2,
        "dy_true": dy_true, "dy_pred": dy_pred, "xi_dyn": np.abs(dy_pred - dy_true)})


def q_con(pressure_probe: StructuralAlignmentProbe, wind_probe: StructuralAlignmentProbe,
          Z, frames, low_lat: float = 15.0, high_lat: float = 25.0,
          pressure_range: tuple = (900.0, 1010.0), pair_tolerance: float = 2.5,
          mask=None) -> pd.DataFrame:
    """Manifold-constraint consistency (Eq. 4.4): the latitude ordering of wind at equal pressure.

    Gradient-wind balance (``f = 2Ω sin φ``) makes low-latitude storms (``|lat| < low_lat``)
    windier than high-latitude ones (``|lat| > high_lat``) at equal ``P_c``.  On the frames
    both probes evaluate (their common test frames), for 10-hPa bins of *true* pressure:
    ``gap_true = mean V(low) − mean V(high)``, ``gap_pred`` likewise with the wind probe's
    prediction, ``rel_err = |gap_true − gap_pred| / |gap_true|`` and ``violation = gap_pred ≤ 0``.
    Pairwise rate (Resolution, not from the paper, spec §10.1): over all pairs (low i, high j)
    with ``|P_i − P_j| ≤ pair_tolerance`` in the same bin, the fraction with ``V̂_i ≤ V̂_j``.

    Returns
    -------
    DataFrame, one row per bin with columns ``lo, hi, regime, n_low, n_high, gap_true,
    gap_pred, rel_err, violation, n_pairs, pair_violations``.  ``df.attrs["psi_con"]`` holds
    per-regime summaries ``{regime: {"bin_rate", "pairwise_rate", "n_pairs"}}``.
    """
    check_is_fitted(pressure_probe, "estimator_")
    check_is_fitted(wind_probe, "estimator_")
    if pressure_probe.target != "pressure" or wind_probe.target != "wind":
        raise ValueError("q_con expects pressure_probe with target='pressure' and wind_probe "
                         f"with target='wind', got {pressure_probe.target!r}, {wind_probe.target!r}")
    frames = as_frames(frames)
    if frames.lat is None:
        raise ValueError("q_con needs latitude labels (frames.lat)")
    Z = _check_features(Z, len(frames))
    sel = (pressure_probe.test_mask_ & wind_probe.test_mask_) if mask is None \
        else np.asarray(mask, dtype=bool)
    wind = frames.target("wind")
    sel = sel & np.isfinite(wind) & np.isfinite(frames.pressure) & np.isfinite(frames.lat)
    if not sel.any():
        raise ValueError("q_con: no frames evaluated by both probes")
    p, v, lat = frames.pressure[sel], wind[sel], np.abs(frames.lat[sel])
    v_hat = wind_probe.predict(Z[sel])
    low, high = lat < low_lat, lat > high_lat
    lo_edge, hi_edge = pressure_range
    edges = np.arange(lo_edge, hi_edge + 1e-9, CON_BIN_WIDTH)
    rows = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = (p >= lo) & (p < hi)
        a, b = np.flatnonzero(in_bin & low), np.flatnonzero(in_bin & high)
        row = dict(lo=lo, hi=hi, regime="intense" if hi <= pressure_probe.regime_threshold
                   else "moderate", n_low=a.size, n_high=b.size, gap_true=np.nan,
                   gap_pred=np.nan, rel_err=np.nan, violation=np.nan, n_pairs=0,
                   pair_violations=0)
        if a.size and b.size:
            gap_true = v[a].mean() - v[b].mean()
            gap_pred = v_hat[a].mean() - v_hat[b].mean()
            close = np.abs(p[a][:, None] - p[b][None, :]) <= pair_tolerance
            worse = v_hat[a][:, None] <= v_hat[b][None, :]
            row.update(gap_true=gap_true, gap_pred=gap_pred,
                       rel_err=abs(gap_true - gap_pred) / max(abs(gap_true), SIGMA_FLOOR),
                       violation=float(gap_pred <= 0), n_pairs=int(close.sum()),
                       pair_violations=int((close & worse).sum()))
        rows.append(row)
    out = pd.DataFrame(rows)
    summary = {}
    for regime in ("moderate", "intense"):
        part = out[out.regime == regime]
        judged = part.dropna(subset=["violation"])
        n_pairs = int(part.n_pairs.sum())
        summary[regime] = {
            "bin_rate": float(judged.violation.mean()) if len(judged) else float("nan"),
            "pairwise_rate": (float(part.pair_violations.sum()) / n_pairs if n_pairs
                              else float("nan")),
            "n_pairs": n_pairs}
    out.attrs["psi_con"] = summary
    return out


# -- summaries ------------------------------------------------------------------------------
def regime_ratio(df: pd.DataFrame, column: str, statistic: str = "median") -> float:
    """``statistic(column | intense) / statistic(column | moderate)`` of a Q_stat/Q_dyn frame."""
    check_choice(statistic, "statistic", ["median", "mean"])
    groups = df.groupby("regime")[column].agg(statistic)
    if "intense" not in groups or "moderate" not in groups:
        return float("nan")
    return float(groups["intense"] / max(groups["moderate"], SIGMA_FLOOR))


def bin_profile(df: pd.DataFrame, column: str = "xi_dyn", by: str = "bin") -> pd.DataFrame:
    """Mean and 95% normal CI of ``column`` per ``by`` bin (the Fig. 3 profile)."""
    grouped = df.groupby(by)[column]
    out = grouped.agg(["mean", "std", "count"]).reset_index()
    out["ci95"] = 1.96 * out["std"].fillna(0.0) / np.sqrt(out["count"])
    return out


def cross_agency_ood(Z, frames, held_out, target: str = "pressure", val_fraction: float = 0.1,
                     split_seed: int = 42, standardize: bool = False, alphas=None) -> dict:
    """In-distribution vs held-out-agency MAE of a ridge probe (Fig. 1c, App. E).

    Frames whose ``basin`` equals ``held_out`` form the out-of-distribution test set; the
    other trajectories are split into train/validation (``val_fraction``, seed 42) and a
    ridge probe (no regime balancing) is fitted on the train side.  In-distribution MAE is
    measured on the validation trajectories, OOD MAE on every held-out frame.

    Returns
    -------
    dict with ``mae_id, mae_ood, ratio`` (``mae_ood / mae_id``), ``n_id, n_ood``.
    """
    frames = as_frames(frames)
    Z = _check_features(Z, len(frames))
    if frames.basin is None:
        raise ValueError("cross_agency_ood needs frames.basin (the agency of each frame)")
    out_mask = frames.basin == held_out
    if not out_mask.any() or out_mask.all():
        raise ValueError(f"held_out={held_out!r} must select some but not all frames")
    rest = np.flatnonzero(~out_mask)
    probe = StructuralAlignmentProbe(target=target, balance=False, test_size=val_fraction,
                                     random_state=split_seed, standardize=standardize,
                                     alphas=alphas)
    sub = frames.subset(rest)
    probe.fit(Z[rest], sub)
    in_dist = probe.evaluate(Z[rest], sub)["overall"]
    y = frames.target(target)
    ood = out_mask & np.isfinite(y) & frames.valid
    mae_ood = float(np.mean(np.abs(probe.predict(Z[ood]) - y[ood])))
    return {"mae_id": in_dist["mae"], "mae_ood": mae_ood, "ratio": mae_ood / in_dist["mae"],
            "n_id": in_dist["n"], "n_ood": int(ood.sum())}
