"""A worked example experiment (not a paper): the sample mean's error shrinks as 1/sqrt(n).

It exercises every piece of the framework (configs, seeds, per-seed tasks, a table, a
figure, a passing and an optional failing claim, a job that raises). Its claims are built in
code (``Result(claims=[...])``), the path an experiment outside icml26's method folders can
use; a method folder declares its claims as data instead (``claims.toml``, see
:mod:`icml26.core.claims`; ``src/icml26/pem`` is the template). It is *not* registered by
discovery; tests and curious users call ``register(EXPERIMENT)``.

Examples
--------
>>> from icml26.core.example import EXPERIMENT
>>> from icml26.core.runner import run_part
>>> outcome = run_part(EXPERIMENT, "rate", quick=True)
>>> [c.passed for c in outcome.result.claims]
[True]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .experiment import Claim, Experiment, Part, Result
from .figures import subplots
from .stats import loglog_slope, summary_table


@dataclass(frozen=True)
class RateConfig:
    """Sample sizes, repetitions per size, and switches that exercise failure paths."""

    sizes: tuple = (10, 100, 1000)
    repetitions: int = 200
    fail_seed: int = -1              # a job with this seed raises (tests the runner)
    include_failing_claim: bool = False  # adds a claim that cannot pass


def tasks(config: RateConfig) -> list:
    return [{"n": int(n)} for n in config.sizes]


def run(config: RateConfig, seed: int, task: dict) -> dict:
    if seed == config.fail_seed:
        raise RuntimeError(f"seed {seed} fails on purpose")
    rng = np.random.default_rng([seed, task["n"]])
    samples = rng.standard_normal((config.repetitions, task["n"]))
    return {"n": task["n"], "mean_abs_error": float(np.abs(samples.mean(axis=1)).mean())}


def summarize(jobs: list, config: RateConfig) -> Result:
    records = [dict(j.metrics, seed=j.seed) for j in jobs]
    frame = pd.DataFrame(records)
    by_n = frame.groupby("n")["mean_abs_error"].mean()
    slope = loglog_slope(by_n.index.values, by_n.values)
    fig, ax = subplots(figsize=(4, 3))
    ax.loglog(by_n.index, by_n.values, "o-", label="measured")
    ax.loglog(by_n.index, by_n.values[0] * np.sqrt(by_n.index[0] / by_n.index), "--",
              label="1/sqrt(n)")
    ax.set_xlabel("n")
    ax.set_ylabel("mean |error|")
    ax.legend()
    # The slope is a property of the sample mean at any size, so the bar holds at quick scale
    # too (.quick()); a claim that needs the full config stays a smoke check in quick runs.
    claims = [Claim.between("log-log slope of error in n", slope, -0.6, -0.4,
                            paper="-0.5").quick()]
    if config.include_failing_claim:
        claims.append(Claim.at_most("error at the largest n", float(by_n.values[-1]), 0.0,
                                    paper="0 (impossible on purpose)").quick())
    return Result(tables={"error by n": summary_table(records, "n", ["mean_abs_error"])},
                  figures={"error vs n": fig}, claims=claims,
                  notes=[f"fitted slope {slope:.3f}"])


EXPERIMENT = Experiment(
    slug="example",
    title="Worked example: the sample mean's error shrinks as 1/sqrt(n)",
    headline="rate/log-log slope of error in n",
    parts=[Part(name="rate", run=run, summarize=summarize, tasks=tasks,
                quick=RateConfig(sizes=(10, 100), repetitions=50),
                full=RateConfig(), seeds=(0, 1, 2), quick_seeds=(0, 1),
                description="error of the sample mean vs n")],
    claims=["the sample mean's error shrinks as n^-1/2"],
    reference="Any statistics textbook.",
)
