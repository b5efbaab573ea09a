"""Reproduction of RACER's claims: validity (risk <= alpha), efficiency (set size at risk alpha,
abstention on unanswerable queries), downstream accuracy of the vote over the routed set, the
PAC variant, real two-model MMLU data, and O(n log n) calibration.

Parts: ``A`` (synthetic 7-model benchmark, spec §6 Exp A), ``B`` (RouteLLM MMLU, K = 2, Exp B)
and ``scaling`` (calibration time against n_cal). The claims, bars, kinds and controls are in
``claims.toml``; each ``summarize`` returns the measurements the table names.

Controls and competitors (run on the same splits as RACER):

- **random-score RACER** (negative control): the whole pipeline with a router whose scores are
  i.i.d. U[0, 1], independent of the query. The risk guarantee holds for it too (the theorem is
  scorer-free), so validity is an implementation check; a paper claim it also meets is not
  earned by RACER.
- **calibrated top-k** (competitor at matched risk): :class:`~icml26.racer.baselines.CalibratedTopK`,
  a fixed-size (fractional k) set calibrated by the same conformal rule on the same split.
- **top-k vote at matched mean set size** (competitor at matched cost):
  :func:`~icml26.racer.baselines.mixed_top_k_sets` with RACER's test mean set size, voted with
  the same rule (temperature chosen on the same held-out split).
- **random abstention** at RACER's abstention rate (negative control of the abstention claim).

Comparisons over seeds carry a paired BCa interval over the per-seed means
(:func:`icml26.core.stats.paired_mean_interval`, level :data:`INTERVAL_LEVEL`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score

from icml26.core.claims import Measurement
from icml26.core.experiment import Experiment, Part, Result, register
from icml26.core.figures import subplots
from icml26.core.stats import best_seconds, loglog_slope, paired_mean_interval, summary_table

from .aggregation import select_temperature, weighted_vote
from .baselines import (CalibratedTopK, all_models_sets, best_single_model, mixed_top_k_sets,
                        naive_quantile_threshold, threshold_sets, top_k_sets)
from .calibrator import (RACERCalibrator, augment_scores, crc_threshold,
                         nonconformity_scores, pac_threshold, set_metrics, threshold_levels)
from .data import load_routellm_mmlu, make_routing_benchmark
from .routers import TextScoreRouter, mlp_router

ALPHAS = (0.05, 0.1, 0.15, 0.2)
SET_METRICS = ["risk", "set_size", "abstention_rate", "correct_abstention_rate"]
TRAIN_SPLIT = 999_999  # split index of the router's train/pool split (cal/test splits use 0..)
RANDOM_SCORES_STREAM = 31_337  # seed stream of the random-score router (negative control)
#: Two-sided level of the paired intervals over seeds: 5 % on each side, a one-sided test at
#: p < 0.05 of "the mean paired difference clears the bar".
INTERVAL_LEVEL = 0.90

RACER_CRC = "RACER crc"
RACER_RANDOM = "RACER crc (random scores)"
TOPK_CAL = "top-k calibrated (matched risk)"
TOPK_VOTE = "top-k vote (matched mean size)"
TOPK_VOTE_RANDOM = "top-k vote (matched to random-score RACER)"
RANDOM_ABSTAIN = "random abstention (RACER's rate)"
BASE = "base router accuracy"
BASE_RANDOM = "base router accuracy (random scores)"


# -- shared helpers ---------------------------------------------------------------------

def _split(n: int, seed: int, index: int, shares: tuple[float, ...]) -> list[np.ndarray]:
    """Split ``range(n)`` into consecutive blocks of the given shares (last one takes the rest)."""
    perm = np.random.default_rng([seed, index]).permutation(n)
    bounds = np.cumsum([int(round(s * n)) for s in shares])
    return np.split(perm, bounds)


def _split_seed(seed: int, split: int) -> int:
    return seed * 100_003 + split


def _racer(alpha, seed, split, **kwargs) -> RACERCalibrator:
    return RACERCalibrator(alpha=alpha, random_state=_split_seed(seed, split), **kwargs)


def random_scores(shape, seed: int) -> np.ndarray:
    """The negative control's router: i.i.d. U[0, 1] scores, independent of the queries."""
    return np.random.default_rng([seed, RANDOM_SCORES_STREAM]).random(shape)


