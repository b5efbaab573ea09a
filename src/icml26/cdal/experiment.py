"""Reproduction of CDAL's claims: a better utility–fairness trade-off, fairness without losing
utility, the dual-anchor ablation, and O(n) time and memory.

Parts (claims, bars, kinds and controls: ``claims.toml``): ``A`` ("rotated", ρ = 0: groups
independent of the clusters, so recovering the clusters is already fair), ``dep`` ("rotated",
ρ = 0.3: groups and clusters dependent — the headline: Balance ≥ truth + 0.1 with NMI ≥
residualise + k-means − 0.05, a joint per-seed margin with a paired BCa interval), ``B``
("meanshift", dual-anchor ablation), ``scaling`` (fit CPU time vs n, peak memory;
SpectralClustering beside), and the opt-in report-only ``C`` (Balance vs NMI over λ and ρ),
``D`` (Reverse-Digits) and ``groups`` (3 and 4 groups). C, D and groups take a ``cache_dir``
(``--set cache_dir=...``): each finished job is stored there and reused on rerun.

Every gap is paired per seed over all seeds (margins over unfair baselines included); the
NMI gap to residualise + k-means is also taken on the seeds where both are fair, and a Pareto
count on (NMI, Balance) states the trade-off. The negative control is anchor MVC (the same
anchor graph without sensitive anchors and HSIC); the competitors are residualise + k-means and
fair SC on the anchor graph, all on the same seeds. Part A's notes give the older rules on the
same runs (means over seeds, margins only on the seeds where a baseline is unfair).
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans, SpectralClustering

from icml26.core.cache import cached_json
from icml26.core.claims import Measurement
from icml26.core.experiment import Experiment, Part, Result, register
from icml26.core.figures import subplots
from icml26.core.stats import loglog_slope, paired_mean_interval, summary_table, win_fraction_interval

from .baselines import LMVSC, AnchorMVC, ConcatKMeans, FairSpectralAnchor, ResidualizedKMeans
from .cdal import CDAL, anchor_spectral_embedding, prepare_views
from .data import load_reverse_digits, make_preset
from .metrics import fairness_scores, hsic_linear, utility_scores

METRICS = ["nmi", "acc", "ari", "balance", "proportional_balance", "fairness_entropy", "hsic"]
KMEANS, ANCHOR, LMVSC_NAME = "k-means (concat)", "anchor MVC", "LMVSC"
RESID, FAIRSC = "residualise + k-means", "fair SC (anchor graph)"
TRUTH = "ground truth"
ORACLE = "fair oracle (truth balanced to truth + 0.1)"
UNFAIR = (KMEANS, ANCHOR, LMVSC_NAME)
MONOTONE_TOL = 1e-8


def cdal_name(lam: float, sensitive_anchors: bool = True) -> str:
    return f"CDAL(lam={lam:g})" + ("" if sensitive_anchors else ", no sensitive anchors")


def build(method: str, n_clusters: int, seed: int, n_anchors=None):
    """The estimator behind a method name of the tables."""
    if method.startswith("CDAL(lam="):
        lam = float(method[len("CDAL(lam="):method.index(")")])
        return CDAL(n_clusters, n_anchors=n_anchors, lam=lam, random_state=seed)
    factories = {KMEANS: lambda: ConcatKMeans(n_clusters, random_state=seed),
                 ANCHOR: lambda: AnchorMVC(n_clusters, n_anchors=n_anchors, random_state=seed),
                 LMVSC_NAME: lambda: LMVSC(n_clusters, n_anchors=n_anchors, random_state=seed),
                 RESID: lambda: ResidualizedKMeans(n_clusters, random_state=seed),
                 FAIRSC: lambda: FairSpectralAnchor(n_clusters, n_anchors=n_anchors, random_state=seed)}
    return factories[method]()


def _monotone_violation(objective) -> float:
    """Largest relative increase of J between iterations (≤ 0 when J never increases)."""
    J = np.asarray(objective, dtype=float)
    if J.size < 2:
        return 0.0
    return float(np.max((J[1:] - J[:-1]) / np.abs(J[:-1])))


def evaluate(method: str, model, data, seconds: float) -> dict:
    row = {"method": method, **utility_scores(data.labels, model.labels_),
           **fairness_scores(model.labels_, data.groups), "seconds": seconds}
    if hasattr(model, "anchor_graph_"):
        row["hsic"] = hsic_linear(model.anchor_graph_, data.groups)
    if hasattr(model, "objective_"):
        row["monotone_violation"] = _monotone_violation(model.objective_)
        row["n_iter"] = model.n_iter_
    if hasattr(model, "dominant_anchor_change_"):
        row["dominant_change"] = model.dominant_anchor_change_
    return row


def run_methods(data, methods, n_clusters: int, seed: int, n_anchors=None) -> list:
    """Fit every method on the same data; one metrics row per method plus the ground truth."""
    rows = [{"method": TRUTH, **utility_scores(data.labels, data.labels),
             **fairness_scores(data.labels, data.groups)}]
    for method in methods:
        model = build(method, n_clusters, seed, n_anchors)
        start = time.perf_counter()
        model.fit(data.views, sensitive=data.groups)
        rows.append(evaluate(method, model, data, time.perf_counter() - start))
    return rows


def _frame(jobs) -> pd.DataFrame:
    frame = pd.DataFrame.from_records([dict(r, seed=j.seed, **(j.task or {}))
                                       for j in jobs for r in j.metrics["rows"]])
    for column in frame.columns:
        if column != "method":
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


def _table(frame: pd.DataFrame, by=("method",)) -> pd.DataFrame:
    frame = frame.copy()
    for m in METRICS:
        if m not in frame.columns:
            frame[m] = np.nan
    return summary_table(frame.to_dict("records"), by=list(by), metrics=METRICS)


def _tradeoff_axes(ax, means: pd.DataFrame, title: str) -> None:
    for method, row in means.iterrows():
        marker = "*" if method == TRUTH else ("o" if method.startswith("CDAL") else "s")
        ax.scatter(row["nmi"], row["balance"], marker=marker, s=60, label=method)
    ax.set_xlabel("NMI (utility)")
    ax.set_ylabel("Balance (fairness)")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, loc="lower left")


def _trade_figure(means: pd.DataFrame, title: str):
    fig, ax = subplots(figsize=(5.2, 4))
    _tradeoff_axes(ax, means, title)
    fig.tight_layout()
    return fig


# -- Part A: "rotated", rho = 0 -----------------------------------------------------------------

# Rules of part A's measurements. Fixed before the 10-seed run, not tuned on it:
FAIR_BALANCE = 0.80        # CDAL is fair: mean Balance over seeds (claims.toml holds the bar)
NMI_TOLERANCE = -0.05      # CDAL's NMI may trail a baseline by this much (claims.toml holds the bar)
UNFAIR_BALANCE = 0.20      # a method is "unfair on a seed" when its Balance there is below this
CI_LEVEL = 0.90            # paired BCa interval (scipy) of every gap over seeds
PARETO_TOL = 0.01          # a point dominates another when ≥ on NMI and Balance and > by this on one
LAM_SWEEP = (1.0, 10.0, 1000.0)      # report-only: dominant-anchor change and NMI/Balance per lam
NEGATIVE = ANCHOR          # negative control: the anchor graph without sensitive anchors or HSIC
KEYS = {KMEANS: "kmeans", ANCHOR: "anchor", LMVSC_NAME: "lmvsc", RESID: "resid", FAIRSC: "fairsc",
        "CDAL(lam=0)": "lam0", ORACLE: "oracle"}


@dataclass(frozen=True)
class RotatedConfig:
    preset: str = "rotated"
    n: int = 3000
    lam: float = 100.0
    rho: float = 0.0
    methods: tuple = (KMEANS, ANCHOR, "CDAL(lam=0)", "CDAL(lam=100)", RESID, FAIRSC, LMVSC_NAME)
    fair_oracle: bool = False     # add the truth balanced to truth + 0.11 by the fewest moves (part dep)


def run_generator(config: RotatedConfig, seed: int) -> dict:
    kwargs = {"rho": config.rho} if config.rho else {}
    data = make_preset(config.preset, seed=seed, n=config.n, **kwargs)
    rows = run_methods(data, config.methods, int(data.labels.max()) + 1, seed)
    if config.fair_oracle:
        truth = fairness_scores(data.labels, data.groups)["balance"]
        labels = fair_oracle_labels(data.labels, data.groups, seed, truth + BALANCE_OVER_TRUTH + ORACLE_SLACK)
        rows.append({"method": ORACLE, **utility_scores(data.labels, labels),
                     **fairness_scores(labels, data.groups)})
    return {"rows": rows}


def fair_oracle_labels(labels, groups, seed: int, balance_target: float | None = None) -> np.ndarray:
    """The true partition moved towards proportional balance by the fewest moves (positive control).

    Cluster sizes are kept. With ``t`` in [0, 1], each cluster's count of group g becomes
    ``round((1 − t)·|C_k ∩ G_g| + t·|C_k|·n_g/n)``; the surplus members of a group (chosen at
    random, ``seed``) move to the clusters where that group is short. ``t`` = 1 gives full
    proportional balance; with ``balance_target`` the smallest ``t`` on a grid of 0.01 whose
    Balance reaches the target. The best utility at that Balance when groups and clusters are
    dependent: what a perfect fair method could score.
    """
    from .metrics import balance

    labels, groups = np.asarray(labels), np.asarray(groups)
    clusters, gs = np.unique(labels), np.unique(groups)
    counts = np.array([[((labels == k) & (groups == g)).sum() for g in gs] for k in clusters])
    sizes = counts.sum(axis=1)
    share = counts.sum(axis=0) / counts.sum()
    proportional = np.outer(sizes, share)

    def moved(t: float) -> np.ndarray:
        target = np.round((1 - t) * counts + t * proportional).astype(int)
        rng = np.random.default_rng(seed)
        out = labels.copy()
        for j, g in enumerate(gs):
            movers, deficit = [], {}
            for i, k in enumerate(clusters):
                members = np.flatnonzero((labels == k) & (groups == g))
                extra = len(members) - target[i, j]
                if extra > 0:
                    movers.extend(rng.choice(members, extra, replace=False))
                elif extra < 0:
                    deficit[k] = -extra
            movers = rng.permutation(np.asarray(movers, dtype=int))
            start = 0
            for k, need in deficit.items():
                take = movers[start:start + need]
                out[take] = k
                start += len(take)
        return out

    if balance_target is None:
        return moved(1.0)
    for t in np.linspace(0.0, 1.0, 101):
        out = moved(float(t))
        if balance(out, groups) >= balance_target:
            return out
    return out

def _monotone(frame: pd.DataFrame) -> Measurement:
    violations = frame["monotone_violation"].dropna()
    return Measurement(float(violations.max()), note=f"{violations.size} runs of CDAL / anchor MVC")


def gap_measurement(diffs, note: str = "") -> Measurement:
    """Mean of per-seed paired differences with its paired BCa ``CI_LEVEL`` interval."""
    d = pd.Series(diffs, dtype=float).dropna()
    if len(d) < 2:
        return Measurement(float(d.mean()) if len(d) else float("nan"),
                           incomplete=f"{len(d)} seed(s) qualify: no paired interval", note=note)
    low, high = paired_mean_interval(d.values, level=CI_LEVEL)
    interval = (low, high) if np.isfinite(low) else None
    text = f"{len(d)} seeds; per seed {_values(d)}"
    if interval:
        text += f"; half-width {(high - low) / 2:.3f}"
    return Measurement(float(d.mean()), interval=interval, note="; ".join(t for t in (note, text) if t))


def pareto_counts(nmi, bal, a: str, b: str) -> tuple[int, int]:
    """(seeds where ``a`` dominates ``b``, seeds where ``b`` dominates ``a``) on (NMI, Balance)."""
    def dominates(x, y):
        ge = (nmi[x] >= nmi[y] - 1e-12) & (bal[x] >= bal[y] - 1e-12)
        better = (nmi[x] > nmi[y] + PARETO_TOL) | (bal[x] > bal[y] + PARETO_TOL)
        return int((ge & better).sum())
    return dominates(a, b), dominates(b, a)


def pareto_measurement(nmi, bal, a: str, b: str) -> Measurement:
    wins, losses = pareto_counts(nmi, bal, a, b)
    note = f"{a} dominates on {wins}, {b} dominates on {losses} of {len(nmi)} seeds"
    if wins + losses == 0:
        return Measurement(0.5, note=note + " (no seed decided: read as a tie)")
    return Measurement(wins / (wins + losses), interval=win_fraction_interval(wins, losses, CI_LEVEL),
                       note=note)


def _per_seed(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """seed × method table of one metric."""
    return frame.pivot_table(index="seed", columns="method", values=metric)


def _values(series) -> str:
    return ", ".join(f"{v:+.2f}" for v in series)


def _both_fair(bal, a: str, b: str):
    return bal.index[(bal[a] >= UNFAIR_BALANCE) & (bal[b] >= UNFAIR_BALANCE)]


def rotated_measurements(frame: pd.DataFrame, ours: str) -> dict:
    """Part A's measurements: CDAL's Balance and NMI, its paired gaps to every baseline on all
    seeds, the NMI gap to residualise + k-means on the seeds where both are fair, and the Pareto
    count on (NMI, Balance); each also for the negative control (anchor MVC) and the competitors."""
    nmi, bal = _per_seed(frame, "nmi"), _per_seed(frame, "balance")
    present = [m for m in (ours, NEGATIVE, RESID, FAIRSC, "CDAL(lam=0)") if m in nmi.columns]
    out = {}
    for m in present:
        suffix = "" if m == ours else f"_{KEYS[m]}"
        out[f"balance{suffix}"] = Measurement(float(bal[m].mean()),
                                              note="per seed " + ", ".join(f"{v:.2f}" for v in bal[m]))
        out[f"nmi{suffix}"] = Measurement(float(nmi[m].mean()),
                                          note="per seed " + ", ".join(f"{v:.2f}" for v in nmi[m]))
    contenders = [m for m in (ours, NEGATIVE, KMEANS, FAIRSC) if m in nmi.columns]
    for base in [m for m in UNFAIR if m in nmi.columns]:
        for m in contenders:
            if m == base:
                continue
            suffix = "" if m == ours else f"_{KEYS[m]}"
            out[f"nmi_gap_{KEYS[base]}{suffix}"] = gap_measurement(nmi[m] - nmi[base])
            out[f"balance_margin_{KEYS[base]}{suffix}"] = gap_measurement(
                bal[m] - bal[base], note=f"{base} unfair (Balance < {UNFAIR_BALANCE:g}) on "
                                         f"{int((bal[base] < UNFAIR_BALANCE).sum())}/{len(bal)} seeds")
    for m in [x for x in (ours, NEGATIVE, FAIRSC, "CDAL(lam=0)") if x in nmi.columns]:
        suffix = "" if m == ours else f"_{KEYS[m]}"
        seeds = _both_fair(bal, m, RESID)
        out[f"nmi_gap_resid_fair{suffix}"] = gap_measurement(
            (nmi[m] - nmi[RESID]).loc[seeds],
            note=f"seeds where both have Balance ≥ {UNFAIR_BALANCE:g}: {', '.join(str(int(s)) for s in seeds)}")
        out[f"balance_gap_resid{suffix}"] = gap_measurement(bal[m] - bal[RESID])
        out[f"pareto_resid{suffix}"] = pareto_measurement(nmi, bal, m, RESID)
    return out


def instability_table(frame: pd.DataFrame, ours: str) -> pd.DataFrame:
    """Per seed: CDAL vs residualise + k-means (NMI, Balance, gaps, who dominates) and the truth."""
    nmi, bal = _per_seed(frame, "nmi"), _per_seed(frame, "balance")
    table = pd.DataFrame({f"{ours} NMI": nmi[ours], f"{RESID} NMI": nmi[RESID], "NMI gap": nmi[ours] - nmi[RESID],
                          f"{ours} Balance": bal[ours], f"{RESID} Balance": bal[RESID],
                          "Balance gap": bal[ours] - bal[RESID], "truth Balance": bal[TRUTH]})
    def verdict(seed):
        w, l = pareto_counts(nmi.loc[[seed]], bal.loc[[seed]], ours, RESID)
        return "CDAL dominates" if w else ("residualise dominates" if l else "neither")
    table["Pareto"] = [verdict(s) for s in table.index]
    return table.round(3).reset_index()


def old_rule_notes(frame: pd.DataFrame, ours: str) -> list:
    """The pre-migration rules on the same runs (means over seeds; margins on unfair seeds only)."""
    means = frame.groupby("method", sort=False)[METRICS].mean()
    nmi, bal = _per_seed(frame, "nmi"), _per_seed(frame, "balance")
    unfair = [m for m in UNFAIR if m in means.index]
    best = means.loc[unfair, "nmi"].idxmax()
    notes = [f"old rule (means, best unfair): NMI − best unfair ({best}) "
             f"{means.loc[ours, 'nmi'] - means.loc[best, 'nmi']:+.3f} (bar ≥ +0.20); Balance − best unfair "
             f"{means.loc[ours, 'balance'] - means.loc[unfair, 'balance'].max():+.3f} (bar ≥ +0.60)"]
    for base in unfair:
        seeds = bal.index[bal[base] < UNFAIR_BALANCE]
        if len(seeds):
            notes.append(f"old rule: Balance margin over {base} on its unfair seeds only "
                         f"({len(seeds)}/{len(bal)}): {(bal[ours] - bal[base]).loc[seeds].mean():+.3f} (bar ≥ +0.60)")
    gap = nmi[ours] - nmi[RESID]
    low, high = paired_mean_interval(gap.values, level=CI_LEVEL)
    notes.append(f"old rule: NMI gap to {RESID} on all seeds {gap.mean():+.3f} (median {gap.median():+.3f}), "
                 f"BCa {CI_LEVEL:.0%} [{low:+.3f}, {high:+.3f}] (bar: lower end ≥ −0.05)")
    return notes


def _dominant_change_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per CDAL lam: share of samples whose dominant anchor changed between iteration 1 and the last."""
    cdal = frame[frame["method"].str.startswith("CDAL(lam=") & frame["dominant_change"].notna()]
    rows = []
    for method, sub in cdal.groupby("method", sort=False):
        lam = float(method[len("CDAL(lam="):method.index(")")])
        rows.append({"lam": lam, "method": method, "dominant anchor change (mean)": sub["dominant_change"].mean(),
                     "min": sub["dominant_change"].min(), "max": sub["dominant_change"].max(),
                     "iterations (mean)": sub["n_iter"].mean(), "NMI": sub["nmi"].mean(),
                     "Balance": sub["balance"].mean()})
    return pd.DataFrame(rows).sort_values("lam").reset_index(drop=True)


