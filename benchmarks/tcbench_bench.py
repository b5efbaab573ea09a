"""Speed and scaling of the TC-Bench probes.

* probe fit time vs number of frames N at d = 64 (fixed alpha grid): log-log slope
  (the spec's bar: ≤ 1.15, ridge CV is O(N d²) for N ≫ d);
* the one-eigendecomposition-per-fold ridge path vs scikit-learn's ``RidgeCV`` grid search
  (same alpha, same CV score): speed ratio;
* SynthTC rendering throughput (frames per second).

Run: ``python benchmarks/tcbench_bench.py`` (single thread; timings are best of repeats).
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import GroupKFold
from threadpoolctl import threadpool_limits

from icml26.core.stats import loglog_slope
from icml26.tcbench import SynthTC
from icml26.tcbench.experiment import probe_fit_seconds
from icml26.tcbench.probes import DEFAULT_ALPHAS, ridge_path_cv

SIZES = (2000, 4000, 8000, 16000, 32000)


def _ridge_problem(n=8000, d=64, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d) + rng.standard_normal(n)
    splits = list(GroupKFold(5).split(X, y, np.arange(n) // 25))
    return X, y, splits


def _best(fn, repeats=3):
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def ridge_path_speedup(n=8000, d=64) -> tuple[float, float]:
    X, y, splits = _ridge_problem(n, d)
    ours = _best(lambda: ridge_path_cv(X, y, DEFAULT_ALPHAS, splits))
    sk = _best(lambda: RidgeCV(alphas=DEFAULT_ALPHAS, cv=splits,
                               scoring="neg_mean_squared_error").fit(X, y))
    return ours, sk


def test_probe_fit_8k(benchmark):
    benchmark.pedantic(probe_fit_seconds, args=(8000, 64, 1, 0), rounds=3)


def test_ridge_path_cv_8k(benchmark):
    X, y, splits = _ridge_problem()
    benchmark(ridge_path_cv, X, y, DEFAULT_ALPHAS, splits)


if __name__ == "__main__":
    with threadpool_limits(1):
        seconds = [probe_fit_seconds(n, 64, 3, 0) for n in SIZES]
        for n, s in zip(SIZES, seconds):
            print(f"probe fit N={n:>6}: {s * 1e3:8.1f} ms")
        print(f"log-log slope of fit time in N: {loglog_slope(SIZES, seconds):.3f} (bar ≤ 1.15)")
        ours, sk = ridge_path_speedup()
        print(f"ridge path CV {ours * 1e3:.1f} ms vs sklearn RidgeCV {sk * 1e3:.1f} ms "
              f"(speed-up {sk / ours:.1f}x, N=8000, d=64, 5 folds, 10 alphas)")
        start = time.perf_counter()
        frames = SynthTC(n_trajectories=100, seed=0).generate()
        rate = len(frames) / (time.perf_counter() - start)
        print(f"SynthTC rendering: {rate:.0f} frames/s (64×64)")
