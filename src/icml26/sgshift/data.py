"""Data for SGShift: the two real tables shipped with the package, the semi-synthetic label
generator of the paper's simulations, and a fully synthetic concept-shift generator.

Reference: Lyu, Turcan & Wilder, "Explaining Concept Shift with Interpretable Feature
Attribution", arXiv 2505.20634; tables from the official repository Rachel-Lyu/SGShift (MIT;
underlying data UCI, CC BY 4.0 — see ``data/README.md``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, logit
from sklearn.base import clone
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils import Bunch

from ..core.validation import check_choice, check_int, check_scalar_in

__all__ = ["DIABETES_SHIFTED", "SUPPORT2_SHIFTED", "load_diabetes_readmission", "load_support2",
           "make_concept_shift", "make_semisynthetic"]

DIABETES_SHIFTED = ["num_lab_procedures", "num_medications", "number_diagnoses", "change",
                    "metformin_Steady", "insulin_Down", "Transferred", "Home",
                    "Emergency_admission", "Elective_admission"]
SUPPORT2_SHIFTED = ["age", "slos", "d.time", "avtisst", "hday", "wblc", "temp", "dzgroup_CHF",
                    "dzclass_ARF/MOSF", "dzclass_Cancer", "income_>$50k", "income_under $11k",
                    "race_white", "sfdm2_Coma or Intub", "ca_metastatic"]
SOURCE_CORRELATION = 0.3     # Sigma_jk = 0.3^|j-k| in make_concept_shift
PROB_CLIP = 1e-6
POOL_SPLIT_SEED = 42         # the reference splits the target pool 50/50 with seed 42


def _read(name: str, path) -> pd.DataFrame:
    if path is not None:
        folder = Path(path)
        for candidate in (folder / name, folder / name.removesuffix(".gz")):
            if candidate.exists():
                return pd.read_csv(candidate)
        raise FileNotFoundError(f"{name} (or its uncompressed .csv) not found in {folder}")
    with resources.files(__package__).joinpath("data", name).open("rb") as handle:
        return pd.read_csv(handle, compression="gzip")


def load_diabetes_readmission(path=None) -> Bunch:
    """Diabetes 130-US hospitals readmission, TableShift preprocessing (33 features).

    Source domain: admitted through the emergency room (49,213 rows); target: every other
    admission source (24,402 rows). Label ``readmitted`` (0/1).

    Parameters
    ----------
    path : str or Path, optional
        Folder with ``source_DiabetesReadmission.csv[.gz]`` and
        ``target_DiabetesReadmission.csv[.gz]``; default: the copies shipped with the package.

    Returns
    -------
    Bunch with ``X_source``, ``y_source``, ``X_target``, ``y_target`` (pandas),
    ``feature_names`` and ``shifted_features`` (the authors' 10 planted features).

    Examples
    --------
    >>> from icml26.sgshift import load_diabetes_readmission
    >>> data = load_diabetes_readmission()
    >>> data.X_source.shape, data.X_target.shape
    ((49213, 33), (24402, 33))
    """
    source = _read("source_DiabetesReadmission.csv.gz", path)
    target = _read("target_DiabetesReadmission.csv.gz", path)
    features = [c for c in source.columns if c != "readmitted"]
    return Bunch(X_source=source[features], y_source=source["readmitted"].astype(int),
                 X_target=target[features], y_target=target["readmitted"].astype(int),
                 feature_names=features, shifted_features=list(DIABETES_SHIFTED))


def load_support2(path=None) -> Bunch:
    """SUPPORT2 with y = log10(total charges); source = survived the stay, target = died.

    Parameters
    ----------
    path : str or Path, optional
        Folder with ``support2_processed.csv[.gz]``; default: the packaged copy.

    Returns
    -------
    Bunch with ``X_source`` (5453 x 64), ``y_source``, ``X_target`` (1817 x 64),
    ``y_target``, ``feature_names`` and ``shifted_features`` (the authors' 15).

    Examples
    --------
    >>> from icml26.sgshift import load_support2
    >>> load_support2().X_target.shape
    (1817, 64)
    """
    frame = _read("support2_processed.csv.gz", path)
    features = [c for c in frame.columns if c not in ("charges", "hospdead")]
    y = np.log10(frame["charges"].astype(float))
    source = frame["hospdead"] == 0
    return Bunch(X_source=frame.loc[source, features].reset_index(drop=True),
                 y_source=y[source].reset_index(drop=True),
                 X_target=frame.loc[~source, features].reset_index(drop=True),
                 y_target=y[~source].reset_index(drop=True),
                 feature_names=features, shifted_features=list(SUPPORT2_SHIFTED))


def make_concept_shift(n_source=5000, n_target=1000, n_val=1000, p=30, n_informative=10,
                       n_shifted=6, magnitude=1.0, omitted=(), kind="linear",
                       task="classification", shifted=None, seed=0) -> Bunch:
    """Synthetic source/target pair whose P(y | x) differs on a known sparse feature set.

    x ~ N(0, Sigma) with Sigma_jk = 0.3^|j-k|; source link eta_S = x^T w with w_j = +-1 on
    the first ``n_informative`` features; target eta_T = eta_S + sum_{j in S*} beta_j x_j
    with beta_j = +-magnitude (``kind="linear"``) or eta_S + sum_{j<k in S*} gamma_jk x_j x_k,
    gamma = +-magnitude/2 (``"interaction"``). Classification: y ~ Bernoulli(expit(eta));
    regression: y = eta + N(0, 1).

    Parameters
    ----------
    n_source, n_target, n_val, p, n_informative, n_shifted : int
    magnitude : float
    omitted : sequence of int
        Informative features to hide from the analyst's source model (recorded in
        ``visible``): the source model is then misspecified — the case for absorption.
    kind : {"linear", "interaction"}
    task : {"classification", "regression"}
    shifted : sequence of int, optional
        Use these shifted indices instead of drawing ``n_shifted`` at random.
    seed : int

    Returns
    -------
    Bunch with ``X_source``, ``y_source``, ``X_target``, ``y_target``, ``X_val``, ``y_val``,
    ``truth`` (sorted shifted indices), ``source_coef``, ``shift_coef``, ``visible``.

    Examples
    --------
    >>> from icml26.sgshift import make_concept_shift
    >>> data = make_concept_shift(p=8, n_informative=3, n_shifted=2, seed=1)
    >>> data.X_target.shape, len(data.truth)
    ((1000, 8), 2)
    """
    for name, value, low in (("n_source", n_source, 1), ("n_target", n_target, 1),
                             ("n_val", n_val, 0), ("p", p, 1), ("n_informative", n_informative, 0)):
        check_int(value, name, min_value=low)
    check_choice(kind, "kind", ["linear", "interaction"])
    check_choice(task, "task", ["classification", "regression"])
    check_scalar_in(magnitude, "magnitude")
    if n_informative > p:
        raise ValueError(f"n_informative must be <= p={p}, got {n_informative}")
    rng = np.random.default_rng(seed)
    if shifted is None:
        check_int(n_shifted, "n_shifted", min_value=0, max_value=p)
        truth = np.sort(rng.choice(p, size=n_shifted, replace=False))
    else:
        truth = np.sort(np.asarray(shifted, dtype=int))
        if truth.size and (truth.min() < 0 or truth.max() >= p):
            raise ValueError(f"shifted indices must lie in [0, {p}), got {list(truth)}")
    omitted = np.asarray(sorted(set(int(o) for o in omitted)), dtype=int)
    if omitted.size and (omitted.min() < 0 or omitted.max() >= p):
        raise ValueError(f"omitted indices must lie in [0, {p}), got {list(omitted)}")
    cov = SOURCE_CORRELATION ** np.abs(np.subtract.outer(np.arange(p), np.arange(p)))
    chol = np.linalg.cholesky(cov)
    source_coef = np.zeros(p)
    source_coef[:n_informative] = rng.choice([-1.0, 1.0], size=n_informative)
    shift_coef = np.zeros(p)
    shift_coef[truth] = magnitude * rng.choice([-1.0, 1.0], size=truth.size)
    pairs = [(a, b) for i, a in enumerate(truth) for b in truth[i + 1:]]
    gamma = (magnitude / 2) * rng.choice([-1.0, 1.0], size=len(pairs))

    def draw(n, shift):
        X = rng.standard_normal((n, p)) @ chol.T
        eta = X @ source_coef
        if shift:
            if kind == "linear":
                eta = eta + X @ shift_coef
            else:
                for g, (a, b) in zip(gamma, pairs):
                    eta = eta + g * X[:, a] * X[:, b]
        if task == "classification":
            y = (rng.random(n) < expit(eta)).astype(int)
        else:
            y = eta + rng.standard_normal(n)
        return X, y

    X_source, y_source = draw(n_source, False)
    X_target, y_target = draw(n_target, True)
    X_val, y_val = draw(n_val, True)
    return Bunch(X_source=X_source, y_source=y_source, X_target=X_target, y_target=y_target,
                 X_val=X_val, y_val=y_val, truth=truth, source_coef=source_coef,
                 shift_coef=shift_coef, visible=np.setdiff1d(np.arange(p), omitted),
                 omitted=omitted)


def make_semisynthetic(X_source, y_source, X_target, shifted, *, task="classification",
                       generator=None, n_source=5000, n_target=1000, n_val=1000, magnitude=1.0,
                       source_labels="sampled", target_fraction=0.5, seed=0) -> Bunch:
    """Semi-synthetic labels on real features with a planted concept shift (paper §simulations).

    Draw ``n_source`` source rows; split the target pool (seed 42; 50/50 as in the reference
    by default) and draw ``n_target`` rows from the first part and ``n_val`` from the rest; standardise all
    with the source sample's mean/std. Fit ``generator`` on the real source labels, then

    - classification: y_S ~ Bernoulli(p_gen(x)) (``source_labels="sampled"``, our default)
      or y_S = the generator's hard predictions (``"hard"``, the reference code's choice);
      target eta_T = logit p_gen(x) + sum_{j in S*} beta_j x_j, y_T ~ Bernoulli(expit eta_T);
    - regression: y_S = f_gen(x) and y_T = f_gen(x) + sum beta_j x_j; with ``"sampled"``
      (our resolution) Gaussian noise with the generator's residual std is added to both.

    beta_j = +-magnitude with random signs.

    Parameters
    ----------
    X_source, X_target : DataFrame
        Real features of the two domains (same columns).
    y_source : array-like
        Real source labels (used only to fit the generating model).
    shifted : list of str
        Names of the planted shifted features.
    task : {"classification", "regression"}
    generator : estimator, optional
        Generating model (default LogisticRegression(max_iter=500) / LinearRegression()).
    n_source, n_target, n_val : int
    magnitude : float
    source_labels : {"sampled", "hard"}
    target_fraction : float in (0, 1)
        Share of the target pool that ``n_target`` is drawn from.
    seed : int

    Returns
    -------
    Bunch with numpy ``X_source``, ``y_source``, ``X_target``, ``y_target``, ``X_val``,
    ``y_val``, ``truth`` (indices of ``shifted``), ``shift_coef``, ``feature_names``.
    """
    check_choice(task, "task", ["classification", "regression"])
    check_choice(source_labels, "source_labels", ["sampled", "hard"])
    features = list(X_source.columns)
    missing = [s for s in shifted if s not in features]
    if missing:
        raise ValueError(f"shifted features not among the columns: {missing}")
    rng = np.random.default_rng(seed)
    XS_all = np.asarray(X_source, dtype=float)
    yS_real = np.asarray(y_source)
    XT_all = np.asarray(X_target, dtype=float)
    check_scalar_in(target_fraction, "target_fraction", low=0.0, high=1.0,
                    low_inclusive=False, high_inclusive=False)
    half = int(round(target_fraction * len(XT_all)))
    for name, n, available in (("n_source", n_source, len(XS_all)),
                               ("n_target", n_target, half),
                               ("n_val", n_val, len(XT_all) - half)):
        check_int(n, name, min_value=1, max_value=available)
    source_rows = rng.choice(len(XS_all), size=n_source, replace=False)
    pool = np.random.default_rng(POOL_SPLIT_SEED).permutation(len(XT_all))
    target_rows = rng.choice(pool[:half], size=n_target, replace=False)
    val_rows = rng.choice(pool[half:], size=n_val, replace=False)
    scaler = StandardScaler().fit(XS_all[source_rows])
    scale_safe = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)

    def standardise(rows_x):
        return (rows_x - scaler.mean_) / scale_safe

    XS = standardise(XS_all[source_rows])
    XT = standardise(XT_all[target_rows])
    XV = standardise(XT_all[val_rows])
    truth = np.array(sorted(features.index(s) for s in shifted), dtype=int)
    shift_coef = np.zeros(len(features))
    shift_coef[truth] = magnitude * rng.choice([-1.0, 1.0], size=truth.size)
    if generator is None:
        generator = (LogisticRegression(max_iter=500) if task == "classification"
                     else LinearRegression())
    model = clone(generator).fit(XS, yS_real[source_rows])
    if task == "classification":
        def link(X):
            return logit(np.clip(model.predict_proba(X)[:, 1], PROB_CLIP, 1 - PROB_CLIP))
        if source_labels == "sampled":
            yS = (rng.random(n_source) < expit(link(XS))).astype(int)
        else:
            yS = np.asarray(model.predict(XS)).astype(int)
        yT = (rng.random(n_target) < expit(link(XT) + XT @ shift_coef)).astype(int)
        yV = (rng.random(n_val) < expit(link(XV) + XV @ shift_coef)).astype(int)
    else:
        noise = 0.0
        if source_labels == "sampled":
            noise = float(np.std(yS_real[source_rows] - model.predict(XS)))
        yS = model.predict(XS) + noise * rng.standard_normal(n_source)
        yT = model.predict(XT) + XT @ shift_coef + noise * rng.standard_normal(n_target)
        yV = model.predict(XV) + XV @ shift_coef + noise * rng.standard_normal(n_val)
    return Bunch(X_source=XS, y_source=yS, X_target=XT, y_target=yT, X_val=XV, y_val=yV,
                 truth=truth, shift_coef=shift_coef, feature_names=features)
