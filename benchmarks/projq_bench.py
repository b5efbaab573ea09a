"""ProjQ cost (CPU seconds, one thread; ProjQ with the reference's randomized subspace step, the exact
subspace timed beside it): time per layer vs width (log-log slope <= 3.2: cubic), ProjQ/GPTQ time ratio
<= 1.5 (T_used + 1), and independence of the calibration token count once the Gram matrix is
formed (max/min <= 1.3 over N in {2k, 8k, 32k}).

Run ``python benchmarks/projq_bench.py`` for the table and slopes, or
``pytest benchmarks/projq_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import pytest
import torch

from icml26.core.stats import loglog_slope
from icml26.projq import ActivationStats, GroupQuantizer, ProjQ, gptq_quantize, synthetic_layer
from icml26.projq.experiment import time_projq_and_gptq

WIDTHS = (128, 256, 512, 1024)
TOKEN_COUNTS = (2048, 8192, 32768)


def measure(widths=WIDTHS, token_counts=TOKEN_COUNTS, token_width: int = 256) -> dict:
    """Seconds of GPTQ and ProjQ per width and per token count, with the three checked numbers."""
    torch.set_num_threads(1)
    by_width = [time_projq_and_gptq(n, token_counts[0], rank=n // 8) for n in widths]
    by_tokens = [time_projq_and_gptq(token_width, t, rank=token_width // 8) for t in token_counts]
    slope = loglog_slope(widths, [r["projq_seconds"] for r in by_width])
    ratio = max((r["projq_seconds"] / r["gptq_seconds"]) / (1.5 * (r["n_iter"] + 1)) for r in by_width)
    seconds = [r["projq_seconds"] for r in by_tokens]
    return {"by_width": by_width, "by_tokens": by_tokens, "slope": slope,
            "ratio_over_bound": ratio, "token_spread": max(seconds) / min(seconds)}


@pytest.mark.parametrize("n", [128, 512])
def test_bench_projq_fit(benchmark, n):
    W, X = synthetic_layer(n, n, tokens=2048, seed=0)
    stats = ActivationStats.from_tensor(X)
    stats.sqrt_gram()
    benchmark(lambda: ProjQ(bits=2, group_size=128, rank=n // 8).fit(W, stats))


@pytest.mark.parametrize("n", [128, 512])
def test_bench_gptq(benchmark, n):
    W, X = synthetic_layer(n, n, tokens=2048, seed=0)
    H = ActivationStats.from_tensor(X).hessian()
    benchmark(gptq_quantize, W, H, GroupQuantizer(2, 128))


def test_bench_projq_slope_is_at_most_cubic():
    assert measure(widths=(128, 256, 512), token_counts=(2048, 8192))["slope"] <= 3.2


if __name__ == "__main__":
    result = measure()
    print(f"{'n':>6} {'N':>7} {'GPTQ s':>9} {'ProjQ s':>9} {'T_used':>6} {'ratio':>6}")
    for row in result["by_width"] + result["by_tokens"]:
        print(f"{row['n']:6d} {row['tokens']:7d} {row['gptq_seconds']:9.3f} {row['projq_seconds']:9.3f} "
              f"{row['n_iter']:6d} {row['projq_seconds'] / row['gptq_seconds']:6.2f}")
    print(f"slope of ProjQ time in n: {result['slope']:.2f} (bar <= 3.2)")
    print(f"max (ProjQ/GPTQ) / (1.5 (T_used + 1)): {result['ratio_over_bound']:.2f} (bar <= 1)")
    print(f"ProjQ max/min over N: {result['token_spread']:.2f} (bar <= 1.3)")