def summarize_rotated(jobs, config: RotatedConfig) -> Result:
    frame = _frame(jobs)
    means = frame.groupby("method", sort=False)[METRICS].mean()
    ours = cdal_name(config.lam)
    seeds = frame["seed"].nunique()
    hsic = _per_seed(frame, "hsic")
    measurements = rotated_measurements(frame, ours)
    measurements["hsic_ratio"] = Measurement(
        float(means.loc[ours, "hsic"] / means.loc["CDAL(lam=0)", "hsic"]),
        note=f"ratio of seed means; per-seed max {float((hsic[ours] / hsic['CDAL(lam=0)']).max()):.3g}")
    measurements["monotone"] = _monotone(frame)
    notes = [f"truth Balance (the balance of the true partition) {means.loc[TRUTH, 'balance']:.3f}: groups are "
             "independent of the clusters here, so recovering the clusters is already fair"]
    notes += old_rule_notes(frame, ours)
    tables = {f"{config.preset} generator (mean ± std over seeds)": _table(frame),
              f"per seed: {ours} vs {RESID}": instability_table(frame, ours)}
    if "dominant_change" in frame.columns:
        dominant = _dominant_change_table(frame)
        tables["dominant-anchor change between iteration 1 and the last, per lam"] = dominant
        notes.append("dominant-anchor change (iteration 1 → last), mean over seeds: " + ", ".join(
            f"lam={r['lam']:g}: {r['dominant anchor change (mean)']:.1%}" for _, r in dominant.iterrows()))
    return Result(tables=tables,
                  figures={f"{config.preset}: Balance vs NMI": _trade_figure(
                      means, f"'{config.preset}' generator, n={config.n}, {seeds} seeds")},
                  measurements=measurements, notes=notes)