def _mean_rows(records: list[dict], keys=("method", "alpha")) -> list[dict]:
    frame = pd.DataFrame.from_records(records)
    return (frame.drop(columns=["split"]).groupby(list(keys), sort=False, dropna=False).mean(numeric_only=True)
            .reset_index().to_dict("records"))


def _records(jobs) -> pd.DataFrame:
    """Per-seed rows of all jobs; non-finite numbers come back from JSON as text -> NaN."""
    frame = pd.DataFrame.from_records([dict(r, seed=j.seed) for j in jobs for r in j.metrics["rows"]])
    for column in frame.columns.drop("method"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


def _table(jobs, metrics) -> pd.DataFrame:
    frame = _records(jobs)
    frame["alpha"] = frame["alpha"].astype(object).where(frame["alpha"].notna(), "-")
    for m in metrics:
        if m not in frame.columns:
            frame[m] = np.nan
    return summary_table(frame.to_dict("records"), by=["method", "alpha"], metrics=metrics)


def _seed_means(jobs) -> pd.DataFrame:
    frame = _records(jobs)
    return frame.groupby(["method", "alpha"], sort=False, dropna=False).mean(numeric_only=True).drop(
        columns=["seed"])


def _value(means: pd.DataFrame, method: str, alpha: float, metric: str) -> float:
    return float(means.loc[(method, alpha), metric])


def _per_seed(frame: pd.DataFrame, method: str, alpha, metric: str) -> pd.Series:
    """One value per seed of ``metric`` for ``method`` at ``alpha`` (None: the alpha-free rows)."""
    rows = frame[frame["method"] == method]
    rows = rows[rows["alpha"].isna()] if alpha is None else rows[np.isclose(rows["alpha"], alpha)]
    return rows.set_index("seed")[metric].astype(float)


def paired_difference(frame: pd.DataFrame, first: tuple, second: tuple,
                      note: str = "") -> Measurement:
    """Mean over seeds of ``first - second`` (each ``(method, alpha, metric)``) with a paired
    BCa interval at :data:`INTERVAL_LEVEL`; the half-width is in the note."""
    diff = (_per_seed(frame, *first) - _per_seed(frame, *second)).dropna()
    if diff.empty:
        return Measurement(None, incomplete="no seed has both measurements")
    value = float(diff.mean())
    if len(diff) < 2:
        return Measurement(value, incomplete="one seed: no interval")
    lo, hi = paired_mean_interval(diff.to_numpy(), INTERVAL_LEVEL)
    text = (f"{len(diff)} seeds, {INTERVAL_LEVEL:.0%} paired BCa [{lo:+.3f}, {hi:+.3f}], "
            f"half-width {(hi - lo) / 2:.3f}; wins {int((diff > 0).sum())}/{len(diff)}")
    return Measurement(value, interval=(lo, hi), note="; ".join(t for t in (text, note) if t))


def _risk_bands(means, method, alphas, key_prefix="risk") -> dict:
    return {f"{key_prefix}_a{a:g}": _value(means, method, a, "risk") for a in alphas}


# -- Part A: synthetic 7-model benchmark --------------------------------------------------

@dataclass(frozen=True)
class SyntheticConfig:
    n_queries: int = 12000
    n_models: int = 7
    train_share: float = 0.4
    held_out_share: float = 0.1
    calibration_share: float = 0.5
    n_splits: int = 50
    alphas: tuple[float, ...] = ALPHAS
    delta: float = 0.1
    small_n_calibration: int = 100
    small_n_splits: int = 500
    small_n_alpha: float = 0.1
    size_alpha: float = 0.1  # the alpha of the set-size and abstention claims (spec §6)
    vote_alphas: tuple[float, ...] = (0.05, 0.1)  # the alphas of the vote claims (spec §6)


def _vote_accuracy(sets_held, sets_test, scores, answers, gold, held, test,
                   majority: bool = True) -> dict:
    """Weighted vote (temperature chosen on the held-out split) and majority vote accuracy."""
    routed_held, routed_test = sets_held[:, 1:], sets_test[:, 1:]
    temperature = select_temperature(answers[held], routed_held, scores[held], gold[held])
    weighted = weighted_vote(answers[test], routed_test, scores[test], temperature)
    out = {"weighted_accuracy": float((weighted == gold[test]).mean()),
           "temperature": temperature}
    if majority:
        vote = weighted_vote(answers[test], routed_test, None, tie_scores=scores[test])
        out["majority_accuracy"] = float((vote == gold[test]).mean())
    return out


def _matched_top_k_vote(scores, mean_size, seed, split, stream, answers, gold, held, test) -> dict:
    """A top-k vote with the given mean set size, voted by the same rule as RACER's."""
    rs = _split_seed(seed, split)
    sets_held = mixed_top_k_sets(scores[held], mean_size, random_state=[rs, stream, 0])
    sets_test = mixed_top_k_sets(scores[test], mean_size, random_state=[rs, stream, 1])
    return {"set_size": float(sets_test[:, 1:].sum(axis=1).mean()),
            **_vote_accuracy(sets_held, sets_test, scores, answers, gold, held, test,
                             majority=False)}


def _random_abstention(sets_test, Y_test, seed, split) -> dict:
    """Abstain on as many test queries as RACER does, chosen at random."""
    n_abstain = int((~sets_test[:, 1:].any(axis=1)).sum())
    if n_abstain == 0:
        return {"abstention_rate": 0.0, "correct_abstention_rate": None}
    pick = np.random.default_rng([_split_seed(seed, split), 5]).choice(
        len(Y_test), n_abstain, replace=False)
    return {"abstention_rate": n_abstain / len(Y_test),
            "correct_abstention_rate": float((Y_test[pick].sum(axis=1) == 0).mean())}


def _synthetic_split(cfg, seed, split, S, S_soft, R, Y, answers, gold, records) -> None:
    held, cal, test = _split(len(Y), seed, split, (cfg.held_out_share, cfg.calibration_share))

    def add(method, alpha, row):
        records.append(dict(method=method, alpha=alpha, split=split, **row))

    for alpha in cfg.alphas:
        for method, scores in ((RACER_CRC, S), ("RACER crc (softmax scores)", S_soft),
                               (RACER_RANDOM, R)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # softmax dominance: reported below
                cal_ = _racer(alpha, seed, split).fit(scores[cal], Y[cal])
            sets_test = cal_.predict_sets(scores[test])
            row = set_metrics(sets_test, Y[test], scores[test])
            row.update(_vote_accuracy(cal_.predict_sets(scores[held]), sets_test, scores,
                                      answers, gold, held, test))
            row["null_in_set"] = float(sets_test[:, 0].mean())
            add(method, alpha, row)
            if method == RACER_CRC:
                add(RANDOM_ABSTAIN, alpha, _random_abstention(sets_test, Y[test], seed, split))
                add(TOPK_VOTE, alpha, _matched_top_k_vote(S, row["set_size"], seed, split, 1,
                                                          answers, gold, held, test))
            elif method == RACER_RANDOM:
                add(TOPK_VOTE_RANDOM, alpha, _matched_top_k_vote(
                    S, row["set_size"], seed, split, 2, answers, gold, held, test))
        top = CalibratedTopK(alpha, random_state=_split_seed(seed, split)).fit(S[cal], Y[cal])
        add(TOPK_CAL, alpha, set_metrics(top.predict_sets(S[test]), Y[test], S[test]))
        hb = _racer(alpha, seed, split, bound="hb", delta=cfg.delta).fit(S[cal], Y[cal])
        row = set_metrics(hb.predict_sets(S[test]), Y[test], S[test])
        row["violation"] = float(row["risk"] > alpha)
        add("RACER hb (PAC)", alpha, row)
        try:
            noaug = _racer(alpha, seed, split, augment=False).fit(S[cal], Y[cal])
            row = set_metrics(noaug.predict_sets(S[test]), Y[test], S[test])
        except ValueError:  # infeasible: unanswerable share > alpha
            row = {m: None for m in SET_METRICS}
        add("conformal, no null (augment=False)", alpha, row)
    # alpha-free baselines, stored once per split under alpha = nan
    best_k, best_acc = best_single_model(Y[test])
    for method, sets in [*((f"top-{k}" + (" (base router)" if k == 1 else ""),
                            top_k_sets(S[test], k)) for k in range(1, Y.shape[1] + 1)),
                         ("threshold r >= 0.5", threshold_sets(S[test]))]:
        add(method, None, set_metrics(sets, Y[test], S[test]))
    all_vote = weighted_vote(answers[test], all_models_sets(S[test])[:, 1:], None,
                             tie_scores=S[test])
    add("all models vote", None, {"set_size": float(Y.shape[1]),
                                  "majority_accuracy": float((all_vote == gold[test]).mean())})
    add("best single model (oracle)", None, {"set_size": 1.0, "majority_accuracy": best_acc,
                                             "best_model": best_k})
    for method, scores in ((BASE, S), (BASE_RANDOM, R)):
        add(method, None, {"set_size": 1.0, "weighted_accuracy": set_metrics(
            top_k_sets(scores[test], 1), Y[test], scores[test])["base_accuracy"]})


def _small_n_check(cfg, seed, S, Y) -> dict:
    """Spec §6: n_cal = 100, alpha = 0.1, many splits; the conformal (n + 1) index vs naive."""
    s = nonconformity_scores(augment_scores(S))
    s = s + np.random.default_rng([seed, 7]).uniform(0.0, 1e-6, size=s.shape)
    good = np.column_stack([Y.sum(axis=1) == 0, Y == 1])
    levels = threshold_levels(s, good)
    risks = {"crc": [], "naive": []}
    for j in range(cfg.small_n_splits):
        perm = np.random.default_rng([seed, 10_000 + j]).permutation(len(levels))
        cal, test = perm[:cfg.small_n_calibration], perm[cfg.small_n_calibration:]
        for name, rule in (("crc", crc_threshold), ("naive", naive_quantile_threshold)):
            lam = rule(levels[cal], cfg.small_n_alpha)
            risks[name].append(float((levels[test] > lam).mean()))
    return {name: float(np.mean(v)) for name, v in risks.items()}


def run_synthetic(config: SyntheticConfig, seed: int) -> dict:
    data = make_routing_benchmark(n_queries=config.n_queries, n_models=config.n_models, seed=seed)
    train, pool = _split(len(data.Y), seed, TRAIN_SPLIT, (config.train_share,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        router = mlp_router("sigmoid").fit(data.X[train], data.Y[train])
    S = router.predict_scores(data.X[pool])
    S_soft = S / S.sum(axis=1, keepdims=True)
    R = random_scores(S.shape, seed)
    Y, answers, gold = data.Y[pool], data.answers[pool], data.gold[pool]
    records: list[dict] = []
    for split in range(config.n_splits):
        _synthetic_split(config, seed, split, S, S_soft, R, Y, answers, gold, records)
    auroc = [roc_auc_score(Y[:, k], S[:, k]) for k in range(Y.shape[1]) if 0 < Y[:, k].mean() < 1]
    return {"rows": _mean_rows(records), "unanswerable_share": float((Y.sum(axis=1) == 0).mean()),
            "small_n": _small_n_check(config, seed, S, Y), "router_auroc": float(np.mean(auroc))}


def _alpha_figure(means: pd.DataFrame, panels: list[tuple[str, list[str], str]], alphas):
    fig, axes = subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (metric, methods, ylabel) in zip(axes[0], panels):
        for method in methods:
            values = [means.loc[(method, a), metric] for a in alphas]
            ax.plot(alphas, values, marker="o", label=method)
        if metric == "risk":
            ax.plot(alphas, alphas, "k--", lw=1, label="alpha")
        ax.set_xlabel("alpha")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _abstention_ratio(frame, method, alpha, unanswerable: pd.Series) -> float:
    rate = _per_seed(frame, method, alpha, "correct_abstention_rate")
    return float((rate / unanswerable).mean())


def summarize_synthetic(jobs, config: SyntheticConfig) -> Result:
    means = _seed_means(jobs)
    frame = _records(jobs)
    table = _table(jobs, SET_METRICS + ["weighted_accuracy", "majority_accuracy"])
    alphas = list(config.alphas)
    unanswerable = pd.Series({j.seed: j.metrics["unanswerable_share"] for j in jobs})
    base_acc = float(means.xs(BASE, level="method")["weighted_accuracy"].mean())
    m: dict = _risk_bands(means, RACER_CRC, alphas)
    sizes = [_value(means, RACER_CRC, a, "set_size") for a in alphas]
    m["size_monotone"] = Measurement(float(np.max(np.diff(sizes))) if len(sizes) > 1 else 0.0,
                                     note="sizes " + ", ".join(f"{s:.2f}" for s in sizes))
    a = config.size_alpha
    if a in alphas:
        m[f"set_size_a{a:g}"] = _value(means, RACER_CRC, a, "set_size")
        m[f"set_size_random_a{a:g}"] = _value(means, RACER_RANDOM, a, "set_size")
        m[f"set_size_topk_a{a:g}"] = _value(means, TOPK_CAL, a, "set_size")
        risks = ", ".join(f"{name} {_value(means, meth, a, 'risk'):.3f}" for name, meth in
                          (("RACER", RACER_CRC), ("top-k", TOPK_CAL), ("random", RACER_RANDOM)))
        m[f"size_minus_topk_a{a:g}"] = paired_difference(
            frame, (RACER_CRC, a, "set_size"), (TOPK_CAL, a, "set_size"), note="test risk " + risks)
        m[f"size_minus_topk_random_a{a:g}"] = paired_difference(
            frame, (RACER_RANDOM, a, "set_size"), (TOPK_CAL, a, "set_size"))
        m[f"abstain_ratio_a{a:g}"] = Measurement(
            _abstention_ratio(frame, RACER_CRC, a, unanswerable),
            note=f"unanswerable share {unanswerable.mean():.3f}; abstention rate "
                 f"{_value(means, RACER_CRC, a, 'abstention_rate'):.3f}")
        m[f"abstain_ratio_random_a{a:g}"] = _abstention_ratio(frame, RANDOM_ABSTAIN, a, unanswerable)
        m["abstain_ratio_threshold"] = _abstention_ratio(frame, "threshold r >= 0.5", None,
                                                         unanswerable)
    for a in config.vote_alphas:
        if a not in alphas:
            continue
        m[f"vote_gain_a{a:g}"] = paired_difference(
            frame, (RACER_CRC, a, "weighted_accuracy"), (BASE, None, "weighted_accuracy"),
            note=f"base router accuracy {base_acc:.3f}")
        m[f"vote_gain_random_a{a:g}"] = paired_difference(
            frame, (RACER_RANDOM, a, "weighted_accuracy"), (BASE_RANDOM, None, "weighted_accuracy"))
        m[f"vote_gain_topk_a{a:g}"] = paired_difference(
            frame, (TOPK_VOTE, a, "weighted_accuracy"), (BASE, None, "weighted_accuracy"))
        m[f"vote_minus_topk_a{a:g}"] = paired_difference(
            frame, (RACER_CRC, a, "weighted_accuracy"), (TOPK_VOTE, a, "weighted_accuracy"),
            note=f"mean set size {_value(means, RACER_CRC, a, 'set_size'):.2f}")
        m[f"vote_minus_topk_random_a{a:g}"] = paired_difference(
            frame, (RACER_RANDOM, a, "weighted_accuracy"),
            (TOPK_VOTE_RANDOM, a, "weighted_accuracy"))
    hb = "RACER hb (PAC)"
    violations = [_value(means, hb, a, "violation") for a in alphas]
    m["pac_violation"] = Measurement(max(violations), note=(
        f"{config.n_splits * len(jobs)} splits per alpha; per alpha "
        + ", ".join(f"{v:.3f}" for v in violations)))
    m["pac_size_gap"] = min(_value(means, hb, a, "set_size") - _value(means, RACER_CRC, a, "set_size")
                            for a in alphas)
    m["small_n_crc"] = float(np.mean([j.metrics["small_n"]["crc"] for j in jobs]))
    m["small_n_naive"] = float(np.mean([j.metrics["small_n"]["naive"] for j in jobs]))
    soft = "RACER crc (softmax scores)"
    soft_rows = ", ".join(
        f"alpha={a:g}: null in set {_value(means, soft, a, 'null_in_set'):.2f}, abstain "
        f"{_value(means, soft, a, 'abstention_rate'):.3f}, correct-abst. "
        f"{_value(means, soft, a, 'correct_abstention_rate'):.2f}, weighted acc "
        f"{_value(means, soft, a, 'weighted_accuracy'):.3f}" for a in alphas)
    notes = [
        f"Softmax-score finding (spec §6): with softmax-renormalised scores over "
        f"K={config.n_models} models the null score 1 - max_k r_k nearly always tops every "
        f"model, so the null option is in almost every set and abstentions fall on answerable "
        f"queries; the aggregated accuracy then drops towards or below the base router "
        f"({base_acc:.3f}). {soft_rows}. The claims use per-model (sigmoid) probabilities.",
        "Random-score RACER (negative control) per alpha: " + ", ".join(
            f"alpha={a:g}: risk {_value(means, RACER_RANDOM, a, 'risk'):.3f}, size "
            f"{_value(means, RACER_RANDOM, a, 'set_size'):.2f}, vote "
            f"{_value(means, RACER_RANDOM, a, 'weighted_accuracy'):.3f}" for a in alphas)
        + f"; its top-1 accuracy "
          f"{float(means.xs(BASE_RANDOM, level='method')['weighted_accuracy'].mean()):.3f}.",
        "Calibrated top-k (matched risk) per alpha: " + ", ".join(
            f"alpha={a:g}: risk {_value(means, TOPK_CAL, a, 'risk'):.3f}, size "
            f"{_value(means, TOPK_CAL, a, 'set_size'):.2f} (RACER "
            f"{_value(means, RACER_CRC, a, 'set_size'):.2f})" for a in alphas)
        + "; below the unanswerable share top-k cannot reach alpha (all K models).",
        f"Small-n negative control: the naive empirical quantile l_(ceil(n(1-alpha))) reaches "
        f"mean risk {m['small_n_naive']:.4f} vs {m['small_n_crc']:.4f} for the conformal (n+1) "
        f"rule.",
        f"Unanswerable share (no model correct): {unanswerable.mean():.3f}; conformal sets "
        f"without the null option are infeasible for alpha below it (NaN rows). Router mean "
        f"AUROC {np.mean([j.metrics['router_auroc'] for j in jobs]):.3f}.",
    ]
    fig = _alpha_figure(means, [
        ("risk", [RACER_CRC, "RACER hb (PAC)", RACER_RANDOM, TOPK_CAL], "test risk"),
        ("set_size", [RACER_CRC, "RACER hb (PAC)", RACER_RANDOM, TOPK_CAL],
         "mean set size (models)"),
        ("weighted_accuracy", [RACER_CRC, TOPK_VOTE, RACER_RANDOM], "weighted-vote accuracy"),
    ], alphas)
    fig.axes[2].axhline(base_acc, color="grey", ls=":", label="base router")
    fig.axes[2].legend(fontsize=7)
    return Result(tables={"synthetic (K=7), mean ± std over seeds": table},
                  figures={"synthetic_alpha_sweep": fig}, measurements=m, notes=notes)


# -- Part B: real MMLU (RouteLLM), K = 2 ---------------------------------------------------

@dataclass(frozen=True)
class MMLUConfig:
    train_share: float = 0.4
    calibration_share: float = 0.5
    n_splits: int = 50
    alphas: tuple[float, ...] = ALPHAS
    delta: float = 0.1
    ngram_max: int = 2
    min_df: int = 3
    max_features: int = 50_000
    C: float = 2.0
    # the alphas of the size-vs-top-k claims: those of ALPHAS above the share of questions no
    # model answers (0.14), below which top-k cannot reach alpha at all
    topk_alphas: tuple[float, ...] = (0.15, 0.2)


def run_mmlu(config: MMLUConfig, seed: int) -> dict:
    data = load_routellm_mmlu()
    text = np.asarray(data.text, dtype=object)
    train, pool = _split(len(data.Y), seed, TRAIN_SPLIT, (config.train_share,))
    router = TextScoreRouter(ngram_range=(1, config.ngram_max), min_df=config.min_df,
                             max_features=config.max_features, C=config.C)
    S = router.fit(text[train], data.Y[train]).predict_scores(text[pool])
    Y = data.Y[pool]
    R = random_scores(S.shape, seed)
    records = []
    for split in range(config.n_splits):
        cal, test = _split(len(Y), seed, split, (config.calibration_share,))
        for alpha in config.alphas:
            for method, scores, kwargs in (
                    (RACER_CRC, S, {}), ("RACER hb (PAC)", S, {"bound": "hb", "delta": config.delta}),
                    (RACER_RANDOM, R, {})):
                fitted = _racer(alpha, seed, split, **kwargs).fit(scores[cal], Y[cal])
                row = set_metrics(fitted.predict_sets(scores[test]), Y[test], scores[test])
                records.append(dict(method=method, alpha=alpha, split=split, **row))
            top = CalibratedTopK(alpha, random_state=_split_seed(seed, split)).fit(S[cal], Y[cal])
            row = set_metrics(top.predict_sets(S[test]), Y[test], S[test])
            records.append(dict(method=TOPK_CAL, alpha=alpha, split=split, **row))
        for method, sets in (("top-1 (base router)", top_k_sets(S[test], 1)),
                             ("both models", all_models_sets(S[test])),
                             ("threshold r >= 0.5", threshold_sets(S[test]))):
            row = set_metrics(sets, Y[test], S[test])
            records.append(dict(method=method, alpha=None, split=split, **row))
    auroc = [float(roc_auc_score(Y[:, k], S[:, k])) for k in range(Y.shape[1])]
    return {"rows": _mean_rows(records), "auroc": auroc,
            "unanswerable_share": float((Y.sum(axis=1) == 0).mean())}


def summarize_mmlu(jobs, config: MMLUConfig) -> Result:
    means = _seed_means(jobs)
    frame = _records(jobs)
    table = _table(jobs, SET_METRICS)
    alphas = list(config.alphas)
    m: dict = _risk_bands(means, RACER_CRC, alphas)
    large = [a for a in alphas if a >= 0.1]
    if large:
        def biggest(method):
            return max(_value(means, method, a, "set_size") for a in large)
        m["set_size_max"] = Measurement(biggest(RACER_CRC), note="sizes " + ", ".join(
            f"alpha={a:g}: {_value(means, RACER_CRC, a, 'set_size'):.3f}" for a in large))
        m["set_size_max_random"] = biggest(RACER_RANDOM)
        m["set_size_max_topk"] = biggest(TOPK_CAL)
    for a in (a for a in config.topk_alphas if a in alphas):
        m[f"size_minus_topk_a{a:g}"] = paired_difference(
            frame, (RACER_CRC, a, "set_size"), (TOPK_CAL, a, "set_size"),
            note=f"test risk RACER {_value(means, RACER_CRC, a, 'risk'):.3f}, top-k "
                 f"{_value(means, TOPK_CAL, a, 'risk'):.3f}")
        m[f"size_minus_topk_random_a{a:g}"] = paired_difference(
            frame, (RACER_RANDOM, a, "set_size"), (TOPK_CAL, a, "set_size"))
    auroc = np.mean([j.metrics["auroc"] for j in jobs], axis=0)
    top1 = means.xs("top-1 (base router)", level="method")["risk"].mean()
    notes = [f"TF-IDF + logistic-regression router per-model AUROC "
             f"{', '.join(f'{v:.3f}' for v in auroc)}; the base router misroutes {top1:.3f} of "
             f"queries; no model is correct on "
             f"{np.mean([j.metrics['unanswerable_share'] for j in jobs]):.3f}.",
             "Random-score RACER (negative control) set size per alpha: " + ", ".join(
                 f"alpha={a:g}: {_value(means, RACER_RANDOM, a, 'set_size'):.3f}" for a in alphas),
             "Calibrated top-k (matched risk) per alpha: " + ", ".join(
                 f"alpha={a:g}: risk {_value(means, TOPK_CAL, a, 'risk'):.3f}, size "
                 f"{_value(means, TOPK_CAL, a, 'set_size'):.3f}" for a in alphas)]
    methods = [RACER_CRC, "RACER hb (PAC)", RACER_RANDOM, TOPK_CAL]
    fig = _alpha_figure(means, [("risk", methods, "test risk"),
                                ("set_size", methods, "mean set size"),
                                ("abstention_rate", methods[:3], "abstention rate")], alphas)
    return Result(tables={"MMLU (RouteLLM, K=2), mean ± std over seeds": table},
                  figures={"mmlu_alpha_sweep": fig}, measurements=m, notes=notes)


# -- scaling -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)
    repeats: int = 5
    alpha: float = 0.1
    n_models: int = 7
    min_seconds: float = 0.02
    time_pac_and_fit: bool = True


def run_scaling(config: ScalingConfig, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    rows = []
    for n in config.sizes:
        levels = rng.random(n)
        scores = rng.random((n, config.n_models))
        correct = (rng.random((n, config.n_models)) < scores).astype(int)
        cal = RACERCalibrator(alpha=config.alpha, random_state=seed)
        row = {"n_cal": n,
               "crc_threshold_s": best_seconds(lambda: crc_threshold(levels, config.alpha),
                                             config.repeats, config.min_seconds, clock="cpu")}
        if config.time_pac_and_fit:
            row["hb_threshold_s"] = best_seconds(
                lambda: pac_threshold(levels, config.alpha, 0.1, "hb"), config.repeats,
                config.min_seconds, clock="cpu")
            row["fit_s"] = best_seconds(lambda: cal.fit(scores, correct), config.repeats,
                                      config.min_seconds, clock="cpu")
        rows.append(row)
    return {"rows": rows}


def summarize_scaling(jobs, config: ScalingConfig) -> Result:
    frame = pd.DataFrame([r for j in jobs for r in j.metrics["rows"]]).groupby("n_cal").min()
    sizes = frame.index.to_numpy(dtype=float)
    slopes = {c: loglog_slope(sizes, frame[c]) for c in frame.columns}
    table = frame.reset_index()
    table["n_cal"] = table["n_cal"].astype(object)
    table.loc[len(table)] = ["log-log slope", *[slopes[c] for c in frame.columns]]
    measurements = {"crc_slope": Measurement(
        slopes["crc_threshold_s"], note=f"n_cal {sizes[0]:.0e}..{sizes[-1]:.0e}; " + ", ".join(
            f"{c} slope {v:.2f}" for c, v in slopes.items()))}
    fig, ax = subplots(figsize=(4.5, 3.4))
    for c in frame.columns:
        ax.loglog(sizes, frame[c], marker="o", label=f"{c} (slope {slopes[c]:.2f})")
    ax.set_xlabel("n_cal")
    ax.set_ylabel("seconds")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return Result(tables={"calibration time (s, best of repeats)": table},
                  figures={"calibration_scaling": fig}, measurements=measurements,
                  notes=["CPU seconds (process time), best of repeats."])


EXPERIMENT = register(Experiment(
    slug="racer",  # title, claims and part descriptions: claims.toml
    parts=[
        Part(name="A", run=run_synthetic, summarize=summarize_synthetic,
             quick=SyntheticConfig(n_splits=10, small_n_splits=500), full=SyntheticConfig(),
             seeds=tuple(range(10)), quick_seeds=(0, 1)),
        Part(name="B", run=run_mmlu, summarize=summarize_mmlu,
             quick=MMLUConfig(n_splits=10, ngram_max=1), full=MMLUConfig(),
             seeds=tuple(range(10)), quick_seeds=(0, 1)),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling,
             quick=ScalingConfig(repeats=3, time_pac_and_fit=False), full=ScalingConfig(),
             seeds=(0,), quick_seeds=(0,)),
    ],
))
