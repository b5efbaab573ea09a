"""Reproduction of SGShift (Lyu, Turcan & Wilder, arXiv 2505.20634) at CPU scale.

Parts
-----
A        Diabetes-readmission semi-synthetic shift: feature AUROC vs target size, SGShift and
         SGShift-A against Diff and a WhyShift tree (SHAP-diff opt-in: ``--set include_shap=true``).
B        Absorption: the source model misses 3 informative features; SGShift-A must not
         blame them.
C        Knockoffs: false selections of SGShift-K vs the basic lasso at the same lambda.
D        SUPPORT2 regression (report only, no bar).
speed    Basic SGShift fit on n_T = 1000, p = 64.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from functools import lru_cache, wraps

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import log_loss, mean_squared_error, roc_auc_score
from sklearn.pipeline import make_pipeline

from ..core.experiment import Claim, Experiment, Part, Result, register
from ..core.stats import mean_std, summary_table
from .baselines import DiffLasso, ShapDiff, WhyShiftTree
from .data import (load_diabetes_readmission, load_support2, make_concept_shift,
                   make_semisynthetic)
from .offset_glm import lambda_grid, lambda_max, offset_glm_path
from .sgshift import (SGShift, SGShiftA, SGShiftK, identifiable_truth, score_selection,
                      source_offset)

PAPER = ("R. Lyu, A. Turcan, B. Wilder, \"Explaining Concept Shift with Interpretable Feature "
         "Attribution\", arXiv 2505.20634 (2025)")
PAPER_HEADLINE = "shifted features found with AUC > 0.9, recall > 90 %, often 2–3× baselines"


def _quiet(fn):
    """Run ``fn`` with the expected solver/collinearity warnings silenced."""
    @wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    return wrapper


def _top_k(scores: np.ndarray, tiebreak: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores (ties broken by |tiebreak|)."""
    order = np.lexsort((-np.abs(tiebreak), -np.asarray(scores)))
    return order[:k]


def _method_row(name, est, truth, p, tiebreak=None, features=None, listed_truth=None, **extra):
    """Identification metrics of one method; ``features``/``truth`` may be the identifiable ones.

    ``listed_truth`` (the planted list on all p features) adds ``auroc_listed``, the score
    under the reference code's unit of evaluation.
    """
    metrics = score_selection(est.entry_score_, est.selected_, truth, p, features=features)
    tiebreak = np.zeros(p) if tiebreak is None else tiebreak
    scores = np.asarray(est.entry_score_, dtype=float)
    if features is not None:
        scores = np.where(np.isin(np.arange(p), features), scores, -np.inf)
    top = _top_k(scores, tiebreak, len(truth))
    topk = score_selection(est.entry_score_, top, truth, p, features=features)
    if listed_truth is not None:
        extra["auroc_listed"] = score_selection(est.entry_score_, est.selected_, listed_truth,
                                                p)["auroc"]
    return {"method": name, **metrics, "recall_topk": topk["recall"], **extra}


def _units(data, fitted):
    """Evaluation units: (features, truth, keyword arguments of :func:`_method_row`).

    With aliased reference columns dropped (``collinear="drop"``), the identifiable features
    and the planted shift re-expressed on them; otherwise every feature and the planted list.
    """
    if not fitted.aliased_features_.size:
        return None, data.truth, {}
    features, truth = identifiable_truth(data.X_target, data.shift_coef,
                                         fitted.aliased_features_)
    return features, truth, dict(features=features, listed_truth=data.truth)


def _sgshift_tiebreak(est):
    """|delta| at the smallest lambda of the path: orders features that entered together."""
    return np.abs(est.path_["coefs"][-1])


