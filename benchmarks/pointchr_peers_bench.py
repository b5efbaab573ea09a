"""PointCHR against its peer library: ``PoincareOps.einstein_midpoint`` vs geoopt's
``PoincareBall.weighted_midpoint`` (the same Einstein / gyro-midpoint), forward + backward.

Measured side by side in one run: one thread, CPU time of the process, interleaved repeats (icml26,
geoopt, icml26, ...), the ratio of the medians (icml26 / geoopt). Target ≤ 1.0, never above 1.2.
The two midpoints are also compared numerically (they are the same point).

Run ``python benchmarks/pointchr_peers_bench.py`` (prints the table), or
``pytest benchmarks/pointchr_peers_bench.py`` (asserts the ratio ≤ 1.2 and the agreement).
"""

from __future__ import annotations

import statistics
import time

import torch

from icml26.pointchr import PoincareOps

SHAPES = ((32, 1024, 64), (8, 512, 128))
REPEATS = 9


def _inputs(shape, seed: int = 0, dtype=torch.float32) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    v = torch.randn(*shape, generator=gen, dtype=dtype)
    v = v / v.norm(dim=-1, keepdim=True) * torch.rand(*shape[:-1], 1, generator=gen, dtype=dtype) * 3.0
    return PoincareOps.expmap0(v, 1.0)             # tangent norms up to 3, as in CHR


def _ours(x: torch.Tensor) -> torch.Tensor:
    return PoincareOps.einstein_midpoint(x, 1.0, dim=-2)


def _geoopt(ball):
    return lambda x: ball.weighted_midpoint(x, reducedim=[-2], dim=-1)


def _forward_backward(fn, x: torch.Tensor) -> float:
    """CPU seconds of one forward + backward of ``fn`` on a fresh leaf copy of ``x``."""
    leaf = x.detach().clone().requires_grad_(True)
    start = time.process_time()
    fn(leaf).sum().backward()
    return time.process_time() - start


def measure(shape=SHAPES[0], repeats: int = REPEATS, number: int = 3) -> dict:
    """Median CPU seconds per forward + backward of each implementation, interleaved, and the ratio."""
    import geoopt

    ball = geoopt.PoincareBall(c=1.0)
    x = _inputs(shape)
    fns = {"icml26": _ours, "geoopt": _geoopt(ball)}
    for fn in fns.values():                         # warm-up (geoopt's TorchScript compiles)
        for _ in range(2):
            _forward_backward(fn, x)
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(sum(_forward_backward(fn, x) for _ in range(number)) / number)
    median = {name: statistics.median(t) for name, t in times.items()}
    with torch.no_grad():
        x64 = x.double()
        diff = float((_ours(x64) - geoopt.PoincareBall(c=1.0).weighted_midpoint(
            x64, reducedim=[-2], dim=-1)).abs().max())
    return {"shape": shape, "icml26_s": median["icml26"], "geoopt_s": median["geoopt"],
            "ratio": median["icml26"] / median["geoopt"], "max_abs_diff_float64": diff}


def test_einstein_midpoint_vs_geoopt_ratio_and_agreement():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = measure(SHAPES[0], repeats=5, number=1)
    finally:
        torch.set_num_threads(threads)
    assert result["max_abs_diff_float64"] < 1e-10
    assert result["ratio"] <= 1.2, result


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(f"{'shape':>16s} {'icml26 ms':>10s} {'geoopt ms':>10s} {'ratio':>7s} {'max|Δ| f64':>11s}")
    for shape in SHAPES:
        r = measure(shape)
        print(f"{str(shape):>16s} {1e3 * r['icml26_s']:10.2f} {1e3 * r['geoopt_s']:10.2f} "
              f"{r['ratio']:7.2f} {r['max_abs_diff_float64']:11.1e}")
