"""Reproduction of NL2Repo-Bench's *grading protocol* at CPU scale (spec §6).

The paper's headline (best agents ≈ 40 % average pass rate) needs LLM agents and the 104
Docker-image tasks, neither available offline. What is reproduced instead is the
harness's correctness, against agents whose score is known analytically:

* **E1** reference-agent matrix (oracle ×3, null, stub, partial(f)) on the four built-in tasks;
* **E2** twelve negative-control agents (forgery, hooks, hangs, bombs, probes) and eight
  forgers, one or two per attack class of the forgery audit (recognisable canaries,
  in-process forgery, post-hoc edits, a writable grading environment, readable history,
  resources), plus the ``agent_exit`` label;
* **E3** premature-termination and step-limit detection with a step-protocol agent;
* **scaling** harness overhead vs number of tests (log-log slope ≤ 1.15).

The checks, their kinds and bars are declared in ``claims.toml``; each ``summarize`` returns
named measurements (a pass/fail check is a bool with what was seen in its note).

References
----------
Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of
Coding Agents", ICML 2026 (arXiv:2512.12730).
"""

from __future__ import annotations

import math
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from icml26.core.claims import Measurement
from icml26.core.experiment import Experiment, Part, Result, register
from icml26.core.figures import subplots
from icml26.core.stats import loglog_slope

from .baselines import (CONTROL_EXPECTED_LABEL, CONTROLS, FORGER_CLASS, FORGERS, reference_agent,
                        score_legacy)
from .data import make_scaling_task
from .harness import Results, evaluate, grade
from .task import Limits, builtin_tasks, expected_partial_score, fraction_to_modules

TOL = 1e-12


def _check(ok: bool, note: str = "") -> Measurement:
    """A pass/fail harness check (a ``["true"]`` bar), with what was seen in its note."""
    return Measurement(bool(ok), note=note)


def _limits(task, wall_s: float) -> Limits:
    fields = {**task.limits.__dict__, "wall_s": wall_s}
    return Limits(**fields)


def _agent_factory(agent: str):
    kind, _, arg = agent.partition(":")
    if kind == "partial":
        return reference_agent("partial", fraction=float(arg))
    if kind == "control":
        return reference_agent("control", control=arg)
    return reference_agent(kind)