# --------------------------------------------------------------------------- Part A
@dataclass(frozen=True)
class DiabetesConfig:
    n_targets: tuple = (200, 1000)
    n_source: int = 5000
    n_val: int = 1000
    magnitude: float = 1.0
    generator: str = "logistic"          # "logistic" | "gradient_boosting"
    source_labels: str = "sampled"       # "sampled" (ours) | "hard" (reference code)
    n_lambdas: int = 25
    lambda_min_ratio: float = 1e-3
    include_absorption: bool = True
    include_whyshift: bool = True
    include_shap: bool = False
    collinear: str = "drop"              # "drop" (fix: one reference column per exactly
                                         # collinear group; identifiable truth) | "keep"
                                         # (the reference code's design, planted list)


@lru_cache(maxsize=2)
def _diabetes():
    return load_diabetes_readmission()


def _solver():
    return LogisticRegression(max_iter=500)


def _generator(name):
    if name == "logistic":
        return LogisticRegression(max_iter=500)
    if name == "gradient_boosting":
        return GradientBoostingClassifier(n_estimators=100, random_state=0)
    raise ValueError(f"generator must be 'logistic' or 'gradient_boosting', got {name!r}")


def diabetes_tasks(config):
    return [{"n_target": int(n)} for n in config.n_targets]


@_quiet
def run_diabetes(config: DiabetesConfig, seed: int, task: dict) -> dict:
    """One seed and target size of the Diabetes semi-synthetic sample-size curve."""
    real = _diabetes()
    data = make_semisynthetic(real.X_source, real.y_source, real.X_target, real.shifted_features,
                              generator=_generator(config.generator), n_source=config.n_source,
                              n_target=task["n_target"], n_val=config.n_val,
                              magnitude=config.magnitude, source_labels=config.source_labels,
                              seed=seed)
    p, truth = data.X_source.shape[1], data.truth
    solver = _solver().fit(data.X_source, data.y_source)
    timings, rows = {}, []
    common = dict(n_lambdas=config.n_lambdas, lambda_min_ratio=config.lambda_min_ratio)

    def val_metrics(prob):
        return {"val_logloss": float(log_loss(data.y_val, prob, labels=[0, 1])),
                "val_auc": float(roc_auc_score(data.y_val, prob))}

    common["collinear"] = config.collinear
    t0 = time.process_time()
    basic = SGShift(**common).fit(data.X_target, data.y_target, source_model=solver,
                                  X_source=data.X_source)
    timings["SGShift"] = time.process_time() - t0
    # Every method is scored on the same units: with collinear="drop", the features left after
    # dropping the reference columns, against the planted shift re-expressed on them.
    features, truth, score_kw = _units(data, basic)
    rows.append(_method_row("SGShift", basic, truth, p, _sgshift_tiebreak(basic), **score_kw,
                            **val_metrics(basic.predict_proba(data.X_val)[:, 1])))
    if config.include_absorption:
        t0 = time.process_time()
        absorb = SGShiftA(**common).fit(data.X_target, data.y_target, source_model=solver,
                                        X_source=data.X_source, y_source=data.y_source)
        timings["SGShift-A"] = time.process_time() - t0
        rows.append(_method_row("SGShift-A", absorb, truth, p, _sgshift_tiebreak(absorb),
                                **score_kw,
                                **val_metrics(absorb.predict_proba(data.X_val)[:, 1])))
    baselines = [("Diff", DiffLasso(_solver(), random_state=seed))]
    if config.include_whyshift:
        baselines.append(("WhyShift-tree", WhyShiftTree(_solver(), random_state=seed)))
    if config.include_shap:
        baselines.append(("SHAP-diff", ShapDiff(_solver(), random_state=seed)))
    for name, est in baselines:
        t0 = time.process_time()
        est.fit(data.X_source, data.y_source, data.X_target, data.y_target)
        timings[name] = time.process_time() - t0
        rows.append(_method_row(name, est, truth, p, **score_kw))
    rows.append({"method": "source-only",
                 **val_metrics(solver.predict_proba(data.X_val)[:, 1])})
    target_only = _solver().fit(data.X_target, data.y_target)
    rows.append({"method": "target-only",
                 **val_metrics(target_only.predict_proba(data.X_val)[:, 1])})
    for row in rows:
        row["n_target"] = task["n_target"]
        row["seconds"] = timings.get(row["method"], float("nan"))
    return {"rows": rows, "aliased": [data.feature_names[j] for j in basic.aliased_features_],
            "n_truth": int(len(truth))}