# -- Part dep: "rotated", rho = 0.3 (groups and clusters dependent; the headline) -------------

# The headline's rule, written before the run: CDAL is fairer than the true partition by
# BALANCE_OVER_TRUTH while its NMI stays within NMI_TOLERANCE of residualise + k-means. Per seed
# the joint margin is min(Balance − truth − BALANCE_OVER_TRUTH, NMI − NMI_resid − NMI_TOLERANCE)
# (≥ 0 exactly when both hold); the claim is its mean over seeds with a paired BCa interval.
DEP_RHO = 0.3
BALANCE_OVER_TRUTH = 0.10
ORACLE_SLACK = 0.01        # the positive control aims this far above the bar's Balance


def dependent_measurements(frame: pd.DataFrame, ours: str) -> dict:
    nmi, bal = _per_seed(frame, "nmi"), _per_seed(frame, "balance")
    out = {"truth_balance": Measurement(float(bal[TRUTH].mean()),
                                        note="per seed " + ", ".join(f"{v:.2f}" for v in bal[TRUTH]))}
    for m in [x for x in (ours, NEGATIVE, RESID, FAIRSC, "CDAL(lam=0)", KMEANS, LMVSC_NAME, ORACLE)
              if x in nmi.columns]:
        suffix = "" if m == ours else f"_{KEYS[m]}"
        over = bal[m] - bal[TRUTH]
        gap = nmi[m] - nmi[RESID]
        joint = np.minimum(over - BALANCE_OVER_TRUTH, gap - NMI_TOLERANCE)
        out[f"joint{suffix}"] = gap_measurement(joint, note=f"Balance − truth {over.mean():+.3f}, "
                                                            f"NMI − {RESID} {gap.mean():+.3f}")
        out[f"balance_over_truth{suffix}"] = gap_measurement(over)
        if m != RESID:
            out[f"nmi_gap_resid{suffix}"] = gap_measurement(gap)
            out[f"pareto_resid{suffix}"] = pareto_measurement(nmi, bal, m, RESID)
    return out