def _run_one(task_id: str, agent: str, wall_s: float, sandbox: str) -> dict:
    task = builtin_tasks([task_id])[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = evaluate([task], _agent_factory(agent), sandbox=sandbox, limits=_limits(task, wall_s))
    rec = res.records[0]
    rec["warnings"] = [str(w.message) for w in caught]
    rec["task_id"] = task_id
    rec["agent"] = agent
    return rec


# -- E1 ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class E1Config:
    tasks: tuple = ("unitconv", "humanfmt", "csvq", "kvlog")
    oracle_runs: int = 3
    fractions: tuple = (0.25, 0.5, 0.75)
    wall_s: float = 600.0
    sandbox: str = "auto"
    # The spec's bar "fully-passed rate of partial(0.75) = 0" contradicts its own partial(f)
    # (⌈0.75·3⌉ = 3 modules: a complete solution on the 3-module tasks); the claim is judged
    # against the analytic value. ``spec_partial_bar=True`` adds the spec's literal bar back.
    spec_partial_bar: bool = False


def e1_tasks(config: E1Config) -> list[dict]:
    agents = [f"oracle#{r}" for r in range(config.oracle_runs)] + ["null", "stub"] + [
        f"partial:{f:g}" for f in config.fractions]
    return [{"task": t, "agent": a} for t in config.tasks for a in agents]


def e1_run(config: E1Config, seed: int, task: dict) -> dict:
    agent = task["agent"].split("#")[0]
    rec = _run_one(task["task"], agent, config.wall_s, config.sandbox)
    out = {k: rec[k] for k in ("task_id", "category", "score", "label", "install_ok", "import_ok",
                               "n_passed", "n_total", "isolation", "flags", "unexpected_tests",
                               "total_s", "install_s", "pytest_s")}
    out["agent"] = task["agent"]
    out["kind"] = agent.split(":")[0]
    if agent.startswith("partial:"):
        t = builtin_tasks([task["task"]])[0]
        f = float(agent.split(":")[1])
        out["fraction"] = f
        out["expected"] = expected_partial_score(t, fraction_to_modules(t, f))
    if agent == "oracle":
        out["outcomes"] = rec["outcomes"]
    return out


def e1_summarize(jobs, config: E1Config) -> Result:
    recs = [j.metrics for j in jobs]
    frame = pd.DataFrame([{k: r.get(k) for k in ("task_id", "agent", "score", "expected", "label",
                                                 "install_ok", "n_passed", "n_total", "total_s")}
                          for r in recs])
    by = {}
    for r in recs:
        by.setdefault(r["kind"], []).append(r)
    oracle, null, stub, partial = (by.get(k, []) for k in ("oracle", "null", "stub", "partial"))
    m, notes = {}, []
    if oracle:
        ok = all(r["score"] == 1.0 and r["label"] == "complete" for r in oracle)
        m["oracle_complete"] = _check(ok, f"{len(oracle)} oracle runs; min score "
                                          f"{min(r['score'] for r in oracle):g}")
        runs: dict = {}
        for r in oracle:
            runs.setdefault(r["task_id"], []).append(r["outcomes"])
        same = all(all(o == outs[0] for o in outs) for outs in runs.values())
        repeated = all(len(v) >= 2 for v in runs.values())
        m["oracle_deterministic"] = _check(same and (repeated or config.oracle_runs == 1),
                                           "identical" if same else "differ")
        m["oracle_full_rate"] = _full_rate(oracle)
    if null:
        m["null_zero"] = _check(all(r["score"] == 0.0 and r["label"] == "no_output" for r in null),
                                f"max score {max(r['score'] for r in null):g}; labels "
                                + ",".join(sorted({r['label'] for r in null})))
    if stub:
        worst = max(r["score"] for r in stub)
        m["stub_low"] = _check(worst <= 0.05 and all(r["install_ok"] for r in stub),
                               f"worst score {worst:g}; installs "
                               f"{sum(r['install_ok'] for r in stub)}/{len(stub)}")
    if partial:
        m["partial_max_dev"] = max(abs(r["score"] - r["expected"]) for r in partial)
        p75 = [r for r in partial if math.isclose(r["fraction"], 0.75)]
        if p75:
            rate = _full_rate(p75)
            tasks = {t.id: t for t in builtin_tasks(sorted({r["task_id"] for r in p75}))}
            complete = sorted(t.id for t in tasks.values() if fraction_to_modules(t, 0.75) == len(t.modules))
            analytic = len(complete) / len(tasks)
            m["partial75_full_rate_dev"] = Measurement(
                abs(rate - analytic),
                note=(f"F(partial(0.75)) = {rate:g}, analytic {analytic:g}: ⌈0.75·K⌉ = K (a complete "
                      "solution) on " + (", ".join(complete) or "no task")))
            if config.spec_partial_bar:
                notes.append(f"the spec's literal bar F(partial(0.75)) = 0: "
                             f"{'PASS' if rate == 0 else 'FAIL'} ({rate:g}); it conflicts with the "
                             "spec's own partial(f), which completes the K = 3-module tasks")
    # aggregate A of the whole mixed population equals the hand-computed mean
    results = Results(records=[{**r, "category": r["category"]} for r in recs])
    summary = results.summary()
    per_task = {}
    for r in recs:
        per_task.setdefault(r["task_id"], []).append(r["score"])
    hand = sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)
    m["aggregate_dev"] = abs(summary["avg_pass_rate"] - hand)
    isolation = sorted({r["isolation"] for r in recs})
    notes += [f"isolation: {', '.join(isolation)}",
              f"mixed-population summary: A = {summary['avg_pass_rate']:.4f}, "
             f"F = {summary['fully_passed_rate']:.4f}, micro = {summary['micro_pass_rate']:.4f}, "
             f"CI95 = ({summary['ci95'][0]:.3f}, {summary['ci95'][1]:.3f}), "
             f"labels = {summary['failure_modes']}"]
    fig, ax = subplots(figsize=(7, 3.5))
    for i, (tid, grp) in enumerate(frame.groupby("task_id", sort=False)):
        ax.scatter(range(len(grp)), grp["score"], label=tid, marker="o", alpha=0.7)
        exp = grp["expected"].astype(float)
        ax.scatter(range(len(grp)), exp, marker="x", color="k")
    ax.set_xticks(range(len(frame.groupby("task_id").get_group(frame.task_id.iloc[0]))))
    ax.set_xticklabels(list(frame.groupby("task_id").get_group(frame.task_id.iloc[0])["agent"]),
                       rotation=30, fontsize=7)
    ax.set_ylabel("score s (x: analytic s*)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return Result(tables={"E1 scores": frame}, figures={"e1_scores": fig}, measurements=m,
                  notes=notes)