def _records(jobs):
    return [dict(row, seed=j.seed) for j in jobs for row in j.metrics["rows"]]


def _present(frame, columns):
    """The columns of ``columns`` that ``frame`` has (``auroc_listed`` exists only with aliasing)."""
    return [c for c in columns if c in frame.columns]


def _collinear_note(jobs, config):
    """Which reference columns were dropped, and how the claim's units were chosen."""
    if config.collinear != "drop":
        return ("collinear=keep (the reference code's design): every column is in the shift "
                "model and scored against the planted list.")
    aliased = sorted({name for j in jobs for name in j.metrics.get("aliased", [])})
    sizes = sorted({j.metrics.get("n_truth") for j in jobs if "n_truth" in j.metrics})
    return ("collinear=drop: one reference column per exactly collinear group of the target "
            f"sample was dropped (over the seeds: {', '.join(aliased) or 'none'}); every method "
            "is scored on the remaining features against the planted shift re-expressed on them "
            f"({'/'.join(map(str, sizes))} truly shifted); auroc_listed = all features against "
            "the planted list (the old unit). collinear=keep gives the old rule.")


def _mean(frame, method, column, **filters):
    sub = frame[frame["method"] == method]
    for key, value in filters.items():
        sub = sub[sub[key] == value]
    return float(sub[column].mean()) if len(sub) else float("nan")


def summarize_diabetes(jobs, config: DiabetesConfig) -> Result:
    frame = pd.DataFrame(_records(jobs))
    ident = frame[frame["auroc"].notna()] if "auroc" in frame else frame.iloc[:0]
    table = summary_table(ident.to_dict("records"), by=["method", "n_target"],
                          metrics=_present(ident, ["auroc", "auroc_listed", "recall", "precision",
                                                   "n_selected", "recall_topk", "seconds"]))
    pred = summary_table(frame[frame["val_logloss"].notna()].to_dict("records"),
                         by=["method", "n_target"], metrics=["val_logloss", "val_auc"])
    fig = Figure(figsize=(5.5, 3.6))
    ax = fig.add_subplot()
    for method, group in ident.groupby("method", sort=False):
        stats = group.groupby("n_target")["auroc"].agg(["mean", "std"]).reset_index()
        ax.errorbar(stats["n_target"], stats["mean"], yerr=stats["std"].fillna(0), marker="o",
                    capsize=3, label=method)
    ax.set_xscale("log")
    ax.set_xlabel("target sample size n_T")
    ax.set_ylabel("feature AUROC (path entry score)")
    ax.set_title("Diabetes semi-synthetic concept shift")
    ax.legend(fontsize=8)
    fig.tight_layout()
    claims = []
    for n, bar in ((1000, 0.92), (200, 0.80)):
        if n not in set(ident["n_target"]):
            continue
        sg = _mean(ident, "SGShift", "auroc", n_target=n)
        diff = _mean(ident, "Diff", "auroc", n_target=n)
        claims.append(Claim.at_least(f"A: SGShift feature-AUROC, n_T={n}", sg, bar,
                                     paper="AUC > 0.9 (abstract)"))
        claims.append(Claim.at_least(f"A: SGShift − Diff feature-AUROC, n_T={n}", sg - diff,
                                     0.08, paper="often 2–3× baselines (abstract)",
                                     note=f"SGShift {sg:.3f}, Diff {diff:.3f}"))
    notes = [f"generator={config.generator}, source labels={config.source_labels}, "
             f"magnitude={config.magnitude}; recall/precision at the BIC-CV λ and recall of "
             "the top-|S*| ranking are reported without a bar; precision of an empty "
             "selection is undefined (left out of the mean).", _collinear_note(jobs, config)]
    for n in sorted(set(ident["n_target"])):
        notes.append(f"n_T={n}: SGShift recall at CV λ {_mean(ident, 'SGShift', 'recall', n_target=n):.2f}, "
                     f"precision {_mean(ident, 'SGShift', 'precision', n_target=n):.2f}, "
                     f"top-|S*| recall {_mean(ident, 'SGShift', 'recall_topk', n_target=n):.2f}")
    return Result(tables={"A_feature_identification": table, "A_prediction": pred},
                  figures={"A_auroc_vs_n_target": fig}, claims=claims, notes=notes)


