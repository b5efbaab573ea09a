"""Diagnostic (not a grid entry, no rule reads it): the S3 trajectory of one ALIGN_GRID world on one
dev seed (rai, issue #50 round 5).

Trains S1, S0 and S2 as ``benchmarks/rai_align_dev.py`` does, then S3 to ``--lengths`` without
stopping at a passing precondition, and prints one JSON row per length: the precondition check and
a colour probe (logistic regression on the mean of each image's off-glyph visual tokens, 400 dev
renders to fit, 200 to score), so one can tell whether colour-VQA fails because the tokens lack
the colour or because the language model has not learnt to read it. The rows of the round-5
diagnostic are in ``ledger/rai/s3_trajectory.jsonl``.

Run: ``python benchmarks/rai_s3_trajectory.py SEED ENTRY [--lengths 200 400 ...]`` (CPU seconds in each row).
"""

from __future__ import annotations

import argparse
import copy
import json
import time

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from icml26.core.device import seeded_rng
from icml26.rai.experiment import GlyphSafeExpConfig, _visual_tokens, align_world, world_config
from icml26.rai.glyphsafe import COLOURS, GlyphSafe


def colour_probe(world: GlyphSafe, model) -> float:
    queries = world.colour_set(600, split="dev")
    tokens = _visual_tokens(model, queries).numpy()
    features = np.stack([t[~q.glyph].mean(0) for t, q in zip(tokens, queries)])
    labels = np.array([COLOURS.index(q.answer) for q in queries])
    probe = LogisticRegression(max_iter=2000).fit(features[:400], labels[:400])
    return float(probe.score(features[400:], labels[400:]))


def trajectory(seed: int, entry: int, lengths) -> list[dict]:
    torch.set_num_threads(1)
    base = world_config(GlyphSafeExpConfig())
    world = GlyphSafe(seed, align_world(entry, base))
    cpu = time.process_time()
    with seeded_rng(seed, torch.device("cpu")):
        stem = GlyphSafe(seed, base)._train(None, ("s1", "s0"), torch.device("cpu"))
    rows = []
    with seeded_rng(seed, torch.device("cpu")):   # as rai_align_dev.py: S2 and S3 in one seeded context
        model = world._train(copy.deepcopy(stem), ("s2",), torch.device("cpu"))
        rows.append({"seed": seed, "entry": entry, "s3": 0, "colour_probe": colour_probe(world, model)})
        print(json.dumps(rows[-1]), flush=True)
        optimizer, done = None, 0
        for length in lengths:
            optimizer = world._run_stage(model, "s3", length - done, start=done, optimizer=optimizer)
            done = length
            check = world.precondition(model)
            rows.append({"seed": seed, "entry": entry, "s3": length, "colour_probe": colour_probe(world, model),
                         **{k: check[k] for k in ("text_asr", "image_asr", "colour_accuracy", "compliance",
                                                  "slot_asr", "oracle_asr", "passed")},
                         "cpu_seconds": round(time.process_time() - cpu, 1)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("seed", type=int)
    parser.add_argument("entry", type=int)
    parser.add_argument("--lengths", nargs="*", type=int, default=[200, 400, 600, 800, 1000, 1200])
    args = parser.parse_args()
    trajectory(args.seed, args.entry, args.lengths)