def _full_rate(recs) -> float:
    per_task: dict = {}
    for r in recs:
        per_task.setdefault(r["task_id"], []).append(r["score"] == 1.0)
    return sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)


# -- E2 ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class E2Config:
    tasks: tuple = ("unitconv", "kvlog")
    controls: tuple = CONTROLS + FORGERS
    wall_s: float = 20.0
    sandbox: str = "auto"


def e2_tasks(config: E2Config) -> list[dict]:
    return [{"task": t, "control": c} for c in config.controls for t in config.tasks]


def e2_run(config: E2Config, seed: int, task: dict) -> dict:
    rec = _run_one(task["task"], f"control:{task['control']}", config.wall_s, config.sandbox)
    t = builtin_tasks([task["task"]])[0]
    legacy_text = rec["agent_stdout"] + "\n" + rec["test_stdout"]
    return {"task_id": task["task"], "control": task["control"], "score": rec["score"],
            "label": rec["label"], "expected_label": CONTROL_EXPECTED_LABEL[task["control"]],
            "legacy_score": score_legacy(legacy_text, rec["n_total"]),
            "expected_score": expected_partial_score(t, fraction_to_modules(t, 0.5))
            if task["control"] == "test_leak" else 0.0,
            "flags": rec["flags"], "unexpected_tests": rec["unexpected_tests"],
            "agent_wall_s": rec["agent_wall_s"], "wall_budget_s": config.wall_s,
            "agent_timed_out": rec["agent_timed_out"], "killed_by_limit": rec["agent_killed_by_limit"],
            "isolation": rec["isolation"], "agent_stdout": rec["agent_stdout"][-2000:],
            "warnings": rec["warnings"], "n_twins": rec["n_twins"]}


def e2_summarize(jobs, config: E2Config) -> Result:
    recs = [j.metrics for j in jobs]
    isolation = sorted({r["isolation"] for r in recs})
    enforced = "none" not in isolation
    frame = pd.DataFrame([{k: r[k] for k in ("control", "task_id", "score", "expected_score",
                                             "legacy_score", "label", "expected_label",
                                             "unexpected_tests", "agent_wall_s")} for r in recs])
    frame["ok"] = [(abs(r["score"] - r["expected_score"]) < TOL and r["label"] == r["expected_label"])
                   for r in recs]
    m = {}
    score_ok = [abs(r["score"] - r["expected_score"]) < TOL for r in recs]
    m["controls_score_misses"] = Measurement(len(recs) - sum(score_ok),
                                             note=f"{sum(score_ok)}/{len(recs)} as expected")
    label_ok = [r["label"] == r["expected_label"] for r in recs]
    m["controls_label_misses"] = Measurement(len(recs) - sum(label_ok),
                                             note=f"{sum(label_ok)}/{len(recs)} as expected")
    by = {}
    for r in recs:
        by.setdefault(r["control"], []).append(r)
    if "forgery" in by:
        f = by["forgery"]
        m["forgery_vs_legacy"] = _check(all(r["score"] == 0 and r["legacy_score"] == 1.0 for r in f),
                                        f"ours {max(r['score'] for r in f):g} / official regex "
                                        f"scorer {min(r['legacy_score'] for r in f):g}")
    if "hang" in by:
        m["hang_overrun_s"] = Measurement(
            max(r["agent_wall_s"] - r["wall_budget_s"] for r in by["hang"]),
            note="label " + ",".join(r["label"] for r in by["hang"]))
    for name in ("memhog", "forkbomb"):
        if name in by:
            m[f"{name}_killed"] = _check(all(r["label"] == "resource_killed" for r in by[name]),
                                         "labels " + ",".join(r["label"] for r in by[name]))
    not_enforced = "sandbox 'none': the network and hidden-file checks are not enforced"
    if "net_probe" in by:
        connected = sum(r["agent_stdout"].count("CONNECTED") for r in by["net_probe"])
        failed = sum(r["agent_stdout"].count("FAILED") for r in by["net_probe"])
        m["net_blocked"] = (_check(connected == 0 and failed > 0,
                                   f"{connected} connected, {failed} failed") if enforced
                            else Measurement(None, incomplete=not_enforced))
    if "peek" in by:
        counts = [int(g.group(1)) for r in by["peek"]
                  for g in [re.search(r"readable_hidden_files=(\d+)", r["agent_stdout"])] if g]
        m["peek_blocked"] = (_check(len(counts) == len(by["peek"]) and max(counts) == 0,
                                    f"{max(counts) if counts else 'n/a'} files readable")
                             if enforced else Measurement(None, incomplete=not_enforced))
    forgers = [r for r in recs if r["control"] in FORGERS]
    if forgers:
        flagged = [r for r in forgers if r["score"] == 0 and r["label"] == r["expected_label"]
                   and (r["control"] not in _FLAG_PREFIX
                        or any(f.startswith(_FLAG_PREFIX[r["control"]]) for f in r["flags"]))
                   and "without being stopped" not in r["agent_stdout"]]
        classes = sorted({FORGER_CLASS[r["control"]] for r in forgers})
        m["forger_misses"] = Measurement(len(forgers) - len(flagged),
                                         note=f"{len(flagged)}/{len(forgers)} stopped; classes: "
                                              + "; ".join(classes))
    if "test_leak" in by:
        m["test_leak_ignored"] = _check(
            all(abs(r["score"] - r["expected_score"]) < TOL for r in by["test_leak"]),
            ",".join(f"s={r['score']:.3f} ({r['unexpected_tests']} collected)" for r in by["test_leak"]))
    notes = [f"isolation: {', '.join(isolation)}"]
    if not enforced:
        notes.append("WARNING: sandbox 'none' — network and hidden-file checks are NOT enforced")
    fig, ax = subplots(figsize=(7, 3.2))
    agg = frame.groupby("control", sort=False)[["score", "legacy_score"]].mean()
    x = range(len(agg))
    ax.bar([i - 0.2 for i in x], agg["legacy_score"], width=0.4, label="official regex scorer")
    ax.bar([i + 0.2 for i in x], agg["score"], width=0.4, label="ours (JUnit + manifest)")
    ax.set_xticks(list(x))
    ax.set_xticklabels(agg.index, rotation=40, fontsize=7, ha="right")
    ax.set_ylabel("score")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return Result(tables={"E2 controls": frame}, figures={"e2_controls": fig}, measurements=m,
                  notes=notes)