# --------------------------------------------------------------------------- Part B
@dataclass(frozen=True)
class AbsorptionConfig:
    n_source: int = 4000
    n_source_absorption: int = 2000
    n_target: int = 1000
    p: int = 30
    n_informative: int = 10
    shifted: tuple = (10, 11, 12, 13, 14, 15)
    omitted: tuple = (0, 1, 2)
    magnitude: float = 1.0
    n_lambdas: int = 25
    lambda_min_ratio: float = 1e-3


@_quiet
def run_absorption(config: AbsorptionConfig, seed: int) -> dict:
    """SGShift vs SGShift-A when the source model omits informative features."""
    data = make_concept_shift(n_source=config.n_source, n_target=config.n_target,
                              n_val=config.n_target, p=config.p,
                              n_informative=config.n_informative, shifted=config.shifted,
                              magnitude=config.magnitude, omitted=config.omitted, seed=seed)
    visible = ColumnTransformer([("visible", "passthrough", list(data.visible))])
    solver = make_pipeline(visible, LogisticRegression(max_iter=500))
    solver.fit(data.X_source, data.y_source)
    common = dict(n_lambdas=config.n_lambdas, lambda_min_ratio=config.lambda_min_ratio)
    omitted = list(config.omitted)
    m = config.n_source_absorption
    out = {}
    for name, est, kwargs in (
            ("SGShift", SGShift(**common), {"X_source": data.X_source}),
            ("SGShift-A", SGShiftA(**common), {"X_source": data.X_source[:m],
                                               "y_source": data.y_source[:m]})):
        est.fit(data.X_target, data.y_target, source_model=solver, **kwargs)
        metrics = est.score_features(data.truth)
        out[name] = {"auroc": metrics["auroc"], "recall": metrics["recall"],
                     "fp": metrics["fp"],
                     "omitted_entry_score": float(np.mean(est.entry_score_[omitted])),
                     "val_logloss": float(log_loss(data.y_val,
                                                   est.predict_proba(data.X_val)[:, 1]))}
    return out


def summarize_absorption(jobs, config: AbsorptionConfig) -> Result:
    records = [dict(method=name, seed=j.seed, **vals) for j in jobs
               for name, vals in j.metrics.items()]
    table = summary_table(records, by="method",
                          metrics=["auroc", "omitted_entry_score", "recall", "fp", "val_logloss"])
    frame = pd.DataFrame(records)
    basic = _mean(frame, "SGShift", "auroc")
    absorb = _mean(frame, "SGShift-A", "auroc")
    omit_a = _mean(frame, "SGShift-A", "omitted_entry_score")
    omit_b = _mean(frame, "SGShift", "omitted_entry_score")
    fig = Figure(figsize=(5, 3.2))
    ax = fig.add_subplot()
    ax.bar(np.arange(2) - 0.2, [basic, absorb], 0.4, label="feature AUROC")
    ax.bar(np.arange(2) + 0.2, [omit_b, omit_a], 0.4, label="omitted features' entry score")
    ax.set_xticks(range(2), ["SGShift", "SGShift-A"])
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    ax.set_title("Absorption: source model misses 3 informative features")
    fig.tight_layout()
    claims = [
        Claim.at_least("B: SGShift-A − SGShift feature-AUROC", absorb - basic, 0.04,
                       paper="absorption corrects a misspecified source model",
                       note=f"SGShift-A {absorb:.3f}, SGShift {basic:.3f}"),
        Claim.at_most("B: omitted features' mean entry score under SGShift-A", omit_a, 0.5,
                      paper="absorption corrects a misspecified source model",
                      note=f"SGShift: {omit_b:.2f}"),
    ]
    return Result(tables={"B_absorption": table}, figures={"B_absorption": fig}, claims=claims)


