"""LCL speed: training time is linear in the number of cells for a fixed clone-size
distribution (log-log slope <= 1.15 over 100..800 clones, about 1.4k..11k cells), and the
NT-Xent loss step.

Run ``python benchmarks/lcl_bench.py`` for the slope table, or
``pytest benchmarks/lcl_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import pytest
import torch

from icml26.core.stats import loglog_slope
from icml26.lcl import LCL, lcl_loss, simulate_lineage_tracing
from icml26.lcl.experiment import ScalingConfig, run_scaling

CLONE_COUNTS = (100, 200, 400, 800)


def measure(clone_counts=CLONE_COUNTS, epochs: int = 3, repeats: int = 2) -> dict:
    """Best-of-``repeats`` CPU seconds of an ``epochs``-epoch single-threaded LCL fit per size
    (the wall clock of a shared machine measures its other users too), and the slope."""
    rows = run_scaling(ScalingConfig(clone_counts=clone_counts, epochs=epochs, repeats=repeats), seed=0)["rows"]
    cells = [r["n_cells"] for r in rows]
    seconds = [r["seconds"] for r in rows]
    return {"rows": rows, "slope": loglog_slope(cells, seconds)}


def test_bench_training_time_slope_in_cells():
    result = measure(clone_counts=(100, 200, 400), epochs=2, repeats=1)
    assert result["slope"] <= 1.15


@pytest.mark.parametrize("batch_size", [50, 260])
def test_bench_loss_step(benchmark, batch_size):
    g = torch.Generator().manual_seed(0)
    za, zb, zu = (torch.randn(n, 32, generator=g) for n in (batch_size, batch_size, 15))
    benchmark(lcl_loss, za, zb, zu, 0.5, 0.05)


def test_bench_fit_one_epoch(benchmark):
    data = simulate_lineage_tracing(n_clones=100, seed=0)
    model = LCL(hidden_dims=(256, 128, 64), max_epochs=1, warmup_epochs=0, val_fraction=0.0)
    benchmark.pedantic(model.fit, args=(data.X, data.clone), rounds=2, iterations=1)


if __name__ == "__main__":
    result = measure()
    print(f"{'clones':>7} {'cells':>7} {'batches':>8} {'CPU s':>9}")
    for r in result["rows"]:
        print(f"{r['n_clones']:7d} {r['n_cells']:7d} {r['n_batches']:8d} {r['seconds']:9.2f}")
    print(f"log-log slope of training time in cells: {result['slope']:.3f} (bar <= 1.15)")
