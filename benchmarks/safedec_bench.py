"""SafeDec decode overhead: scaling in |A|, in the number of zones, and along an episode.

The same measurements as experiment E5 (``icml26 run safedec --exp scaling``), printed as
log-log slopes and ratios. Run: ``python benchmarks/safedec_bench.py``.
"""

from __future__ import annotations

import numpy as np
import torch

from icml26.core.stats import loglog_slope
from icml26.safedec.experiment import (DisplacementDynamics, ScalingConfig, _decode_time, _offsets,
                                       _zone_spec, run_scaling)

BATCH = 256


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