def summarize_dependent(jobs, config: RotatedConfig) -> Result:
    frame = _frame(jobs)
    means = frame.groupby("method", sort=False)[METRICS].mean()
    ours = cdal_name(config.lam)
    seeds = frame["seed"].nunique()
    notes = [f"rho = {config.rho:g}: truth Balance {means.loc[TRUTH, 'balance']:.3f} (expected (1−rho)/(1+rho) = "
             f"{(1 - config.rho) / (1 + config.rho):.3f}); a fair method must leave the true partition"]
    return Result(tables={f"rotated, rho = {config.rho:g} (mean ± std over seeds)": _table(frame),
                          f"per seed: {ours} vs {RESID}": instability_table(frame, ours)},
                  figures={f"rotated rho={config.rho:g}: Balance vs NMI": _trade_figure(
                      means, f"'rotated' generator, rho={config.rho:g}, n={config.n}, {seeds} seeds")},
                  measurements=dependent_measurements(frame, ours), notes=notes)


# -- Part B: "meanshift" ----------------------------------------------------------------------

def summarize_meanshift(jobs, config: RotatedConfig) -> Result:
    frame = _frame(jobs)
    means = frame.groupby("method", sort=False)[METRICS].mean()
    seeds = frame["seed"].nunique()
    nmi, bal = _per_seed(frame, "nmi"), _per_seed(frame, "balance")
    ours = cdal_name(config.lam)

    def mean_of(series, interval=False):
        note = f"median {series.median():.3f}; per seed " + ", ".join(f"{v:.2f}" for v in series)
        if not interval:
            return Measurement(float(series.mean()), note=note)
        low, high = paired_mean_interval(series.values, level=CI_LEVEL)
        return Measurement(float(series.mean()), interval=(low, high) if np.isfinite(low) else None,
                           note=note + (f"; half-width {(high - low) / 2:.3f}" if np.isfinite(low) else ""))

    measurements = {"balance_dual": mean_of(bal["CDAL(lam=0)"]), "balance_anchor": mean_of(bal[ANCHOR]),
                    "balance_kmeans": mean_of(bal[KMEANS]), "nmi": mean_of(nmi[ours], interval=True),
                    "nmi_kmeans": mean_of(nmi[KMEANS], interval=True),
                    "nmi_resid": mean_of(nmi[RESID], interval=True),
                    "monotone": _monotone(frame)}
    below = [int(s) for s in nmi.index[nmi[ours] < 0.9]]
    return Result(tables={"meanshift generator (mean ± std over seeds)": _table(frame)},
                  figures={"meanshift: Balance vs NMI": _trade_figure(
                      means, f"'meanshift' generator, n={config.n}, {seeds} seeds")},
                  measurements=measurements,
                  notes=[f"{ours} NMI below 0.9 on seeds {below} of {seeds}"])


