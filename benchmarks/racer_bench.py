"""RACER speed: calibration is O(n log n) (spec §6 scaling: log-log slope <= 1.15 over n_cal
1e3..1e6), prediction O(K) per query, aggregation O(|R|) per query.

Run ``python benchmarks/racer_bench.py`` for the slopes, or
``pytest benchmarks/racer_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import numpy as np
import pytest

from icml26.core.stats import loglog_slope
from icml26.racer import RACERCalibrator, crc_threshold, pac_threshold, weighted_vote
from icml26.core.stats import best_seconds

SIZES = (1_000, 10_000, 100_000, 1_000_000)
N_MODELS = 7
ALPHA = 0.1


def _data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    scores = rng.random((n, N_MODELS))
    correct = (rng.random((n, N_MODELS)) < scores).astype(int)
    return rng.random(n), scores, correct


def measure(sizes=SIZES) -> dict:
    """Seconds per call of each operation at each n, and their log-log slopes."""
    timings = {"crc_threshold": [], "hb_threshold": [], "fit_crc": [], "predict_sets": [],
               "weighted_vote": []}
    for n in sizes:
        levels, scores, correct = _data(n)
        cal = RACERCalibrator(alpha=ALPHA, random_state=0).fit(scores, correct)
        codes = (correct * 3).astype(int)
        routed = cal.predict_sets(scores)[:, 1:]
        timings["crc_threshold"].append(best_seconds(lambda: crc_threshold(levels, ALPHA)))
        timings["hb_threshold"].append(best_seconds(lambda: pac_threshold(levels, ALPHA, 0.1, "hb")))
        timings["fit_crc"].append(best_seconds(lambda: cal.fit(scores, correct)))
        timings["predict_sets"].append(best_seconds(lambda: cal.predict_sets(scores)))
        timings["weighted_vote"].append(best_seconds(lambda: weighted_vote(codes, routed, scores, 0.1)))
    slopes = {name: loglog_slope(sizes, t) for name, t in timings.items()}
    return {"sizes": list(sizes), "seconds": timings, "slopes": slopes}


@pytest.mark.parametrize("n", [10_000, 1_000_000])
def test_bench_crc_threshold(benchmark, n):
    levels, _, _ = _data(n)
    benchmark(crc_threshold, levels, ALPHA)


@pytest.mark.parametrize("n", [10_000, 100_000])
def test_bench_fit(benchmark, n):
    _, scores, correct = _data(n)
    cal = RACERCalibrator(alpha=ALPHA, random_state=0)
    benchmark(cal.fit, scores, correct)


def test_bench_crc_calibration_slope():
    result = measure(sizes=SIZES)
    assert result["slopes"]["crc_threshold"] <= 1.15


if __name__ == "__main__":
    result = measure()
    print(f"{'operation':16s}" + "".join(f"{n:>12,d}" for n in result["sizes"]) + "   slope")
    for name, seconds in result["seconds"].items():
        row = "".join(f"{s:12.2e}" for s in seconds)
        print(f"{name:16s}{row}   {result['slopes'][name]:.3f}")
