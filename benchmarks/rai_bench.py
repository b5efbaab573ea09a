"""RAI cost: scoring + modulation is O(N_v K d) — log-log slope in N_v <= 1.15 at d in {128, 1024},
K = 9 — and small against one prefill of the toy LLaVA at N_v = 16 (ratio <= 0.10; the hooked
prefill / plain prefill ratio is printed beside it).

Run ``python benchmarks/rai_bench.py`` for the slopes and ratios, or
``pytest benchmarks/rai_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import pytest
import torch

from icml26.rai import RiskAwarenessInjection, UnsafePrototypeSubspace
from icml26.rai.experiment import OverheadConfig, run_overhead

SIZES = (16, 64, 256, 1024, 4096)


def measure(sizes=SIZES, dims=(128, 1024)) -> dict:
    """Seconds per ``RAI.modulate`` call at each (d, N_v), slopes, and the prefill ratios."""
    torch.set_num_threads(1)
    config = OverheadConfig(sizes=tuple(sizes), dims=tuple(dims))
    return {d: run_overhead(config, 0, {"dim": d}) for d in dims}


@pytest.mark.parametrize("n_visual", [16, 4096])
def test_bench_modulate(benchmark, n_visual):
    rai = RiskAwarenessInjection(UnsafePrototypeSubspace.random(9, 1024), ratio=0.01)
    h = torch.randn(n_visual, 1024)
    benchmark(rai.modulate, h)


def test_bench_modulate_slope_and_prefill_ratio():
    result = measure(dims=(128,))
    assert result[128]["slope"] <= 1.15
    assert result[128]["modulate16"] / result[128]["prefill"] <= 0.10


if __name__ == "__main__":
    for d, m in measure().items():
        print(f"d = {d:5d}  " + "  ".join(f"N_v={n}: {s:.2e}s" for n, s in zip(m["sizes"], m["seconds"]))
              + f"   slope {m['slope']:.3f}")
        if "prefill" in m:
            print(f"          modulate(N_v=16) / prefill = {m['modulate16'] / m['prefill']:.4f}; "
                  f"hooked prefill / plain prefill = {m['prefill_hooked'] / m['prefill']:.3f}")
