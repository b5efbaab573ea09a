"""Seed-to-seed spread of E2's graded-NDCG gain (TOP head − NTP logits), issue #40.

Seeds 0-2 are read from the recorded default run (``src/icml26/top/verdicts-jobs.json.gz``, part
E2); the extra seeds given on the command line are trained here with E2's own full config
(``TEXT_FULL``, NTP and NTP+TOP only) and the same ``run_text``. Prints the per-seed gains, mean ±
sd and the 95 % t-interval, and where the bar (0.05, unchanged) lies. The opt-in part
``E2-seeds`` computes the same from scratch on seeds 0-4 (``icml26 run top --exp E2-seeds``).

Run ``python benchmarks/top_ndcg_spread.py 3 4``; results are cached in
``reports/top-ndcg-spread/`` (one JSON per job).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import sys
from pathlib import Path

import pandas as pd
import torch

from icml26.core.cache import cached_json
from icml26.top.experiment import (TEXT_FULL, ndcg_gain_by_seed, ndcg_spread_note, run_text)

JOBS = Path(__file__).resolve().parents[1] / "src" / "icml26" / "top" / "verdicts-jobs.json.gz"


def main(extra_seeds: list[int]) -> None:
    torch.set_num_threads(1)
    config = dataclasses.replace(TEXT_FULL, objectives=("ntp", "top"))
    rows = []
    recorded = json.loads(gzip.decompress(JOBS.read_bytes()))["E2"]
    for job in recorded:
        if job["metrics"]["objective"] in ("ntp", "top"):
            rows.append({**job["metrics"], "seed": job["seed"], "source": "recorded E2",
                         "cpu_seconds": job["cpu_seconds"]})
    for seed in extra_seeds:
        for objective in ("ntp", "top"):
            key = {"config": dataclasses.asdict(config), "seed": seed, "objective": objective,
                   "code": "run_text v1"}
            metrics = cached_json("reports/top-ndcg-spread", f"E2_{objective}_seed{seed}", key,
                                  lambda s=seed, o=objective: run_text(config, s, {"objective": o}))
            rows.append({**metrics, "seed": seed, "source": "this script"})
    frame = pd.DataFrame(rows)
    gains = ndcg_gain_by_seed(frame, "graded")
    print(gains.to_string(index=False))
    print(ndcg_spread_note(gains, config))
    print("CPU seconds of the extra jobs:",
          round(float(frame[frame.source == "this script"].cpu_seconds.sum()), 1))


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]])
