"""spectral_rl cost: the dense pipeline (P, ρ, L, eigh, V) is O(n³) in the number of states
(log-log slope ≤ 3.3 over n = 100…800), the count estimator O(T) in transitions (slope ≤ 1.15
over T = 1e5…1e6).

Run ``python benchmarks/spectral_rl_bench.py`` for the slopes, or
``pytest benchmarks/spectral_rl_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import numpy as np
import pytest

from icml26.core.stats import loglog_slope
from icml26.spectral_rl import GridWorld, count_weights, laplacian_eigenpairs, sample_trajectories
from icml26.spectral_rl.experiment import ScalingConfig, run_scaling


def measure(config: ScalingConfig = ScalingConfig()) -> dict:
    m = run_scaling(config, seed=0)
    n = [d["n"] for d in m["dense"]]
    t = [c["T"] for c in m["counts"]]
    return {"dense": m["dense"], "counts": m["counts"],
            "slope_dense": loglog_slope(n, [d["seconds"] for d in m["dense"]]),
            "slope_count": loglog_slope(t, [c["seconds"] for c in m["counts"]]),
            "slope_sampler": loglog_slope(t, [c["sample_seconds"] for c in m["counts"]])}


def test_bench_scaling_slopes():
    result = measure()
    assert result["slope_dense"] <= 3.3
    assert result["slope_count"] <= 1.15


@pytest.mark.parametrize("n_side", [10, 20])
def test_bench_eigenpairs(benchmark, n_side):
    P = GridWorld.open_room(n_side, n_side).transition("biased")
    benchmark(laplacian_eigenpairs, P)


@pytest.mark.parametrize("T", [100_000, 1_000_000])
def test_bench_count_estimator(benchmark, T):
    P = GridWorld.two_rooms(9, 15, door=3).transition("uniform")
    s, s2 = sample_trajectories(P, T, rng=0)
    benchmark(count_weights, s, s2, P.shape[0])


if __name__ == "__main__":
    out = measure()
    for row in out["dense"]:
        print(f"n = {row['n']:5d}: dense pipeline {row['seconds'] * 1e3:8.2f} ms")
    for row in out["counts"]:
        print(f"T = {row['T']:8d}: count estimator {row['seconds'] * 1e3:7.2f} ms, "
              f"sampler {row['sample_seconds'] * 1e3:7.1f} ms")
    print(f"slopes: dense {out['slope_dense']:.2f} (bar ≤ 3.3), count {out['slope_count']:.2f} "
          f"(bar ≤ 1.15), sampler {out['slope_sampler']:.2f}")
    print(f"numpy {np.__version__}")