# --------------------------------------------------------------------------- Part C
@dataclass(frozen=True)
class KnockoffConfig:
    n_source: int = 4000
    n_target: int = 500
    p: int = 50
    n_informative: int = 10
    n_shifted: int = 6
    magnitude: float = 1.0
    n_bootstraps: int = 20
    v: int = 3
    threshold: float = 0.5
    knockoff_method: str = "equicorrelated"
    include_absorption: bool = True


@_quiet
def run_knockoff(config: KnockoffConfig, seed: int) -> dict:
    """False selections of SGShift-K vs the basic lasso at the same lambda.

    The lambda is the BIC-best level of the basic path on the full target sample (in-sample
    BIC, the spec's rule for this part); the 5-fold CV choice is reported alongside.
    """
    data = make_concept_shift(n_source=config.n_source, n_target=config.n_target, n_val=1000,
                              p=config.p, n_informative=config.n_informative,
                              n_shifted=config.n_shifted, magnitude=config.magnitude, seed=seed)
    solver = _solver().fit(data.X_source, data.y_source)
    fit_kw = dict(source_model=solver, X_source=data.X_source, y_source=data.y_source)
    path = SGShift().fit(data.X_target, data.y_target, source_model=solver,
                         X_source=data.X_source)
    lam = float(path.path_["lambdas"][int(np.argmin(path.path_["bic"]))])
    basic = SGShift(lam=lam).fit(data.X_target, data.y_target, source_model=solver,
                                 X_source=data.X_source)
    knock_kw = dict(n_bootstraps=config.n_bootstraps, v=config.v, threshold=config.threshold,
                    knockoff_method=config.knockoff_method, random_state=seed)
    t0 = time.process_time()
    knock = SGShiftK(lam=lam, **knock_kw).fit(data.X_target, data.y_target, **fit_kw)
    seconds = time.process_time() - t0
    out = {"SGShift (BIC λ)": basic.score_features(data.truth),
           "SGShift-K": dict(knock.score_features(data.truth), seconds=seconds),
           "SGShift (CV λ)": path.score_features(data.truth), "lambda": lam}
    if config.include_absorption:
        ka = SGShiftK(absorption=True, **knock_kw).fit(data.X_target, data.y_target, **fit_kw)
        out["SGShift-KA"] = ka.score_features(data.truth)
    return out


def summarize_knockoff(jobs, config: KnockoffConfig) -> Result:
    records = [dict(method=name, seed=j.seed, **vals) for j in jobs
               for name, vals in j.metrics.items() if isinstance(vals, dict)]
    table = summary_table(records, by="method",
                          metrics=["fp", "recall", "precision", "n_selected", "auroc"])
    frame = pd.DataFrame(records)
    fp_k = _mean(frame, "SGShift-K", "fp")
    fp_b = _mean(frame, "SGShift (BIC λ)", "fp")
    rec_k = _mean(frame, "SGShift-K", "recall")
    bound = config.v / config.threshold
    fig = Figure(figsize=(5, 3.2))
    ax = fig.add_subplot()
    methods = list(dict.fromkeys(frame["method"]))
    ax.bar(np.arange(len(methods)) - 0.2, [_mean(frame, m, "fp") for m in methods], 0.4,
           label="false selections")
    ax.bar(np.arange(len(methods)) + 0.2, [_mean(frame, m, "recall") for m in methods], 0.4,
           label="recall")
    ax.axhline(bound, color="grey", ls="--", lw=1, label=f"v/η = {bound:g}")
    ax.set_xticks(range(len(methods)), methods, fontsize=8)
    ax.legend(fontsize=8)
    ax.set_title("Knockoff false discoveries")
    fig.tight_layout()
    claims = [
        Claim.at_most("C: SGShift-K mean false selections ≤ v/η", fp_k, bound,
                      paper="knockoffs limit false discoveries"),
        Claim.at_most("C: SGShift-K false selections − basic", fp_k - fp_b, 1.0,
                      paper="knockoffs limit false discoveries",
                      note=f"SGShift-K {fp_k:.2f}, basic at the same λ {fp_b:.2f}"),
        Claim.at_least("C: SGShift-K recall", rec_k, 0.8, paper="recall > 90 % (abstract)"),
    ]
    return Result(tables={"C_knockoffs": table}, figures={"C_knockoffs": fig}, claims=claims)


