"""SGShift speed: the basic path on n_T = 1000, p = 64 (bar: < 5 s) and its scaling.

Run ``python benchmarks/sgshift_bench.py`` for the numbers (median of repeats, log-log
slopes in n_T and p), or ``pytest benchmarks/sgshift_bench.py`` with pytest-benchmark.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression

from icml26.core.stats import loglog_slope
from icml26.sgshift import SGShift, SGShiftK, make_concept_shift, source_offset
from icml26.sgshift.offset_glm import lambda_grid, lambda_max, offset_glm_path

N_LAMBDAS = 25


def _problem(n_target=1000, p=64, seed=0):
    data = make_concept_shift(n_source=4000, n_target=n_target, n_val=10, p=p,
                              n_informative=min(10, p), n_shifted=min(6, p), seed=seed)
    model = LogisticRegression(max_iter=500).fit(data.X_source, data.y_source)
    X = (data.X_target - data.X_source.mean(0)) / data.X_source.std(0)
    offset = source_offset(model, data.X_target, "classification")
    return data, model, X, data.y_target.astype(float), offset


def basic_path(X, y, offset):
    grid = lambda_grid(lambda_max(X, y, offset), N_LAMBDAS, 1e-3)
    return offset_glm_path(X, y, offset, grid, warn=False)


def _median_time(fn, repeats=3):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def test_basic_path_n1000_p64(benchmark):
    _, _, X, y, offset = _problem()
    fit = benchmark(basic_path, X, y, offset)
    assert fit.coefs.shape == (N_LAMBDAS, 64)


def test_sgshift_fit_with_cv_n1000_p64(benchmark):
    data, model, *_ = _problem()
    est = benchmark(lambda: SGShift().fit(data.X_target, data.y_target, source_model=model))
    assert est.entry_score_.shape == (64,)


def main():
    warnings.simplefilter("ignore")
    data, model, X, y, offset = _problem()
    path_s = _median_time(lambda: basic_path(X, y, offset))
    fit_s = _median_time(lambda: SGShift().fit(data.X_target, data.y_target,
                                               source_model=model))
    knock_s = _median_time(lambda: SGShiftK(lam=0.02, n_bootstraps=20, random_state=0).fit(
        data.X_target, data.y_target, source_model=model, X_source=data.X_source,
        y_source=data.y_source), repeats=1)
    print(f"basic path (25 lambdas), n_T=1000, p=64: {path_s:.3f} s  (bar < 5 s)")
    print(f"SGShift fit incl. 5-fold BIC-CV, n_T=1000, p=64: {fit_s:.3f} s")
    print(f"SGShift-K, B=20, n_S=4000, n_T=1000, p=64: {knock_s:.3f} s")
    _report_scaling("n_T", [250, 500, 1000, 2000, 4000], lambda n: _problem(n_target=n))
    _report_scaling("p", [16, 32, 64, 128], lambda p: _problem(p=p))


def _report_scaling(label, values, make):
    times = []
    for value in values:
        _, _, X, y, offset = make(value)
        times.append(_median_time(lambda: basic_path(X, y, offset)))
    print(f"{label}:", values, "path seconds:", [round(t, 3) for t in times],
          f"log-log slope {loglog_slope(values, times):.2f}")

if __name__ == "__main__":
    main()
