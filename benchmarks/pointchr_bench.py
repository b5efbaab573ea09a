"""PointCHR cost: the push + Einstein midpoint is linear in the number of points N (log-log slope
≤ 1.15), the brute-force k-NN of the curvature estimate is quadratic (slope ≤ 2.15), and the
overhead ratio of CHR on a PointNet-lite forward pass at N = 1024 (expected < 1.30), with where
the time goes (the optional 128→64 projection, the CHR module alone). CPU time, one thread,
medians of interleaved repeats.

Run ``python benchmarks/pointchr_bench.py`` for the slopes and ratios, or
``pytest benchmarks/pointchr_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import pytest
import torch

from icml26.core.stats import loglog_slope
from icml26.pointchr import CurvatureHyperbolicRectifier, knn_indices
from icml26.pointchr.experiment import ScalingConfig, measure_scaling

CONFIG = ScalingConfig()


def measure(config: ScalingConfig = CONFIG) -> dict:
    """Seconds per call at each N, the log-log slopes and the overhead ratios."""
    result = measure_scaling(config)
    sizes = [r["n_points"] for r in result["rows"]]
    columns = [c for c in result["rows"][0] if c != "n_points"]
    seconds = {c: [r[c] for r in result["rows"]] for c in columns}
    base = result["pointnet_s"]
    return {"sizes": sizes, "seconds": seconds,
            "slopes": {c: loglog_slope(sizes, v) for c, v in seconds.items()},
            "overhead": result["pointnet_chr_s"] / base,
            "overhead_with_projection": result["pointnet_chr_projection_s"] / base,
            "overhead_with_curvature": result["pointnet_chr_with_curvature_s"] / base,
            "projection_only": result["projection_only_s"] / base,
            "chr_module_only": result["chr_module_s"] / base}


@pytest.mark.parametrize("n", [512, 2048])
def test_bench_chr_forward(benchmark, n):
    torch.manual_seed(0)
    chr_ = CurvatureHyperbolicRectifier(128, 64).eval()
    xyz, feats, kappa = torch.rand(8, n, 3), torch.randn(8, n, 128), torch.rand(8, n)
    with torch.no_grad():
        benchmark(chr_, xyz, feats, kappa)


@pytest.mark.parametrize("n", [512, 2048])
def test_bench_knn(benchmark, n):
    benchmark(knn_indices, torch.rand(8, n, 3), 16)


def test_bench_push_midpoint_is_linear():
    result = measure(ScalingConfig(repeats=3))
    assert result["slopes"]["push_midpoint_s"] <= 1.15


if __name__ == "__main__":
    torch.set_num_threads(1)
    result = measure()
    print(f"{'operation':18s}" + "".join(f"{n:>11d}" for n in result["sizes"]) + "   slope")
    for name, seconds in result["seconds"].items():
        print(f"{name:18s}" + "".join(f"{s:11.2e}" for s in seconds) + f"   {result['slopes'][name]:.3f}")
    print(f"overhead PointNet-lite + CHR / PointNet-lite (κ precomputed): {result['overhead']:.3f}")
    print(f"  same with a 128→64 projection before the push:             {result['overhead_with_projection']:.3f}")
    print(f"  incl. brute-force curvature:                               {result['overhead_with_curvature']:.3f}")
    print(f"CHR module alone / PointNet-lite:                            {result['chr_module_only']:.3f}")
    print(f"128→64 projection alone / PointNet-lite:                     {result['projection_only']:.3f}")
