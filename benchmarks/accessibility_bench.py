"""accessibility speed: the per-layer metrics cost O(N d²) to accumulate plus O(d³) for the spectra,
so at fixed d (576, SmolLM2's width) the log-log slope of cost in the token count N over
1k..8k tokens must be <= 1.15 (the spec's scaling check). A pathway step on cached base logits
is O(B·V·r): its slope in the batch size B is measured too.

Run ``python benchmarks/accessibility_bench.py`` for the slopes, or
``pytest benchmarks/accessibility_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import pytest
import torch

from icml26.accessibility import DiagnosticPathway, LayerStats, capacity_metrics
from icml26.accessibility.experiment import ScalingConfig, metric_seconds
from icml26.accessibility.pathway import _post_norm_step
from icml26.core.stats import best_seconds, loglog_slope

SIZES = (1024, 2048, 4096, 8192)
BATCHES = (256, 512, 1024, 2048)


def pathway_step_seconds(batches=BATCHES, vocab: int = 49152, d: int = 576, rank: int = 8) -> dict:
    """Seconds of one hand-differentiated post-norm pathway step per batch size."""
    g = torch.Generator().manual_seed(0)
    W = torch.randn(vocab, d, generator=g) / d ** 0.5
    path = DiagnosticPathway(d, rank=rank)
    out = {}
    for b in batches:
        base = torch.randn(b, vocab, generator=g)
        x = torch.randn(b, d, generator=g)
        y = torch.randint(vocab, (b,), generator=g)
        out[b] = best_seconds(lambda: _post_norm_step(W, path, base.clone(), y, x), repeats=3)
    return out


def measure(sizes=SIZES) -> dict:
    torch.set_num_threads(1)
    metrics = metric_seconds(ScalingConfig(sizes=tuple(sizes)))
    steps = pathway_step_seconds()
    return {"metrics": metrics, "metrics_slope": loglog_slope(list(metrics), list(metrics.values())),
            "pathway_step": steps, "pathway_slope": loglog_slope(list(steps), list(steps.values()))}


@pytest.mark.parametrize("n", [1024, 8192])
def test_bench_layer_stats(benchmark, n):
    h = torch.randn(n, 576)
    benchmark(lambda: capacity_metrics(LayerStats(576).update(h).cov()))


def test_bench_metric_slope():
    result = measure()
    assert result["metrics_slope"] <= 1.15


if __name__ == "__main__":
    result = measure()
    print(f"{'tokens N':>10s} {'seconds':>10s}")
    for n, s in result["metrics"].items():
        print(f"{n:10d} {s:10.4f}")
    print(f"metric cost slope in N: {result['metrics_slope']:.3f} (bar <= 1.15)")
    print(f"{'batch B':>10s} {'seconds':>10s}")
    for b, s in result["pathway_step"].items():
        print(f"{b:10d} {s:10.4f}")
    print(f"pathway step slope in B: {result['pathway_slope']:.3f}")
