"""fsba cost: the lazy saving of LFSBA over FSBA as a ratio vs d (the paper's √d claim).

For d = 20…160 on the synthetic saddle problem (seed 0) it measures, up to the first iteration
that passes the exact SOSP test:

- the cost-model ratio ``C_FSBA / C_LFSBA`` with ``C = n_H·d³ + n_it·d²`` and its log-log slope
  in d (bar [0.3, 0.9]; √d would be 0.5);
- the wall-clock ratio of the two runs (1 BLAS thread);
- the seconds of one snapshot iteration (Hessian blocks, two Cholesky factorizations, Schur
  complement, eigendecomposition) vs one lazy iteration (chord inner solves on the cached
  factors, cubic step on the cached eigendecomposition), best of repeats: the d³-vs-d² gap the
  lazy method exploits, with its slope in d.

Run ``python benchmarks/fsba_bench.py`` for the table, or
``pytest benchmarks/fsba_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from icml26.core.stats import best_seconds, loglog_slope
from icml26.fsba import FSBA, LFSBA, cubic_step, make_saddle_bilevel
from icml26.fsba.optimizers import _PenaltyEstimator

DIMS = (20, 40, 80, 160)
SETTINGS = dict(penalty=1e4, cubic_reg=10.0, eps=1e-5, max_iter=1000)


def _first_sosp(result):
    k = result.first_sosp_iteration()
    if k is None:
        raise RuntimeError("no SOSP reached; the benchmark needs both methods to converge")
    return k, result.history["cost"][k], result.history["seconds"][k]


def _iteration_seconds(d: int, repeats: int) -> tuple[float, float]:
    """Seconds of one snapshot iteration and of one lazy iteration at the saddle start."""
    problem, x0 = make_saddle_bilevel(d=d, seed=0)
    est = _PenaltyEstimator(problem, SETTINGS["penalty"], 1e-10, 30, max_chord=100)
    state = {"y": np.zeros(d), "z": np.zeros(d)}
    G, H, _, _ = est(x0, state, snapshot=True)
    eig = np.linalg.eigh(H)
    x1 = x0 + cubic_step(G, M=10.0, eig=eig)       # a point the chord solves must move to
    base = {k: v.copy() for k, v in state.items()}

    def snapshot():
        s = {k: v.copy() for k, v in base.items()}
        G, H, _, _ = est(x1, s, snapshot=True)
        cubic_step(G, M=10.0, eig=np.linalg.eigh(H))

    def lazy():
        s = {k: v.copy() for k, v in base.items()}
        G, _, _, _ = est(x1, s, snapshot=False)
        cubic_step(G, M=10.0 * np.sqrt(d), eig=eig)

    snap = best_seconds(snapshot, repeats)
    return snap, best_seconds(lazy, repeats)


def measure(dims=DIMS, repeats: int = 5) -> dict:
    rows = []
    with threadpool_limits(1):
        for d in dims:
            runs = {}
            for name, cls in (("FSBA", FSBA), ("LFSBA", LFSBA)):
                problem, x0 = make_saddle_bilevel(d=d, seed=0)
                runs[name] = _first_sosp(cls(**SETTINGS).minimize(problem, x0))
            snap, lazy = _iteration_seconds(d, repeats)
            rows.append({"d": d, "FSBA its": runs["FSBA"][0], "LFSBA its": runs["LFSBA"][0],
                         "cost_ratio": runs["FSBA"][1] / runs["LFSBA"][1],
                         "time_ratio": runs["FSBA"][2] / runs["LFSBA"][2],
                         "snapshot_s": snap, "lazy_s": lazy, "iteration_ratio": snap / lazy})
    d = [r["d"] for r in rows]
    return {"rows": rows,
            "slope_cost_ratio": loglog_slope(d, [r["cost_ratio"] for r in rows]),
            "slope_time_ratio": loglog_slope(d, [r["time_ratio"] for r in rows]),
            "slope_iteration_ratio": loglog_slope(d, [r["iteration_ratio"] for r in rows])}


def test_bench_lazy_cost_ratio_slope():
    result = measure(repeats=2)
    assert all(r["cost_ratio"] > 1 for r in result["rows"])
    assert 0.3 <= result["slope_cost_ratio"] <= 0.9


@pytest.mark.parametrize("d", [40, 160])
def test_bench_cubic_step_cached_eig(benchmark, d):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((d, d))
    eig = np.linalg.eigh(A + A.T)
    benchmark(cubic_step, rng.standard_normal(d), None, 10.0, eig=eig)


@pytest.mark.parametrize("d", [40, 160])
def test_bench_cubic_step_with_eigh(benchmark, d):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((d, d))
    benchmark(cubic_step, rng.standard_normal(d), A + A.T, 10.0)


if __name__ == "__main__":
    out = measure()
    print(f"{'d':>5} {'FSBA it':>8} {'LFSBA it':>9} {'C ratio':>8} {'T ratio':>8} "
          f"{'snapshot ms':>12} {'lazy ms':>8} {'iter ratio':>10}")
    for r in out["rows"]:
        print(f"{r['d']:5d} {r['FSBA its']:8d} {r['LFSBA its']:9d} {r['cost_ratio']:8.2f} "
              f"{r['time_ratio']:8.2f} {r['snapshot_s'] * 1e3:12.3f} {r['lazy_s'] * 1e3:8.3f} "
              f"{r['iteration_ratio']:10.2f}")
    print(f"slopes in log d: cost-model ratio {out['slope_cost_ratio']:.2f} (bar [0.3, 0.9]), "
          f"wall-clock ratio {out['slope_time_ratio']:.2f}, snapshot/lazy iteration "
          f"{out['slope_iteration_ratio']:.2f}")
