"""SafeDec speed: decode overhead (|A|, zones, along an episode) and the STL window operators.

The decode measurements are experiment E5's (``icml26 run safedec --exp scaling``), printed
as log-log slopes and ratios. The STL part times a bounded ``G[0,W]`` with ``W = N`` over one
trace of N = 1e4…1e6 steps (NumPy and torch): the sliding-window reduction is O(N) for any
window, so the log-log slope must be ≤ 1.15 and at N = 1e5 the bounded operator must cost
at most 10× the unbounded ``G`` (a suffix minimum). Run: ``python benchmarks/safedec_bench.py``.
"""

from __future__ import annotations

import numpy as np
import torch

from icml26.core.stats import loglog_slope
from icml26.core.stats import best_seconds
from icml26.safedec import Always, And, Eventually, Predicate
from icml26.safedec.experiment import (DisplacementDynamics, ScalingConfig, _decode_time, _offsets,
                                       _zone_spec, run_scaling)

BATCH = 256
STL_SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000)
X_POS = Predicate("x>0", lambda x: x[..., 0])
Y_GT1 = Predicate("y>1", lambda x: x[..., 1] - 1.0)


def _trace(n: int, backend: str):
    trace = np.random.default_rng(0).normal(size=(n, 2))
    return torch.from_numpy(trace) if backend == "torch" else trace


def measure_windows(sizes=STL_SIZES) -> dict:
    """Seconds of bounded ``G[0,N-1]`` and unbounded ``G`` per backend, slopes, ratio at 1e5."""
    out = {"sizes": list(sizes)}
    for backend in ("numpy", "torch"):
        bounded, unbounded = [], []
        for n in sizes:
            trace = _trace(n, backend)
            g_w, g_inf = Always(X_POS, 0, n - 1), Always(X_POS)
            bounded.append(best_seconds(lambda: g_w.robustness(trace), repeats=7))
            unbounded.append(best_seconds(lambda: g_inf.robustness(trace), repeats=7))
        i = list(sizes).index(100_000)
        out[backend] = {"bounded_s": bounded, "unbounded_s": unbounded,
                        "slope": loglog_slope(sizes, bounded),
                        "ratio_at_1e5": bounded[i] / unbounded[i]}
    return out


def test_bounded_window_is_linear():
    m = measure_windows((10_000, 100_000, 1_000_000))
    for backend in ("numpy", "torch"):
        assert m[backend]["slope"] <= 1.15, m
        assert m[backend]["ratio_at_1e5"] <= 10.0, m


def test_issue_formula_1e5(benchmark):
    trace = _trace(100_000, "numpy")
    phi = And(Always(X_POS, 0, 99_999), Eventually(Y_GT1, 0, 99_999))
    benchmark.pedantic(phi.robustness, args=(trace,), rounds=5)


def _hcd_decode(n_tokens: int = 7, n_zones: int = 4):
    rng = np.random.default_rng(0)
    return _decode_time("hcd", _zone_spec(rng, n_zones), DisplacementDynamics(_offsets(rng, n_tokens)),
                        BATCH, n_tokens, 1, rng)


def test_hcd_decode_step(benchmark):
    benchmark.pedantic(_hcd_decode, rounds=5)


def test_rcd_decode_step_112_tokens(benchmark):
    rng = np.random.default_rng(0)
    benchmark.pedantic(_decode_time, args=("rcd", _zone_spec(rng, 4), DisplacementDynamics(_offsets(rng, 112)),
                                           BATCH, 112, 1, rng), rounds=5)


if __name__ == "__main__":
    torch.set_num_threads(1)
    w = measure_windows()
    for backend in ("numpy", "torch"):
        r = w[backend]
        print(f"STL {backend}: bounded G[0,N-1] ms vs N {w['sizes']}:",
              np.round(1e3 * np.asarray(r["bounded_s"]), 3).tolist(),
              f"slope {r['slope']:.3f} (bar <= 1.15); unbounded G ms:",
              np.round(1e3 * np.asarray(r["unbounded_s"]), 3).tolist(),
              f"bounded/unbounded at N=1e5 {r['ratio_at_1e5']:.2f} (bar <= 10)")
    for backend in ("numpy", "torch"):
        trace = _trace(100_000, backend)
        phi = And(Always(X_POS, 0, 99_999), Eventually(Y_GT1, 0, 99_999))
        print(f"G[0,99999](x>0) & F[0,99999](y>1), N=1e5, {backend}: "
              f"{1e3 * best_seconds(lambda: phi.robustness(trace), repeats=3):.2f} ms")
    cfg = ScalingConfig()
    m = run_scaling(cfg, seed=0)
    for mode in ("hcd", "rcd"):
        print(f"{mode}: ms per decode step (batch {BATCH}) vs |A| {cfg.n_tokens}:",
              np.round(1e3 * np.asarray(m["tokens"][mode]), 3).tolist(),
              f"slope {loglog_slope(cfg.n_tokens, m['tokens'][mode]):.3f}")
        print(f"{mode}: vs #zones {cfg.n_zones}:", np.round(1e3 * np.asarray(m["zones"][mode]), 3).tolist(),
              f"slope {loglog_slope(cfg.n_zones, m['zones'][mode]):.3f}")
    step = np.asarray(m["per_step_ms"])
    fwd = np.asarray(m["forward_ms"])
    print(f"decode overhead t=90 / t=10 (min of {cfg.repeats} repeats): {m['t90_ms'] / m['t10_ms']:.3f} "
          f"({m['t90_ms']:.3f} vs {m['t10_ms']:.3f} ms)")
    print(f"HCD overhead / policy forward (|A|=7): {np.median(step) / np.median(fwd):.3f} "
          f"({np.median(step):.3f} ms vs {np.median(fwd):.3f} ms)")