# --------------------------------------------------------------------------- Part D
@dataclass(frozen=True)
class Support2Config:
    n_source: int = 2000               # of the 5453 source rows (keeps the absorption fit short)
    n_target: int = 1000
    n_val: int = 800
    target_fraction: float = 0.551   # 1001 of the 1817 target rows for training, 816 for validation
    magnitude: float = 2.0
    source_labels: str = "sampled"
    include_absorption: bool = True
    include_whyshift: bool = True
    collinear: str = "drop"          # as in Part A


@lru_cache(maxsize=1)
def _support2():
    return load_support2()


@_quiet
def run_support2(config: Support2Config, seed: int) -> dict:
    """SUPPORT2 semi-synthetic regression shift (15 planted features): report only."""
    real = _support2()
    data = make_semisynthetic(real.X_source, real.y_source, real.X_target,
                              real.shifted_features, task="regression",
                              n_source=config.n_source, n_target=config.n_target,
                              n_val=config.n_val, magnitude=config.magnitude,
                              source_labels=config.source_labels,
                              target_fraction=config.target_fraction, seed=seed)
    p, truth = data.X_source.shape[1], data.truth
    solver = LinearRegression().fit(data.X_source, data.y_source)
    rows = []
    methods = [("SGShift", SGShift(collinear=config.collinear))]
    if config.include_absorption:
        methods.append(("SGShift-A", SGShiftA(collinear=config.collinear)))
    score_kw, aliased = None, []
    for name, est in methods:
        est.fit(data.X_target, data.y_target, source_model=solver, X_source=data.X_source,
                y_source=data.y_source)
        if score_kw is None:
            _, truth, score_kw = _units(data, est)
            aliased = [data.feature_names[j] for j in est.aliased_features_]
        rows.append(_method_row(name, est, truth, p, _sgshift_tiebreak(est), **score_kw,
                                val_mse=float(mean_squared_error(data.y_val,
                                                                 est.predict(data.X_val)))))
    baselines = [("Diff", DiffLasso(LinearRegression(), alphas=tuple(np.geomspace(1e-7, 1, 29)),
                                    random_state=seed))]
    if config.include_whyshift:
        baselines.append(("WhyShift-tree", WhyShiftTree(LinearRegression(), random_state=seed)))
    for name, est in baselines:
        est.fit(data.X_source, data.y_source, data.X_target, data.y_target)
        rows.append(_method_row(name, est, truth, p, **score_kw))
    rows.append({"method": "source-only",
                 "val_mse": float(mean_squared_error(data.y_val, solver.predict(data.X_val)))})
    return {"rows": rows, "aliased": aliased, "n_truth": int(len(truth))}


def summarize_support2(jobs, config: Support2Config) -> Result:
    frame = pd.DataFrame(_records(jobs))
    ident = frame[frame["auroc"].notna()]
    table = summary_table(ident.to_dict("records"), by="method",
                          metrics=_present(ident, ["auroc", "auroc_listed", "recall", "precision",
                                                   "n_selected", "recall_topk"]))
    mse = summary_table(frame[frame["val_mse"].notna()].to_dict("records"), by="method",
                        metrics=["val_mse"])
    return Result(tables={"D_support2": table, "D_prediction": mse},
                  notes=["SUPPORT2 (regression, 15 planted features, magnitude "
                         f"{config.magnitude}): reported without a bar, as the spec asks.",
                         _collinear_note(jobs, config)])


# --------------------------------------------------------------------------- speed
@dataclass(frozen=True)
class SpeedConfig:
    n_target: int = 1000
    p: int = 64
    n_lambdas: int = 25
    repeats: int = 3