# -- Part C: trade-off curve (report-only, resumable) ---------------------------------------

def _cached(config, part: str, seed: int, task, compute):
    """Return the stored metrics of this (config, seed, task) job or compute and store them.

    The key hashes the config (without ``cache_dir``), so a changed config never reuses a stale
    result; the write is atomic (a killed run leaves no half-written file).
    """
    settings = {k: v for k, v in asdict(config).items() if k != "cache_dir"}
    return cached_json(config.cache_dir, f"{part}_seed{seed}", [settings, seed, task], compute)


@dataclass(frozen=True)
class TradeoffConfig:
    n: int = 3000
    rhos: tuple = (0.0, 0.3, 0.6)
    lams: tuple = (0.0, 1.0, 10.0, 100.0, 1000.0)
    baselines: tuple = (KMEANS, ANCHOR, RESID, FAIRSC, LMVSC_NAME)
    cache_dir: str = ""


def tradeoff_tasks(config: TradeoffConfig) -> list:
    return [{"rho": float(r)} for r in config.rhos]


def run_tradeoff(config: TradeoffConfig, seed: int, task: dict) -> dict:
    def compute():
        data = make_preset("rotated", seed=seed, n=config.n, rho=task["rho"])
        methods = [cdal_name(lam) for lam in config.lams] + list(config.baselines)
        return {"rows": run_methods(data, methods, int(data.labels.max()) + 1, seed)}
    return _cached(config, "C", seed, task, compute)


