"""RB-PEM speed: per-run time vs sep-CMA-ES at the same budget, and bootstrap cost vs B_bs.

Claims (spec §6, issue #3): RB-PEM per-run time ≤ 1.5× sep-CMA-ES's (pycma) on the same
function and budget; the bootstrap step's time grows linearly in ``B_bs`` (log-log slope
≤ 1.15). Run: ``python benchmarks/pem_bench.py`` (prints the ratio and slope), or through
pytest-benchmark: ``pytest benchmarks/pem_bench.py``.
"""

from __future__ import annotations

import time

import numpy as np

from icml26.core.stats import loglog_slope
from icml26.pem import RBPEM, BudgetedObjective, SepCMABaseline
from icml26.pem.data import run_on_bbob_noisy
from icml26.pem.experiment import time_bootstrap

FUNCTION, INSTANCE, DIMENSION, BUDGET_MULT = 110, 1, 20, 100   # an E1 problem
BOOTSTRAP_SIZES = (16, 32, 64, 128, 256)


def run_seconds(cls, seed: int = 0, function: int = FUNCTION, dimension: int = DIMENSION) -> float:
    """Wall seconds of one full-budget run of ``cls`` on a bbob-noisy problem (COCO included)."""
    def optimize(fun, x0, bounds, budget):
        obj = BudgetedObjective(fun, budget, record_history=False)
        start = time.perf_counter()
        cls(x0, 0.3 * float(np.min(bounds[1] - bounds[0])), bounds=bounds, seed=seed).optimize(obj)
        return time.perf_counter() - start

    return run_on_bbob_noisy(optimize, function, INSTANCE, dimension,
                             BUDGET_MULT * dimension)["output"]


def time_ratio(repeats: int = 5, dimension: int = DIMENSION) -> tuple[float, float, float]:
    """Median per-run seconds of RB-PEM and sep-CMA-ES (interleaved), and their ratio."""
    pem, sep = [], []
    for seed in range(repeats):
        pem.append(run_seconds(RBPEM, seed, dimension=dimension))
        sep.append(run_seconds(SepCMABaseline, seed, dimension=dimension))
    return float(np.median(pem)), float(np.median(sep)), float(np.median(pem) / np.median(sep))


def test_rbpem_run(benchmark):
    benchmark.pedantic(run_seconds, args=(RBPEM,), rounds=3)


def test_sep_cma_run(benchmark):
    benchmark.pedantic(run_seconds, args=(SepCMABaseline,), rounds=3)


def test_rbpem_not_slower_than_1_5x_sep_cma():
    assert time_ratio(repeats=3)[2] <= 1.5


def test_bootstrap_cost_is_linear_in_replicates():
    sizes = BOOTSTRAP_SIZES
    assert loglog_slope(sizes, time_bootstrap(sizes, 16, 300)) <= 1.15


if __name__ == "__main__":
    for n in (20, 40):
        pem, sep, ratio = time_ratio(dimension=n)
        print(f"f{FUNCTION} n={n} B={BUDGET_MULT}n: RB-PEM {pem:.3f} s/run, sep-CMA-ES (pycma) "
              f"{sep:.3f} s/run, ratio {ratio:.2f} (claim ≤ 1.5)")
    secs = time_bootstrap(BOOTSTRAP_SIZES, 16, 2000)
    for b, s in zip(BOOTSTRAP_SIZES, secs):
        print(f"B_bs={b:4d}: {s / 2000 * 1e6:8.1f} µs per expected_rank_weights call (λ=16)")
    print(f"log-log slope of bootstrap time in B_bs: {loglog_slope(BOOTSTRAP_SIZES, secs):.3f} "
          "(claim ≤ 1.15)")
