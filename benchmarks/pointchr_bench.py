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
from icml26.pointchr import surface_variation
from icml26.pointchr.curvature import check_curvature, check_finite, check_points
from icml26.pointchr.experiment import ScalingConfig, cpu_seconds_interleaved, measure_scaling
from icml26.pointchr.train import build_model

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


def breakdown(batch: int = 8, n_points: int = 1024, k: int = 16, repeats: int = 7,
              min_seconds: float = 0.05, seed: int = 0) -> dict:
    """CPU seconds per forward call (one thread, medians of interleaved repeats) of the pieces of
    PointNet-lite ± CHR (κ precomputed, no projection), and DGCNN-lite ± CHR for comparison.

    Pieces: the shared MLP trunk, the max-pool, the head at 128 and 256 inputs, CHR's input checks
    (``check_points`` on xyz, finiteness of the features and κ) and the CHR module as called by
    the backbone (checks included).
    """
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    xyz = torch.rand(batch, n_points, 3, generator=gen)
    kappa = surface_variation(xyz, k)
    nets = {name: build_model(variant, 8, backbone, k=k).eval()
            for name, (variant, backbone) in {"pointnet": ("base", "pointnet"), "pointnet_chr": ("chr", "pointnet"),
                                              "dgcnn": ("base", "dgcnn"), "dgcnn_chr": ("chr", "dgcnn")}.items()}
    chr_net = nets["pointnet_chr"]
    with torch.no_grad():
        feats = chr_net.rest(chr_net._first(xyz, xyz))
        pooled = feats.max(dim=1).values
        both = torch.cat([pooled, pooled], dim=-1)
        fns = {"PointNet-lite forward": lambda: nets["pointnet"](xyz),
               "PointNet-lite + CHR forward": lambda: chr_net(xyz, kappa),
               "trunk (shared MLP 3→32→64→128)": lambda: chr_net.rest(chr_net._first(xyz, xyz)),
               "max-pool over points": lambda: feats.max(dim=1).values,
               "head, 128 inputs": lambda: nets["pointnet"].head(pooled),
               "head, 256 inputs (max-pool + z_hyp)": lambda: chr_net.head(both),
               "CHR module (as called, checks included)": lambda: chr_net.chr_pool(xyz, feats, kappa,
                                                                                    return_points=False),
               "CHR input checks (xyz, feats, κ)": lambda: (check_points(xyz, "xyz"),
                                                            check_finite(feats, "feats"),
                                                            check_curvature(kappa, xyz)),
               "DGCNN-lite forward": lambda: nets["dgcnn"](xyz),
               "DGCNN-lite + CHR forward": lambda: nets["dgcnn_chr"](xyz, kappa)}
        return cpu_seconds_interleaved(fns, repeats, min_seconds)


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


def test_breakdown_times_every_piece():
    parts = breakdown(batch=2, n_points=128, repeats=1, min_seconds=0.0)
    assert len(parts) == 10 and all(v > 0 for v in parts.values())


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
    parts = breakdown()
    base = parts["PointNet-lite forward"]
    print(f"\nwhere the time goes (B=8, N=1024, κ precomputed, no projection; CPU ms, × PointNet-lite):")
    for name, seconds in parts.items():
        print(f"  {name:42s} {1e3 * seconds:8.3f} ms  {seconds / base:6.3f}×")
    print(f"overhead DGCNN-lite + CHR / DGCNN-lite: "
          f"{parts['DGCNN-lite + CHR forward'] / parts['DGCNN-lite forward']:.3f}")
