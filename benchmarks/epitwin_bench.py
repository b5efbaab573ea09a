"""EpiTwin cost: the generator's forward time grows as O(L N^2 d) in the number of contacts N
(spatial attention; expected log-log slope <= 2.15 for N in 32..256) and between linearly and
quadratically in the window length T at a fixed patch size (temporal attention O(N L^2 d)).
Also the ratio of EpiTwin's to the LaBraM-style baseline's forward time at N ~ 100.

Run ``python benchmarks/epitwin_bench.py`` for the slopes, or
``pytest benchmarks/epitwin_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import pytest
import torch

from icml26.core.stats import best_seconds, loglog_slope
from icml26.epitwin import LaBraMStyleTransformer
from icml26.epitwin.experiment import forward_seconds

SIZES = (32, 64, 128, 256)
LENGTHS = (256, 512, 1024, 2048)


def measure(sizes=SIZES, lengths=LENGTHS) -> dict:
    """Forward seconds against N (T = 512) and T (N = 64), their log-log slopes, and the
    EpiTwin / LaBraM-style forward-time ratio at N = 104."""
    torch.set_num_threads(1)
    by_n = [forward_seconds(n, 512) for n in sizes]
    by_t = [forward_seconds(64, t) for t in lengths]
    labram = LaBraMStyleTransformer(32, 3, 4, patch=128).eval()
    x = torch.randn(1, 104, 512)
    mask = torch.zeros(1, 104, dtype=torch.bool)
    mask[0, :8] = True
    with torch.no_grad():
        t_labram = best_seconds(lambda: labram(x, mask))
    return {"sizes": list(sizes), "seconds_n": by_n, "slope_n": loglog_slope(sizes, by_n),
            "lengths": list(lengths), "seconds_t": by_t, "slope_t": loglog_slope(lengths, by_t),
            "ratio_epitwin_labram_n104": forward_seconds(104, 512) / t_labram}


@pytest.mark.parametrize("n", [64, 256])
def test_bench_forward(benchmark, n):
    benchmark(forward_seconds, n, 512, repeats=1)


def test_bench_forward_slope_in_n():
    result = measure(sizes=SIZES, lengths=(256, 512))
    assert result["slope_n"] <= 2.15


if __name__ == "__main__":
    result = measure()
    print("N      " + "".join(f"{n:>10d}" for n in result["sizes"]) + f"   slope {result['slope_n']:.3f}")
    print("sec    " + "".join(f"{s:10.2e}" for s in result["seconds_n"]))
    print("T      " + "".join(f"{n:>10d}" for n in result["lengths"]) + f"   slope {result['slope_t']:.3f}")
    print("sec    " + "".join(f"{s:10.2e}" for s in result["seconds_t"]))
    print(f"EpiTwin / LaBraM-style forward time at N = 104: {result['ratio_epitwin_labram_n104']:.2f}")