@_quiet
def run_speed(config: SpeedConfig, seed: int) -> dict:
    """CPU time (process) of the basic path and of a full SGShift fit (path + 5-fold CV)."""
    data = make_concept_shift(n_source=5000, n_target=config.n_target, p=config.p,
                              n_informative=10, n_shifted=6, seed=seed)
    solver = _solver().fit(data.X_source, data.y_source)
    offset = source_offset(solver, data.X_target, "classification")
    X = (data.X_target - data.X_source.mean(0)) / data.X_source.std(0)
    y = data.y_target.astype(float)
    path_times, fit_times = [], []
    for _ in range(config.repeats):
        t0 = time.process_time()
        grid = lambda_grid(lambda_max(X, y, offset), config.n_lambdas, 1e-3)
        offset_glm_path(X, y, offset, grid)
        path_times.append(time.process_time() - t0)
        t0 = time.process_time()
        SGShift(n_lambdas=config.n_lambdas).fit(data.X_target, data.y_target,
                                                source_model=solver, X_source=data.X_source)
        fit_times.append(time.process_time() - t0)
    return {"path_seconds": float(np.median(path_times)),
            "fit_seconds": float(np.median(fit_times))}


def summarize_speed(jobs, config: SpeedConfig) -> Result:
    path_s, _ = mean_std(j.metrics["path_seconds"] for j in jobs)
    fit_s, _ = mean_std(j.metrics["fit_seconds"] for j in jobs)
    table = pd.DataFrame([{"n_target": config.n_target, "p": config.p,
                           "n_lambdas": config.n_lambdas, "path_seconds": path_s,
                           "fit_with_cv_seconds": fit_s}])
    claims = [Claim.at_most(f"speed: basic path n_T={config.n_target}, p={config.p} (seconds)",
                            path_s, 5.0, paper="no complexity claim in the paper",
                            note=f"full fit incl. 5-fold BIC-CV: {fit_s:.2f} s")]
    return Result(tables={"speed": table}, claims=claims)


EXPERIMENT = register(Experiment(
    slug="sgshift",
    title="Explaining Concept Shift with Interpretable Feature Attribution (SGShift)",
    parts=[
        Part(name="A", run=run_diabetes, summarize=summarize_diabetes,
             quick=DiabetesConfig(include_absorption=False, include_whyshift=False),
             full=DiabetesConfig(),
             seeds=(0, 1, 2, 3, 4), quick_seeds=(0,), tasks=diabetes_tasks,
             description="Diabetes semi-synthetic shift: feature AUROC vs n_T, vs Diff/WhyShift"),
        Part(name="B", run=run_absorption, summarize=summarize_absorption,
             quick=AbsorptionConfig(), full=AbsorptionConfig(),
             seeds=(0, 1, 2, 3, 4), quick_seeds=(0,),
             description="absorption when the source model omits informative features"),
        Part(name="C", run=run_knockoff, summarize=summarize_knockoff,
             quick=KnockoffConfig(n_bootstraps=10, include_absorption=False),
             full=KnockoffConfig(), seeds=(0, 1, 2, 3, 4, 5), quick_seeds=(0,),
             description="derandomised knockoffs: false selections vs the basic lasso"),
        Part(name="D", run=run_support2, summarize=summarize_support2,
             quick=Support2Config(include_absorption=False, include_whyshift=False),
             full=Support2Config(),
             seeds=(0, 1, 2), quick_seeds=(0,),
             description="SUPPORT2 regression shift (report only)"),
        Part(name="speed", run=run_speed, summarize=summarize_speed,
             quick=SpeedConfig(repeats=1), full=SpeedConfig(), seeds=(0,), quick_seeds=(0,),
             description="basic SGShift path on n_T=1000, p=64"),
    ],
    claims=[PAPER_HEADLINE,
            "absorption removes spurious attributions of a misspecified source model",
            "knockoffs bound false discoveries"],
    reference=PAPER,
))