def summarize_tradeoff(jobs, config: TradeoffConfig) -> Result:
    frame = _frame(jobs)
    fig, axes = subplots(1, len(config.rhos), figsize=(4.6 * len(config.rhos), 4), squeeze=False)
    notes = []
    for ax, rho in zip(axes[0], config.rhos):
        sub = frame[np.isclose(frame["rho"], rho)]
        means = sub.groupby("method", sort=False)[["nmi", "balance"]].mean()
        curve = means.loc[[cdal_name(lam) for lam in config.lams]]
        ax.plot(curve["nmi"], curve["balance"], "-o", color="C0", label="CDAL, lam = " +
                ", ".join(f"{lam:g}" for lam in config.lams))
        for lam, (x, y) in zip(config.lams, curve[["nmi", "balance"]].values):
            ax.annotate(f"{lam:g}", (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        for i, method in enumerate([*config.baselines, TRUTH]):
            ax.scatter(*means.loc[method, ["nmi", "balance"]], marker="*" if method == TRUTH else "s",
                       s=60, color=f"C{i + 1}", label=method)
        ax.set_xlabel("NMI (utility)")
        ax.set_ylabel("Balance (fairness)")
        ax.set_xlim(0, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"'rotated', rho = {rho:g}; truth Balance {means.loc[TRUTH, 'balance']:.2f} "
                     f"(expected (1−rho)/(1+rho) = {(1 - rho) / (1 + rho):.2f})", fontsize=8)
        ax.legend(fontsize=6, loc="lower left")
        notes.append(f"rho={rho:g}: CDAL Balance by lam " + ", ".join(
            f"{lam:g}: {b:.2f}" for lam, b in zip(config.lams, curve["balance"])) +
            "; NMI " + ", ".join(f"{v:.2f}" for v in curve["nmi"]))
    fig.tight_layout()
    return Result(tables={"trade-off (mean ± std over seeds)": _table(frame, by=("rho", "method"))},
                  figures={"Balance vs NMI trade-off per method": fig}, notes=notes)


# -- Part D: Reverse-Digits (report-only, resumable) ----------------------------------------

GRADIENT_VIEW = "k-means (gradient view only)"


@dataclass(frozen=True)
class DigitsConfig:
    n_anchors: int = 20
    methods: tuple = (KMEANS, RESID, GRADIENT_VIEW, ANCHOR, LMVSC_NAME, FAIRSC, "CDAL(lam=0)",
                      "CDAL(lam=10)", "CDAL(lam=100)")
    cache_dir: str = ""


def run_digits(config: DigitsConfig, seed: int) -> dict:
    def compute():
        data = load_reverse_digits(seed=seed)
        methods = [m for m in config.methods if m != GRADIENT_VIEW]
        rows = run_methods(data, methods, 10, seed, n_anchors=config.n_anchors)
        if GRADIENT_VIEW in config.methods:
            start = time.perf_counter()
            model = ConcatKMeans(10, random_state=seed).fit([data.views[2]])
            rows.append(evaluate(GRADIENT_VIEW, model, data, time.perf_counter() - start))
        return {"rows": rows}
    return _cached(config, "D", seed, None, compute)


def summarize_digits(jobs, config: DigitsConfig) -> Result:
    frame = _frame(jobs)
    means = frame.groupby("method", sort=False)[METRICS].mean()
    return Result(tables={"Reverse-Digits (mean ± std over seeds)": _table(frame)},
                  figures={"Reverse-Digits: Balance vs NMI": _trade_figure(
                      means, f"Reverse-Digits (K=10, m={config.n_anchors}), {frame['seed'].nunique()} seeds")},
                  notes=["report-only: no bar (every linear method tried is poor on inverted images)"])


# -- Part groups: 3 and 4 sensitive groups (report-only, opt-in, resumable) ------------------

# The one attempt to make CDAL hold with more groups, chosen on dev seeds 100–104 (never reported)
# before the report seeds 0–4 ran: lam = 10 (its dominant anchors still move: 20–35 % change vs
# ≈ 0 at lam = 100) and the fair spectral output (Kleindessner et al.'s constraint, as in
# FairSpectralAnchor) applied to CDAL's own anchor graph. Dev means (3 groups / 4 groups,
# NMI / Balance): CDAL(lam=100) 0.80/0.48, 0.86/0.75; this attempt 0.76/0.75, 0.80/0.80;
# also tried there: m = 4 or 12 anchors, lam = 30, the fair output at lam = 100 (none better).
ATTEMPT = "CDAL(lam=10) + fair SC output"
ATTEMPT_LAM = 10.0


@dataclass(frozen=True)
class GroupsConfig:
    n: int = 3000
    groups: tuple = (3, 4)
    methods: tuple = (KMEANS, LMVSC_NAME, RESID, "CDAL(lam=0)", "CDAL(lam=10)", "CDAL(lam=100)", ATTEMPT)
    cache_dir: str = ""


def groups_tasks(config: GroupsConfig) -> list:
    return [{"n_groups": int(g)} for g in config.groups]


def _fit_attempt(data, n_clusters: int, seed: int):
    """CDAL(lam=ATTEMPT_LAM), then the fair spectral output on its anchor graph."""
    model = CDAL(n_clusters, lam=ATTEMPT_LAM, random_state=seed).fit(data.views, sensitive=data.groups)
    embedding, _ = anchor_spectral_embedding(model.anchor_graph_, n_clusters, groups=np.asarray(data.groups))
    model.labels_ = KMeans(n_clusters, n_init=10, random_state=seed).fit_predict(embedding)
    return model


def run_groups(config: GroupsConfig, seed: int, task: dict) -> dict:
    def compute():
        data = make_preset("rotated", seed=seed, n=config.n, n_groups=task["n_groups"])
        K = int(data.labels.max()) + 1
        rows = run_methods(data, [m for m in config.methods if m != ATTEMPT], K, seed)
        if ATTEMPT in config.methods:
            start = time.perf_counter()
            model = _fit_attempt(data, K, seed)
            rows.append(evaluate(ATTEMPT, model, data, time.perf_counter() - start))
        return {"rows": rows}
    return _cached(config, "groups", seed, task, compute)


def summarize_groups(jobs, config: GroupsConfig) -> Result:
    frame = _frame(jobs)
    notes = ["report-only: where the two-group reconstruction breaks; 'holds' = mean Balance ≥ "
             f"{FAIR_BALANCE:g} and the lower end of the paired BCa {CI_LEVEL:.0%} interval of the "
             f"NMI gap to residualise + k-means ≥ {NMI_TOLERANCE:g} (no verdict)"]
    for G in config.groups:
        sub = frame[frame["n_groups"] == G]
        nmi, bal = _per_seed(sub, "nmi"), _per_seed(sub, "balance")
        for method in [m for m in config.methods if m.startswith("CDAL") and m in nmi.columns]:
            gap = nmi[method] - nmi[RESID]
            low, high = paired_mean_interval(gap.values, level=CI_LEVEL)
            holds = bal[method].mean() >= FAIR_BALANCE and low >= NMI_TOLERANCE
            notes.append(f"{G} groups, {method}: NMI {nmi[method].mean():.3f}, Balance {bal[method].mean():.3f} "
                         f"(per seed {', '.join(f'{v:.2f}' for v in bal[method])}); NMI gap to residualise "
                         f"{gap.mean():+.3f} [{low:+.3f}, {high:+.3f}] → {'holds' if holds else 'does not hold'}")
        notes.append(f"{G} groups, residualise + k-means: NMI {nmi[RESID].mean():.3f}, Balance "
                     f"{bal[RESID].mean():.3f} (per seed {', '.join(f'{v:.2f}' for v in bal[RESID])}); "
                     f"LMVSC Balance {bal[LMVSC_NAME].mean():.3f}; truth Balance {bal[TRUTH].mean():.3f}")
    tables = {"3 and 4 groups (mean ± std over seeds)": _table(frame, by=("n_groups", "method"))}
    if "dominant_change" in frame.columns:
        for G in config.groups:
            tables[f"{G} groups: dominant-anchor change per lam"] = _dominant_change_table(
                frame[(frame["n_groups"] == G) & (frame["method"] != ATTEMPT)])
    return Result(tables=tables, notes=notes)


# -- scaling ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    sizes: tuple = (2000, 4000, 8000, 16000, 32000)
    max_iter: int = 10
    repeats: int = 3
    memory_n: int = 32000
    spectral_sizes: tuple = (1000, 2000, 4000, 8000)
    spectral_budget_s: float = 60.0   # stop growing SpectralClustering's n after a fit this long


def _time_fit(model, views, groups, repeats: int) -> float:
    """Median CPU seconds of the process over ``repeats`` fits (CPU, not wall: the load of other
    processes cannot flip the scaling claim)."""
    seconds = []
    for _ in range(repeats):
        start = time.process_time()
        model.fit(views, sensitive=groups)
        seconds.append(time.process_time() - start)
    return statistics.median(seconds)


def run_scaling(config: ScalingConfig, seed: int) -> dict:
    rows = []
    for n in config.sizes:
        data = make_preset("rotated", seed=seed, n=n)
        row = {"n": n}
        for key, final in (("cdal_seconds", False), ("cdal_with_kmeans_seconds", True)):
            model = CDAL(4, lam=100.0, max_iter=config.max_iter, tol=0.0, final_clustering=final,
                         random_state=seed)
            row[key] = _time_fit(model, data.views, data.groups, config.repeats)
        rows.append(row)
    data = make_preset("rotated", seed=seed, n=config.memory_n)
    tracemalloc.start()
    CDAL(4, lam=100.0, max_iter=config.max_iter, tol=0.0, random_state=seed).fit(data.views, sensitive=data.groups)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    data_bytes = sum(X.nbytes for X in data.views)
    spectral = []
    for n in config.spectral_sizes:
        data = make_preset("rotated", seed=seed, n=n)
        X = np.hstack(prepare_views(data.views).data)
        model = SpectralClustering(4, affinity="rbf", gamma=1.0 / X.shape[1], random_state=seed)
        start = time.process_time()
        model.fit(X)
        spectral.append({"n": n, "seconds": time.process_time() - start})  # CPU seconds
        if spectral[-1]["seconds"] > config.spectral_budget_s:
            break
    return {"rows": rows, "spectral": spectral, "peak_bytes": peak, "data_bytes": data_bytes}


def summarize_scaling(jobs, config: ScalingConfig) -> Result:
    (job,) = jobs
    rows = pd.DataFrame(job.metrics["rows"])
    spectral = pd.DataFrame(job.metrics["spectral"])
    slope = loglog_slope(rows["n"], rows["cdal_seconds"])
    slope_km = loglog_slope(rows["n"], rows["cdal_with_kmeans_seconds"])
    spectral_slope = loglog_slope(spectral["n"], spectral["seconds"]) if len(spectral) > 1 else float("nan")
    peak_gb = job.metrics["peak_bytes"] / 1e9
    fig, ax = subplots(figsize=(5, 3.8))
    ax.loglog(rows["n"], rows["cdal_seconds"], "o-", label=f"CDAL fit, no final k-means (slope {slope:.2f})")
    ax.loglog(rows["n"], rows["cdal_with_kmeans_seconds"], "o--", label=f"CDAL fit + k-means (slope {slope_km:.2f})")
    ax.loglog(spectral["n"], spectral["seconds"], "s-", label=f"SpectralClustering (slope {spectral_slope:.2f})")
    ax.set_xlabel("n (samples)")
    ax.set_ylabel("fit seconds (median)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    table = rows.merge(spectral.rename(columns={"seconds": "spectral_seconds"}), on="n", how="outer")
    dense_gb = config.memory_n ** 2 * 8 / 1e9
    measurements = {
        "slope": Measurement(slope, note=f"n {int(rows['n'].min())}…{int(rows['n'].max())}, {config.max_iter} "
                                         f"iterations, median CPU seconds of {config.repeats}; with the final "
                                         f"k-means: {slope_km:.2f}"),
        "slope_with_kmeans": slope_km,
        "slope_spectral": Measurement(spectral_slope, note=f"SpectralClustering (rbf, dense n×n affinity) up to "
                                                           f"n = {int(spectral['n'].max())}"),
        "peak_gb": Measurement(peak_gb, note=f"tracemalloc peak at n = {config.memory_n}; the views alone take "
                                             f"{job.metrics['data_bytes'] / 1e9:.3f} GB"),
        "dense_affinity_gb": Measurement(dense_gb, note=f"one dense float64 n×n affinity at n = {config.memory_n} "
                                                         "(what an O(n²) spectral method stores)"),
    }
    return Result(tables={"fit seconds by n": table}, figures={"fit time vs n": fig}, measurements=measurements,
                  notes=[f"SpectralClustering (rbf, dense n×n affinity) log-log slope {spectral_slope:.2f}"])


# part A also runs the report-only lam sweep (dominant-anchor change per lam)
A_METHODS = RotatedConfig.methods + tuple(cdal_name(lam) for lam in LAM_SWEEP)

EXPERIMENT = register(Experiment(
    slug="cdal",  # title, claims and part descriptions: claims.toml
    parts=[
        Part(name="A", run=run_generator, summarize=summarize_rotated,
             quick=RotatedConfig(n=600, methods=A_METHODS), full=RotatedConfig(methods=A_METHODS),
             seeds=tuple(range(10)), quick_seeds=(0, 1)),
        Part(name="dep", run=run_generator, summarize=summarize_dependent,
             quick=RotatedConfig(n=600, rho=DEP_RHO, fair_oracle=True),
             full=RotatedConfig(rho=DEP_RHO, fair_oracle=True),
             seeds=tuple(range(10)), quick_seeds=(0, 1)),
        Part(name="B", run=run_generator, summarize=summarize_meanshift,
             quick=RotatedConfig(preset="meanshift", n=600),
             full=RotatedConfig(preset="meanshift", n=4000), seeds=tuple(range(10)), quick_seeds=(0,)),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling,
             quick=ScalingConfig(sizes=(500, 1000, 2000), repeats=1, memory_n=2000, max_iter=3,
                                 spectral_sizes=(300, 600)),
             full=ScalingConfig(), seeds=(0,), quick_seeds=(0,)),
        Part(name="C", run=run_tradeoff, summarize=summarize_tradeoff, tasks=tradeoff_tasks,
             quick=TradeoffConfig(n=400, rhos=(0.0, 0.6), lams=(0.0, 100.0), baselines=(KMEANS, RESID)),
             full=TradeoffConfig(), seeds=(0, 1, 2), quick_seeds=(0,)),
        Part(name="D", run=run_digits, summarize=summarize_digits,
             quick=DigitsConfig(methods=(KMEANS, GRADIENT_VIEW, "CDAL(lam=10)")), full=DigitsConfig(),
             seeds=(0, 1, 2), quick_seeds=(0,)),
        Part(name="groups", run=run_groups, summarize=summarize_groups, tasks=groups_tasks,
             quick=GroupsConfig(n=400, methods=(KMEANS, RESID, LMVSC_NAME, "CDAL(lam=100)", ATTEMPT)),
             full=GroupsConfig(), seeds=(0, 1, 2, 3, 4), quick_seeds=(0, 1)),
    ],
))