# The flag each forger must leave (besides its label); git_history and tmpfs_hog are stopped
# (nothing readable, a capped tmpfs), not detected; atexit_rewrite finds no result file in the
# process it runs in and leaves no trace.
_FLAG_PREFIX = {"canary_spare": "suspect:pytest_internals", "plugin_export": "tamper:pytest_plugin_from_package",
                "pth_append": "tamper:modified", "python_wrapper": "tamper:modified",
                "exit_at_import": "agent_exit"}


# -- E3 ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class E3Config:
    task: str = "csvq"
    write: int = 2
    finish_at: int = 10
    max_steps: int = 500
    step_limit_max_steps: int = 20
    wall_s: float = 300.0
    sandbox: str = "auto"


def e3_tasks(config: E3Config) -> list[dict]:
    return [{"case": "premature"}, {"case": "step_limit"}]


def e3_run(config: E3Config, seed: int, task: dict) -> dict:
    t = builtin_tasks([config.task])[0]
    if task["case"] == "premature":
        agent = reference_agent("steps", write=config.write, finish_at=config.finish_at)
        limits = Limits(**{**t.limits.__dict__, "wall_s": config.wall_s, "max_steps": config.max_steps})
    else:
        agent = reference_agent("steps", write=config.write, finish_at=None)
        limits = Limits(**{**t.limits.__dict__, "wall_s": config.wall_s,
                           "max_steps": config.step_limit_max_steps})
    rec = evaluate([t], agent, sandbox=config.sandbox, limits=limits).records[0]
    return {"case": task["case"], "label": rec["label"], "steps": rec["steps"],
            "score": rec["score"], "finished": rec["finished"],
            "step_limit_hit": rec["step_limit_hit"], "agent_wall_s": rec["agent_wall_s"],
            "max_steps": limits.max_steps}


