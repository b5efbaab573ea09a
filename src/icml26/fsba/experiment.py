"""Reproduction of FSBA / LFSBA / LMCN (Yang, Liu, Chen & Lui, ICML 2026, arXiv 2605.06431).

Parts (the paper's body was not readable; the protocols are our reconstruction at CPU scale):

- ``saddle`` (E1): the synthetic bilevel problem with a strict saddle and closed-form φ, started
  on the saddle's stable plane. FSBA and LFSBA reach the second-order stationary point (SOSP);
  AID-BA and F2BA stay at the saddle; perturbed F2BA escapes, but later.
- ``lazy-scaling`` (E2): FSBA vs LFSBA (lazy period m = d) for d = 20…160; the cost-model ratio
  ``C = n_H·d³ + n_it·d²`` grows like √d.
- ``hyper-cleaning`` (E3): data hyper-cleaning on scikit-learn's digits (40 % corrupted labels).
- ``minimax`` (E4): MCN and LMCN vs GDA on the synthetic minimax problem; LMCN's cost saving.
- ``penalty-rate`` (E5): the penalty surrogate's value, gradient and Hessian errors are O(1/λ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from icml26.core.experiment import Claim, Experiment, Part, Result, register  # noqa: E402
from icml26.core.stats import loglog_slope, summary_table  # noqa: E402

from .baselines import AIDBA, F2BA, GDA, ExactCubicNewton, PerturbedF2BA  # noqa: E402
from .data import hyper_cleaning_digits, make_saddle_bilevel, make_saddle_minimax  # noqa: E402
from .optimizers import FSBA, LFSBA, LMCN, MCN, newton_solve, penalty_surrogate  # noqa: E402

PAPER = "Yang, Liu, Chen & Lui, ICML 2026"
#: φ − φ* at or below this counts as having reached the minimum (E1, E4).
GAP_TOL = 1e-8
#: ‖x₋‖∞ below this counts as still on the saddle's stable plane.
PLANE_TOL = 1e-8
#: Slack on the saddle's gap n₋/4.
SADDLE_SLACK = 1e-6


# -- shared helpers ----------------------------------------------------------------------

def _escape_metrics(result, n_minus: int) -> dict:
    """What E1/E4 need from one run: SOSP iteration, final gap, distance from the plane."""
    gap = np.asarray(result.history["phi_gap"], dtype=float)
    first = result.first_sosp_iteration()
    k = len(gap) - 1 if first is None else first
    return {"first_sosp": first, "final_gap": float(gap[-1]),
            "x_minus_max": float(np.abs(result.x[:n_minus]).max()) if n_minus else 0.0,
            "n_iter": int(result.n_iter), "n_hessians": int(result.history["n_hessians"][-1]),
            "cost_at_sosp": float(result.history["cost"][k]),
            "seconds_at_sosp": float(result.history["seconds"][k]),
            "seconds": float(result.history["seconds"][-1]), "n_minus": n_minus,
            "phi_gap": gap.tolist()}


def _reached(m: dict) -> bool:
    return m["first_sosp"] is not None and m["final_gap"] <= GAP_TOL


def _stuck(m: dict) -> bool:
    return m["x_minus_max"] < PLANE_TOL and m["final_gap"] >= m["n_minus"] / 4 - SADDLE_SLACK


def _count_claim(name: str, flags: list, required: int, paper: str, note: str = "") -> Claim:
    """``k/n`` seeds satisfy a test; passes at n/n with at least ``required`` seeds."""
    k, n = int(sum(bool(f) for f in flags)), len(flags)
    incomplete = n < required
    extra = f"; {n} of the {required} seeds the bar needs ran" if incomplete else ""
    return Claim(name, paper, f"{k}/{n}", f"{max(n, required)}/{max(n, required)} seeds",
                 k == n and n > 0, note=note + extra, incomplete=incomplete)


def _by_method(jobs) -> dict:
    out: dict = {}
    for j in jobs:
        out.setdefault(j.task["method"], []).append(dict(j.metrics, seed=j.seed))
    return out


def _gap_figure(by_method: dict, methods, title: str):
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for i, method in enumerate(methods):
        color = f"C{i}"
        for k, row in enumerate(sorted(by_method.get(method, []), key=lambda r: r["seed"])):
            gap = np.maximum(np.asarray(row["phi_gap"], dtype=float), 1e-16)
            ax.loglog(np.arange(1, gap.size + 1), gap, color=color, alpha=0.45, lw=1,
                      label=method if k == 0 else None)
    ax.set_xlabel("outer iteration + 1")
    ax.set_ylabel("φ(x_t) − φ*")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _ratio_figure(frame: pd.DataFrame, title: str, labels: tuple[str, str]):
    """Cost-model and wall-clock ratio vs d (log-log), one marker per seed."""
    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    d = frame["d"].to_numpy(dtype=float)
    for column, label, marker in (("cost_ratio", labels[0], "o"), ("time_ratio", labels[1], "s")):
        ax.loglog(d, frame[column], marker, label=label)
        means = frame.groupby("d")[column].mean()
        ax.loglog(means.index, means.values, "-", alpha=0.6)
    ref = frame.groupby("d")["cost_ratio"].mean()
    ax.loglog(ref.index, ref.values[0] * np.sqrt(ref.index / ref.index[0]), "k--", lw=1,
              label="∝ √d")
    ax.axhline(1.0, color="grey", ls=":", lw=1)
    ax.set_xlabel("dimension d (= d_x = d_y)")
    ax.set_ylabel("ratio (full / lazy)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _ratio_claims(frame: pd.DataFrame, prefix: str, paper: str, slope_low: float,
                  slope_high: float | None) -> tuple[list, float, float]:
    ratios = frame["cost_ratio"].to_numpy(dtype=float)
    slope = loglog_slope(frame["d"], ratios)
    per_d = ", ".join(f"d={d}: {v:.2f}" for d, v in frame.groupby("d")["cost_ratio"].mean().items())
    claims = [Claim(f"{prefix} cost-model ratio at every d (min over runs)", paper,
                    float(ratios.min()), "> 1", bool(ratios.min() > 1), note=per_d)]
    if slope_high is None:
        claims.append(Claim.at_least(f"{prefix} slope of log(cost ratio) vs log d", slope, slope_low,
                                     paper=paper))
    else:
        claims.append(Claim.between(f"{prefix} slope of log(cost ratio) vs log d", slope,
                                    slope_low, slope_high, paper=paper + " (slope 0.5)"))
    times = frame["time_ratio"].to_numpy(dtype=float)
    time_slope = loglog_slope(frame["d"], times)
    return claims, float(times.min()), time_slope


# -- E1: saddle escape ---------------------------------------------------------------------

BILEVEL_METHODS = ("FSBA", "LFSBA", "AID-BA", "F2BA", "perturbed F2BA", "exact cubic Newton")


@dataclass(frozen=True)
class SaddleConfig:
    d: int = 20
    penalty: float = 1e4
    cubic_reg: float = 10.0
    eps: float = 1e-5
    lr: float = 0.2
    second_order_iters: int = 100
    first_order_iters: int = 3000
    radius: float = 1e-3
    quiet_period: int = 50
    required_seeds: int = 10


def saddle_tasks(config: SaddleConfig) -> list:
    return [{"method": m} for m in BILEVEL_METHODS]


def _bilevel_optimizer(method: str, c: SaddleConfig):
    second = dict(penalty=c.penalty, cubic_reg=c.cubic_reg, eps=c.eps, max_iter=c.second_order_iters)
    first = dict(lr=c.lr, eps=c.eps, max_iter=c.first_order_iters)
    return {"FSBA": lambda: FSBA(**second),
            "LFSBA": lambda: LFSBA(**second),
            "AID-BA": lambda: AIDBA(**first),
            "F2BA": lambda: F2BA(penalty=c.penalty, **first),
            "perturbed F2BA": lambda: PerturbedF2BA(radius=c.radius, quiet_period=c.quiet_period,
                                                    penalty=c.penalty, **first),
            "exact cubic Newton": lambda: ExactCubicNewton(cubic_reg=c.cubic_reg, eps=c.eps,
                                                           max_iter=c.second_order_iters),
            }[method]()


def run_saddle(config: SaddleConfig, seed: int, task: dict) -> dict:
    problem, x0 = make_saddle_bilevel(d=config.d, seed=seed)
    opt = _bilevel_optimizer(task["method"], config)
    if isinstance(opt, PerturbedF2BA):
        result = opt.minimize(problem, x0, seed=seed)
    else:
        result = opt.minimize(problem, x0)
    return _escape_metrics(result, problem.exact["n_minus"])


def _iteration_table(by_method: dict, methods) -> pd.DataFrame:
    records = []
    for method in methods:
        for r in by_method.get(method, []):
            records.append({"method": method, "seed": r["seed"],
                            "first SOSP iteration": np.nan if r["first_sosp"] is None
                            else r["first_sosp"],
                            "final φ−φ*": r["final_gap"], "max |x₋|": r["x_minus_max"],
                            "iterations run": r["n_iter"], "Hessian snapshots": r["n_hessians"],
                            "seconds": r["seconds"]})
    metrics = ["first SOSP iteration", "final φ−φ*", "max |x₋|", "iterations run",
               "Hessian snapshots", "seconds"]
    table = summary_table(records, "method", metrics, digits=3)
    reached = {m: sum(r["first_sosp"] is not None for r in by_method.get(m, [])) for m in methods}
    table.insert(1, "reached SOSP", [f"{reached[m]}/{len(by_method.get(m, []))}"
                                     for m in table["method"]])
    return table


def summarize_saddle(jobs, config: SaddleConfig) -> Result:
    by = _by_method(jobs)
    n_minus = config.d // 4
    claims = []
    for method in ("FSBA", "LFSBA"):
        rows = by.get(method, [])
        its = [r["first_sosp"] for r in rows if r["first_sosp"] is not None]
        claims.append(_count_claim(
            f"E1 {method} reaches the SOSP (φ−φ* ≤ 1e-8) within {config.second_order_iters} "
            "iterations", [_reached(r) for r in rows], config.required_seeds,
            paper="second-order method escapes strict saddles (Õ(ε^-1.5) iterations)",
            note=f"first SOSP iterations {min(its) if its else '—'}–{max(its) if its else '—'}"))
    for method in ("AID-BA", "F2BA"):
        rows = by.get(method, [])
        claims.append(_count_claim(
            f"E1 {method} stays at the saddle (‖x₋‖ < 1e-8, φ−φ* ≥ n₋/4 − 1e-6) after "
            f"{config.first_order_iters} iterations", [_stuck(r) for r in rows],
            config.required_seeds, paper="first-order bilevel methods stall at strict saddles",
            note=f"n₋/4 = {n_minus / 4:g}; final gaps "
                 f"{min(r['final_gap'] for r in rows):.4g}–{max(r['final_gap'] for r in rows):.4g}"
            if rows else ""))
    fsba = [r["first_sosp"] for r in by.get("FSBA", []) if r["first_sosp"] is not None]
    pert = [math.inf if r["first_sosp"] is None else r["first_sosp"]
            for r in by.get("perturbed F2BA", [])]
    name = "E1 perturbed F2BA / FSBA median first-SOSP iterations"
    paper = "faster than first-order SOSP methods (Õ(ε^-1.5) vs Õ(ε^-2)-type)"
    if not fsba or not pert:
        claims.append(Claim(name, paper, None, "≥ 3 (if it reaches the SOSP)", False,
                            note="FSBA never reached the SOSP: no reference iteration count"))
    elif all(math.isinf(p) for p in pert):
        claims.append(Claim(name, paper, f"never reached in {config.first_order_iters}",
                            "≥ 3 (if it reaches the SOSP)", True,
                            note="perturbed F2BA did not escape within its iteration budget"))
    else:
        ratio = float(np.median(pert) / np.median(fsba))
        reached = sum(not math.isinf(p) for p in pert)
        claims.append(Claim.at_least(name, ratio, 3.0, paper=paper,
                                     note=f"perturbed F2BA median {np.median(pert):g} "
                                          f"({reached}/{len(pert)} reached), FSBA median "
                                          f"{np.median(fsba):g}"))
    fig = _gap_figure(by, BILEVEL_METHODS,
                      f"E1 saddle escape, d = {config.d}, {len(by.get('FSBA', []))} seeds")
    notes = ["All methods start on the saddle's stable plane (x₋ = 0, x₊ = 1); φ − φ* = n₋/4 "
             "there. The first-order baselines use the same warm-started Newton inner solver as "
             "FSBA, so only the outer update differs. 'exact cubic Newton' uses the closed-form "
             "∇φ, ∇²φ (a reference, not a practical method)."]
    return Result(tables={"E1 saddle escape (mean ± std over seeds)":
                          _iteration_table(by, BILEVEL_METHODS)},
                  figures={"e1_saddle_escape": fig}, claims=claims, notes=notes)


# -- E2: lazy cost scaling -----------------------------------------------------------------

@dataclass(frozen=True)
class LazyConfig:
    """E2. ``time_gate_min_d`` (issue #40, fixed before the run): the measured-time claim is
    gated where the O(d³) term dominates, d ≥ 320 (at d ≤ 160 one factorization costs about a
    millisecond, comparable to an iteration's oracle calls); every d is reported beside, and
    ``time_gate_min_d=0`` restores the old rule (every d). Times are CPU seconds of the process."""

    dims: tuple[int, ...] = (20, 40, 80, 160, 320, 640)
    time_gate_min_d: int = 320
    penalty: float = 1e4
    cubic_reg: float = 10.0
    eps: float = 1e-5
    max_iter: int = 1000
    required_seeds: int = 2


def dim_tasks(config) -> list:
    return [{"d": int(d)} for d in config.dims]


def _lazy_pair(full, lazy, make, d: int, seed: int) -> dict:
    out = {"d": d}
    for label, opt in (("full", full), ("lazy", lazy)):
        problem, x0 = make(d=d, seed=seed)
        m = _escape_metrics(opt.minimize(problem, x0), problem.exact["n_minus"])
        m.pop("phi_gap")
        out[label] = m
    f, l_ = out["full"], out["lazy"]
    both = f["first_sosp"] is not None and l_["first_sosp"] is not None
    out["cost_ratio"] = f["cost_at_sosp"] / l_["cost_at_sosp"] if both else float("nan")
    out["time_ratio"] = f["seconds_at_sosp"] / l_["seconds_at_sosp"] if both else float("nan")
    return out


def run_lazy(config: LazyConfig, seed: int, task: dict) -> dict:
    kw = dict(penalty=config.penalty, cubic_reg=config.cubic_reg, eps=config.eps,
              max_iter=config.max_iter)
    return _lazy_pair(FSBA(**kw), LFSBA(**kw), make_saddle_bilevel, task["d"], seed)


def _pair_frame(jobs, labels=("FSBA", "LFSBA")) -> pd.DataFrame:
    rows = []
    for j in sorted(jobs, key=lambda j: (j.metrics["d"], j.seed)):
        m = j.metrics
        rows.append({"d": m["d"], "seed": j.seed,
                     f"{labels[0]} SOSP it": m["full"]["first_sosp"],
                     f"{labels[1]} SOSP it": m["lazy"]["first_sosp"],
                     f"{labels[1]} snapshots": m["lazy"]["n_hessians"],
                     "cost_ratio": m["cost_ratio"], "time_ratio": m["time_ratio"],
                     f"{labels[0]} s": m["full"]["seconds_at_sosp"],
                     f"{labels[1]} s": m["lazy"]["seconds_at_sosp"],
                     "reached": m["full"]["first_sosp"] is not None
                     and m["lazy"]["first_sosp"] is not None})
    frame = pd.DataFrame(rows)
    for c in frame.columns:
        if c != "reached":
            frame[c] = pd.to_numeric(frame[c], errors="coerce")
    return frame


def _scaling_result(frame: pd.DataFrame, prefix: str, labels: tuple[str, str], paper: str,
                    slope_high: float | None, required: int, title: str, fig_name: str) -> Result:
    lazy = labels[1]
    claims = [_count_claim(f"{prefix} {lazy} reaches the SOSP on every run",
                           list(frame[f"{lazy} SOSP it"].notna()), required * frame["d"].nunique(),
                           paper=f"{lazy} converges with Hessians every m = d iterations")]
    ok = frame[frame["reached"]]
    time_min, time_slope = float("nan"), float("nan")
    if len(ok) >= 2 and ok["d"].nunique() >= 2:
        more, time_min, time_slope = _ratio_claims(ok, prefix, paper, 0.3, slope_high)
        claims.extend(more)
        fig = {fig_name: _ratio_figure(ok, title, (f"cost-model ratio C_{labels[0]}/C_{lazy}",
                                                   f"CPU-time ratio T_{labels[0]}/T_{lazy}"))}
    else:
        claims.append(Claim(f"{prefix} cost-model ratio at every d (min over runs)", paper, None,
                            "> 1", False, note="fewer than two dimensions with both methods at "
                                               "the SOSP"))
        fig = {}
    notes = [f"Cost model C = n_H·d³ + n_it·d² counted up to the first iteration passing the exact "
             f"SOSP test. Measured-time ratio (CPU seconds, same job, 1 BLAS thread, diagnostics "
             f"excluded): min "
             f"{time_min:.3g}, slope {time_slope:.3g} in log d."]
    if time_min < 1:
        notes.append("Where the measured-time ratio is below 1, the lazy method's 2–5× more "
                     "iterations (each with chord inner solves and oracle calls) cost more than its "
                     "skipped O(d³) work: at d ≤ 160 a factorization or eigendecomposition takes "
                     "about a millisecond, comparable to the per-iteration Python and oracle "
                     "overhead. Wall-clock is also noisy on a loaded machine (runs with identical "
                     "iteration counts differ by 1.5×).")
    return Result(tables={f"{prefix} per run": frame.drop(columns=["reached"])}, figures=fig,
                  claims=claims, notes=notes)


def summarize_lazy(jobs, config: LazyConfig) -> Result:
    frame = _pair_frame(jobs)
    result = _scaling_result(frame, "E2", ("FSBA", "LFSBA"),
                             "LFSBA improves total computational cost by a factor √d", 0.9,
                             config.required_seeds, "E2 lazy Hessians: FSBA / LFSBA", "e2_lazy_ratio")
    ok = frame[frame["reached"]]
    if len(ok):
        gated = ok[ok["d"] >= config.time_gate_min_d]
        per_d = ", ".join(f"d={d}: {v:.2f}" for d, v in ok.groupby("d")["time_ratio"].mean().items())
        where = "every d" if config.time_gate_min_d <= min(config.dims) else f"d ≥ {config.time_gate_min_d}"
        times = gated["time_ratio"].to_numpy(dtype=float)
        big = ok[ok["d"] >= 160]
        big_slope = loglog_slope(big["d"], big["time_ratio"]) if big["d"].nunique() >= 2 else float("nan")
        result.claims.append(Claim(
            f"E2 measured-time ratio T_FSBA/T_LFSBA at {where} (min over runs)",
            "LFSBA improves total computational cost by a factor √d",
            float(times.min()) if len(times) else None, "> 1", bool(len(times) and times.min() > 1),
            incomplete=not len(times),
            note="CPU seconds of the process (diagnostics excluded); binding because the inner solves "
                 "between snapshots reuse the snapshot factorizations (chord iterations); per d: "
                 f"{per_d}; min over every d {float(ok['time_ratio'].min()):.2f}; slope of log(time "
                 f"ratio) vs log d over d ≥ 160: {big_slope:.3f}"))
    return result


# -- E3: hyper-cleaning on digits ----------------------------------------------------------

CLEANING_METHODS = ("uniform weights", "FSBA", "LFSBA", "F2BA", "AID-BA (η=1)", "AID-BA (η=10)")


@dataclass(frozen=True)
class CleaningConfig:
    n_train: int = 200
    n_val: int = 200
    corruption: float = 0.4
    pooling: int = 1
    penalty: float = 100.0
    cubic_reg: float = 0.01
    lazy_period: int = 10
    lazy_reg_factor: float = 3.0
    second_order_iters: int = 30
    first_order_iters: int = 200
    f2ba_lr: float = 10.0
    aid_lrs: tuple[float, ...] = (1.0, 10.0)
    max_fsba_iters_bar: int = 50
    time_share_bar: float = 0.5
    accuracy_gain_bar: float = 0.08
    f1_bar: float = 0.85


def cleaning_tasks(config: CleaningConfig) -> list:
    return [{"method": m} for m in ("uniform weights", "FSBA", "LFSBA", "F2BA")] + [
        {"method": f"AID-BA (η={lr:g})", "lr": float(lr)} for lr in config.aid_lrs]


def run_cleaning(config: CleaningConfig, seed: int, task: dict) -> dict:
    with threadpool_limits(1):
        hc = hyper_cleaning_digits(seed, n_train=config.n_train, n_val=config.n_val,
                                   corruption=config.corruption, pooling=config.pooling)
        p = hc.problem
        x0 = np.zeros(p.dx)
        method = task["method"]
        if method == "uniform weights":
            z, info = newton_solve(lambda v: p.grad_y("g", x0, v), lambda v: p.hess_yy("g", x0, v),
                                   np.zeros(p.dy), 1e-10, 30, "the lower-level Hessian ∇²_yy g")
            val = p.value("f", x0, z)
            return {"val": [val], "seconds": [0.0], "final_val": val,
                    "test_accuracy": hc.test_accuracy(z), "f1": hc.corruption_f1(x0), "n_iter": 0}
        second = dict(penalty=config.penalty, cubic_reg=config.cubic_reg,
                      max_iter=config.second_order_iters)
        if method == "FSBA":
            opt = FSBA(**second)
        elif method == "LFSBA":
            opt = LFSBA(lazy_period=config.lazy_period, lazy_reg_scale=config.lazy_reg_factor,
                        **second)
        elif method == "F2BA":
            opt = F2BA(penalty=config.penalty, lr=config.f2ba_lr, max_iter=config.first_order_iters)
        else:
            opt = AIDBA(lr=task["lr"], max_iter=config.first_order_iters)
        result = opt.minimize(p, x0)
        h = result.history
        return {"val": h["upper_at_lower"], "seconds": h["seconds"],
                "final_val": float(h["upper_at_lower"][-1]),
                "test_accuracy": hc.test_accuracy(result.z), "f1": hc.corruption_f1(result.x),
                "n_iter": int(result.n_iter)}


def summarize_cleaning(jobs, config: CleaningConfig) -> Result:
    by = _by_method(jobs)
    aid = [m for m in by if m.startswith("AID-BA")]
    best_aid = min(aid, key=lambda m: np.mean([r["final_val"] for r in by[m]])) if aid else None
    records = [{"method": m, "seed": r["seed"], "final validation CE": r["final_val"],
                "test accuracy": r["test_accuracy"], "corrupted-sample F1": r["f1"],
                "iterations": r["n_iter"], "seconds": r["seconds"][-1]}
               for m in CLEANING_METHODS if m in by for r in by[m]]
    table = summary_table(records, "method", ["final validation CE", "test accuracy",
                                              "corrupted-sample F1", "iterations", "seconds"])
    claims = []
    paper = "FSBA converges in fewer iterations and less time than first-order bilevel methods"
    f2ba = {r["seed"]: r for r in by.get("F2BA", [])}
    reach_its, shares, missing = [], [], []
    for r in by.get("FSBA", []):
        ref = f2ba.get(r["seed"])
        if ref is None:
            continue
        target = ref["final_val"]
        hit = next((t for t, v in enumerate(r["val"]) if v <= target), None)
        if hit is None:
            missing.append(r["seed"])
            continue
        reach_its.append(hit)
        shares.append(r["seconds"][hit] / ref["seconds"][-1])
    run_its = config.second_order_iters
    if missing or not reach_its:
        text = (f"not reached within {run_its} on seeds {missing}" if missing
                else "no FSBA/F2BA pair")
        claims.append(Claim(f"E3 FSBA iterations to F2BA's {config.first_order_iters}-iteration "
                            "validation loss (max over seeds)", paper, text,
                            f"≤ {config.max_fsba_iters_bar}", False,
                            note=f"FSBA ran {run_its} iterations"))
        claims.append(Claim("E3 FSBA wall-clock to that loss / F2BA's wall-clock (max over seeds)",
                            paper, text, f"≤ {config.time_share_bar:g}", False))
    else:
        claims.append(Claim.at_most(
            f"E3 FSBA iterations to F2BA's {config.first_order_iters}-iteration validation loss "
            "(max over seeds)", max(reach_its), config.max_fsba_iters_bar, paper=paper,
            note="per seed " + ", ".join(map(str, reach_its))))
        claims.append(Claim.at_most(
            "E3 FSBA wall-clock to that loss / F2BA's wall-clock (max over seeds)", max(shares),
            config.time_share_bar, paper=paper,
            note="per seed " + ", ".join(f"{s:.3f}" for s in shares)))
    base = {r["seed"]: r["test_accuracy"] for r in by.get("uniform weights", [])}
    bilevel = [m for m in ("FSBA", "LFSBA", "F2BA", best_aid) if m in by]
    gains = {m: float(np.mean([r["test_accuracy"] - base[r["seed"]] for r in by[m]
                               if r["seed"] in base])) for m in bilevel}
    gains = {m: g for m, g in gains.items() if math.isfinite(g)}
    if gains:
        worst = min(gains, key=gains.get)
        claims.append(Claim.at_least(
            "E3 test-accuracy gain over uniform weights (worst bilevel method, mean over seeds)",
            gains[worst], config.accuracy_gain_bar,
            paper="cleaning the corrupted samples improves test accuracy",
            note=", ".join(f"{m}: {g:+.3f}" for m, g in gains.items())
                 + f"; uniform weights {np.mean(list(base.values())):.3f}"))
    else:
        claims.append(Claim("E3 test-accuracy gain over uniform weights (worst bilevel method, "
                            "mean over seeds)", "", None, f"≥ {config.accuracy_gain_bar:g}", False))
    f1 = [r["f1"] for r in by.get("FSBA", [])]
    claims.append(Claim.at_least("E3 FSBA corrupted-sample F1 (σ(x_i) < 0.5), mean over seeds",
                                 float(np.mean(f1)) if f1 else None, config.f1_bar,
                                 paper="the learned weights flag the corrupted samples",
                                 note="per seed " + ", ".join(f"{v:.3f}" for v in f1)))
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8))
    for i, method in enumerate(m for m in CLEANING_METHODS if m in by and m != "uniform weights"):
        for k, r in enumerate(sorted(by[method], key=lambda r: r["seed"])):
            label = method if k == 0 else None
            axes[0].plot(r["seconds"], r["val"], color=f"C{i}", alpha=0.7, label=label)
            axes[1].plot(np.arange(len(r["val"])), r["val"], color=f"C{i}", alpha=0.7, label=label)
    if base:
        uni = np.mean([r["final_val"] for r in by["uniform weights"]])
        for ax in axes:
            ax.axhline(uni, color="grey", ls=":", label="uniform weights")
    axes[0].set_xlabel("wall-clock seconds (1 BLAS thread)")
    axes[1].set_xlabel("outer iteration")
    axes[1].set_xscale("symlog", linthresh=10)
    for ax in axes:
        ax.set_ylabel("validation cross-entropy f(x, y*(x))")
        ax.legend(fontsize=7)
    fig.suptitle("E3 digits hyper-cleaning (40 % corrupted labels)", fontsize=9)
    fig.tight_layout()
    notes = [f"AID-BA step size chosen from {list(config.aid_lrs)} by mean final validation loss: "
             f"{best_aid}. LFSBA: m = {config.lazy_period}, M_lazy = {config.lazy_reg_factor:g}·M. "
             "Timings are per job, jobs running two at a time."]
    return Result(tables={"E3 hyper-cleaning (mean ± std over seeds)": table},
                  figures={"e3_validation_vs_time": fig}, claims=claims, notes=notes)


# -- E4: minimax --------------------------------------------------------------------------

MINIMAX_METHODS = ("MCN", "LMCN", "GDA")


@dataclass(frozen=True)
class MinimaxConfig:
    d: int = 20
    cubic_reg: float = 10.0
    eps: float = 1e-5
    second_order_iters: int = 100
    gda_iters: int = 3000
    gda_lr_x: float = 0.05
    gda_lr_y: float = 0.5
    dims: tuple[int, ...] = (20, 40, 80, 160, 320, 640)
    scaling_seeds: tuple[int, ...] = (0, 1)
    scaling_max_iter: int = 1000
    required_seeds: int = 10


def minimax_tasks(config: MinimaxConfig) -> list:
    return [{"method": m} for m in MINIMAX_METHODS] + [{"method": "scaling", "d": int(d)}
                                                       for d in config.dims]


def run_minimax(config: MinimaxConfig, seed: int, task: dict) -> dict:
    method = task["method"]
    if method == "scaling":
        if seed not in config.scaling_seeds:
            return {"skipped": True}
        kw = dict(cubic_reg=config.cubic_reg, eps=config.eps, max_iter=config.scaling_max_iter)
        return _lazy_pair(MCN(**kw), LMCN(**kw), make_saddle_minimax, task["d"], seed)
    problem, x0 = make_saddle_minimax(d=config.d, seed=seed)
    if method == "GDA":
        opt = GDA(lr_x=config.gda_lr_x, lr_y=config.gda_lr_y, eps=config.eps,
                  max_iter=config.gda_iters)
    else:
        cls = MCN if method == "MCN" else LMCN
        opt = cls(cubic_reg=config.cubic_reg, eps=config.eps, max_iter=config.second_order_iters)
    return _escape_metrics(opt.minimize(problem, x0), problem.exact["n_minus"])


def summarize_minimax(jobs, config: MinimaxConfig) -> Result:
    escape = [j for j in jobs if j.task["method"] != "scaling"]
    scaling = [j for j in jobs if j.task["method"] == "scaling" and not j.metrics.get("skipped")]
    by = _by_method(escape)
    claims = []
    for method in ("MCN", "LMCN"):
        rows = by.get(method, [])
        its = [r["first_sosp"] for r in rows if r["first_sosp"] is not None]
        claims.append(_count_claim(
            f"E4 {method} escapes to the SOSP of Φ (Φ−Φ* ≤ 1e-8) within "
            f"{config.second_order_iters} iterations", [_reached(r) for r in rows],
            config.required_seeds, paper="minimax cubic Newton finds second-order stationary points",
            note=f"first SOSP iterations {min(its) if its else '—'}–{max(its) if its else '—'}"))
    rows = by.get("GDA", [])
    claims.append(_count_claim(
        f"E4 GDA stays at the saddle (‖x₋‖ < 1e-8, Φ−Φ* ≥ n₋/4 − 1e-6) after {config.gda_iters} "
        "iterations", [_stuck(r) for r in rows], config.required_seeds,
        paper="gradient descent-ascent stalls at strict saddles"))
    frame = _pair_frame(scaling, ("MCN", "LMCN")) if scaling else None
    tables = {"E4 saddle escape (mean ± std over seeds)": _iteration_table(by, MINIMAX_METHODS)}
    figures = {"e4_minimax_escape": _gap_figure(by, MINIMAX_METHODS,
                                                f"E4 minimax saddle escape, d = {config.d}")}
    notes = []
    if frame is not None:
        scaled = _scaling_result(frame, "E4", ("MCN", "LMCN"),
                                 "LMCN has better computational complexity than MCN", None,
                                 len(config.scaling_seeds), "E4 lazy minimax: MCN / LMCN",
                                 "e4_lazy_ratio")
        claims.extend(scaled.claims)
        tables.update(scaled.tables)
        figures.update(scaled.figures)
        notes.extend(scaled.notes)
    return Result(tables=tables, figures=figures, claims=claims, notes=notes)


# -- E5: penalty approximation rate -------------------------------------------------------

@dataclass(frozen=True)
class PenaltyConfig:
    d: int = 20
    n_points: int = 5
    penalties: tuple[float, ...] = (1e1, 1e2, 1e3, 1e4)
    inner_tol: float = 1e-12


def run_penalty(config: PenaltyConfig, seed: int) -> dict:
    problem, _ = make_saddle_bilevel(d=config.d, seed=seed)
    rng = np.random.default_rng([seed, 5])
    rows = []
    for point in range(config.n_points):
        x = rng.standard_normal(config.d)
        phi, grad, hess = (problem.exact[k](x) for k in ("phi", "grad", "hess"))
        for lam in config.penalties:
            s = penalty_surrogate(problem, x, lam, inner_tol=config.inner_tol)
            rows.append({"point": point, "penalty": float(s["penalty"]),
                         "value": abs(s["value"] - phi),
                         "gradient": float(np.linalg.norm(s["grad"] - grad)),
                         "Hessian": float(np.linalg.norm(s["hess"] - hess, 2))})
    return {"rows": rows}


def summarize_penalty(jobs, config: PenaltyConfig) -> Result:
    frame = pd.DataFrame([dict(r, seed=j.seed) for j in jobs for r in j.metrics["rows"]])
    means = frame.groupby("penalty")[["value", "gradient", "Hessian"]].mean()
    claims, fig = [], plt.figure(figsize=(5.0, 3.6))
    ax = fig.add_subplot(111)
    for i, q in enumerate(("value", "gradient", "Hessian")):
        slope = loglog_slope(means.index, means[q])
        per = [loglog_slope(g["penalty"], g[q]) for _, g in frame.groupby(["seed", "point"])]
        claims.append(Claim.between(f"E5 slope of the penalty {q} error vs λ (log-log)", slope,
                                    -1.3, -0.7, paper="|ℒ_λ − φ|, ‖∇ℒ_λ − ∇φ‖, ‖∇²ℒ_λ − ∇²φ‖ = O(1/λ)",
                                    note=f"slope of the mean over {config.n_points} points; "
                                         f"per point {min(per):.3f}…{max(per):.3f}"))
        ax.loglog(means.index, means[q], "o-", color=f"C{i}", label=f"{q} (slope {slope:.2f})")
    lam = means.index.to_numpy(dtype=float)
    ax.loglog(lam, means["Hessian"].iloc[0] * lam[0] / lam, "k--", lw=1, label="∝ 1/λ")
    ax.set_xlabel("penalty λ")
    ax.set_ylabel("error of ℒ_λ vs φ (mean over points)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    table = means.reset_index()
    return Result(tables={"E5 mean penalty errors": table}, figures={"e5_penalty_rate": fig},
                  claims=claims,
                  notes=["Errors: |ℒ_λ(x) − φ(x)|, ‖∇ℒ_λ − ∇φ‖₂ and the spectral norm of "
                         "∇²ℒ_λ − ∇²φ at random x ~ N(0, I), the Hessian from the second-order "
                         "Schur-complement formula (no third derivatives)."])


# -- registration ----------------------------------------------------------------------------

register(Experiment(
    slug="fsba",
    title="Second-Order Bilevel Optimization with Accelerated Convergence Rates",
    parts=[
        Part(name="saddle", run=run_saddle, summarize=summarize_saddle, tasks=saddle_tasks,
             quick=SaddleConfig(first_order_iters=300, required_seeds=1), full=SaddleConfig(),
             seeds=tuple(range(10)), quick_seeds=(0,),
             description="E1: FSBA/LFSBA escape a strict saddle; AID-BA/F2BA stay; perturbed F2BA later"),
        Part(name="lazy-scaling", run=run_lazy, summarize=summarize_lazy, tasks=dim_tasks,
             quick=LazyConfig(dims=(20, 40, 80), required_seeds=1), full=LazyConfig(),
             seeds=(0, 1), quick_seeds=(0,),
             description="E2: FSBA / LFSBA cost-model ratio vs d (√d claim)"),
        Part(name="hyper-cleaning", run=run_cleaning, summarize=summarize_cleaning,
             tasks=cleaning_tasks,
             quick=CleaningConfig(n_train=60, n_val=60, pooling=2, second_order_iters=8,
                                  first_order_iters=30, aid_lrs=(10.0,)),
             full=CleaningConfig(), seeds=(0, 1, 2), quick_seeds=(0,),
             description="E3: digits data hyper-cleaning, FSBA/LFSBA vs F2BA/AID-BA"),
        Part(name="minimax", run=run_minimax, summarize=summarize_minimax, tasks=minimax_tasks,
             quick=MinimaxConfig(gda_iters=300, dims=(20, 40, 80), scaling_seeds=(0,),
                                 required_seeds=1),
             full=MinimaxConfig(), seeds=tuple(range(10)), quick_seeds=(0,),
             description="E4: MCN/LMCN escape, GDA does not; LMCN / MCN cost ratio vs d"),
        Part(name="penalty-rate", run=run_penalty, summarize=summarize_penalty,
             quick=PenaltyConfig(d=8, n_points=2), full=PenaltyConfig(), seeds=(0,),
             quick_seeds=(0,), description="E5: penalty surrogate errors are O(1/λ)"),
    ],
    claims=["FSBA finds an (ε, O(√ε))-second-order stationary point in Õ(ε^-1.5) iterations, "
            "escaping saddles where first-order bilevel methods stall",
            "LFSBA (lazy Hessians) improves the total computational cost by a factor √d",
            "LMCN improves the computational complexity of minimax cubic Newton"],
    reference="Sheng Yang, Chengchang Liu, Lesi Chen, John C.S. Lui. Second-Order Bilevel "
              "Optimization with Accelerated Convergence Rates. ICML 2026, arXiv:2605.06431.",
))
