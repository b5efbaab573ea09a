"""VEENA head scoring cost: linear in the number of heads L·H (spec scaling check: log-log slope <= 1.15
over L·H in {32, 64, 128, 256}, projection proxy = one forward pass per head).

The model is a 2-layer tiny Llama 256 wide whose head count grows at fixed width (head_dim
shrinks), so one forward pass costs about the same at every size and the slope measures the
number of patching passes.

Run ``python benchmarks/emotion_circuits_bench.py`` for the slope, or
``pytest benchmarks/emotion_circuits_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import pytest

from icml26.core.stats import loglog_slope
from icml26.emotion_circuits.experiment import ScalingConfig, head_scoring_seconds

CONFIG = ScalingConfig()


def measure(config: ScalingConfig = CONFIG) -> dict:
    """Best-of seconds of head scoring at each L·H and the log-log slope."""
    sizes = [config.n_layers * h for h in config.heads]
    seconds = [head_scoring_seconds(config.n_layers, h, config.hidden, config.n_pairs, config.repeats)
               for h in config.heads]
    return {"components": sizes, "seconds": seconds, "slope": loglog_slope(sizes, seconds)}


@pytest.mark.parametrize("heads", [16, 64])
def test_bench_head_scoring(benchmark, heads):
    benchmark.pedantic(head_scoring_seconds, args=(CONFIG.n_layers, heads, CONFIG.hidden, CONFIG.n_pairs, 1),
                       rounds=1, iterations=1)


def test_bench_head_scoring_slope():
    result = measure(ScalingConfig(heads=(16, 32, 64), repeats=2))
    assert result["slope"] <= 1.15, result


if __name__ == "__main__":
    import json

    print(json.dumps(measure(), indent=2))