def e3_summarize(jobs, config: E3Config) -> Result:
    recs = {j.metrics["case"]: j.metrics for j in jobs}
    m = {}
    if "premature" in recs:
        r = recs["premature"]
        m["premature_finish"] = _check(r["label"] == "premature_finish",
                                       f"label {r['label']}; finish at step {config.finish_at}/"
                                       f"{config.max_steps} with {config.write} modules; "
                                       f"steps={r['steps']}, s={r['score']:.3f}")
    if "step_limit" in recs:
        r = recs["step_limit"]
        m["step_limit"] = _check(r["label"] == "step_limit",
                                 f"label {r['label']}; steps={r['steps']} of {r['max_steps']}")
    return Result(tables={"E3": pd.DataFrame(list(recs.values()))}, measurements=m)


# -- scaling -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    sizes: tuple = (50, 200, 800, 3200)
    sandbox: str = "auto"


def scaling_tasks(config: ScalingConfig) -> list[dict]:
    return [{"n_tests": n} for n in config.sizes]


def scaling_run(config: ScalingConfig, seed: int, task: dict) -> dict:
    root = Path(tempfile.mkdtemp(prefix="nl2repo-scale-"))
    try:
        t = make_scaling_task(task["n_tests"], root / "task")
        report = grade(t, t.reference_dir, sandbox=config.sandbox)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"n_tests": task["n_tests"], "score": report.score, "total_s": report.total_s,
            "pytest_s": report.pytest_s, "overhead_s": report.total_s - report.pytest_s,
            "parse_score_s": report.parse_score_s, "install_s": report.install_s}


def scaling_summarize(jobs, config: ScalingConfig) -> Result:
    recs = sorted((j.metrics for j in jobs), key=lambda r: r["n_tests"])
    frame = pd.DataFrame(recs)
    n = [r["n_tests"] for r in recs]
    slope = loglog_slope(n, [r["overhead_s"] for r in recs])
    parse_slope = loglog_slope(n, [max(r["parse_score_s"], 1e-6) for r in recs])
    m = {"overhead_slope": Measurement(slope, note=f"overhead = total − pytest's own duration; "
                                                   f"parse+score alone: slope {parse_slope:.2f}"),
         "oracle_all_sizes": _check(all(r["score"] == 1.0 for r in recs),
                                    f"min score {min(r['score'] for r in recs):g}")}
    if len(recs) >= 2:
        # A fit over all sizes hides a superlinear tail behind the constant install cost (a
        # quadratic failure summary once cost 449 s at |M| = 3200 under a fitted slope of 0.97):
        # the largest step is judged on its own, with the bar of the fit.
        top = recs[-2:]
        m["overhead_top_step_slope"] = Measurement(
            loglog_slope([r["n_tests"] for r in top], [r["overhead_s"] for r in top]),
            note=f"|M| = {top[0]['n_tests']} → {top[1]['n_tests']}")
    fig, ax = subplots(figsize=(4.5, 3.2))
    ax.loglog(n, frame["overhead_s"], "o-", label="overhead (total − pytest)")
    ax.loglog(n, frame["pytest_s"].clip(lower=1e-3), "s--", label="pytest's own duration")
    ax.loglog(n, frame["parse_score_s"].clip(lower=1e-6), "^:", label="JUnit parse + score")
    ax.set_xlabel("|M| (tests)")
    ax.set_ylabel("seconds")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return Result(tables={"scaling": frame}, figures={"scaling": fig}, measurements=m,
                  notes=[f"parse+score slope {parse_slope:.3f}"])


EXPERIMENT = register(Experiment(
    slug="nl2repo",  # title, claims and part descriptions: claims.toml
    parts=[
        Part("E1", e1_run, e1_summarize,
             quick=E1Config(tasks=("kvlog",), oracle_runs=2, fractions=(0.5,)),
             full=E1Config(), seeds=(0,), quick_seeds=(0,), tasks=e1_tasks),
        Part("E2", e2_run, e2_summarize,
             quick=E2Config(tasks=("kvlog",), controls=("forgery", "report_patch", "hang",
                                                         "symlink_escape", "atexit_rewrite"), wall_s=4.0),
             full=E2Config(), seeds=(0,), quick_seeds=(0,), tasks=e2_tasks),
        Part("E3", e3_run, e3_summarize, quick=E3Config(task="kvlog", write=1),
             full=E3Config(), seeds=(0,), quick_seeds=(0,), tasks=e3_tasks),
        Part("scaling", scaling_run, scaling_summarize, quick=ScalingConfig(sizes=(20, 160)),
             full=ScalingConfig(), seeds=(0,), quick_seeds=(0,), tasks=scaling_tasks),
    ],
))
