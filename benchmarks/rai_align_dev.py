"""Dev selection of the S2 alignment weight of GlyphSafe (rai), on the dev seeds only.

For each dev seed: S1 and S0 once, then for every setting of ``ALIGN_GRID`` (overrides of
the fixed ``ALIGN_BASE``, :func:`~icml26.rai.experiment.align_world`) a copy trained with S2 (captioning) and S3 (with the hybrid replay) on the pre-registered length
grid (the glyph-to-word alignment term weighted and placed as the setting says); reported per (weight, seed): the premise check, the oracle control,
the selection control (the 12 attack words as prototypes: risk AUROC on dev renders), the
default prototypes' AUROC, and the share of attack images with a glyph token whose nearest word
embedding is its own word. ``select_align_weight`` (fixed in code before the test seeds ran)
picks the setting.

Run: ``python benchmarks/rai_align_dev.py [seed ...] [--only i ...] [--rows earlier.jsonl]`` (CPU seconds printed).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import time

import numpy as np
import torch

from icml26.core.device import seeded_rng
from icml26.rai.experiment import (ALIGN_BASE, ALIGN_DEV_SEEDS, ALIGN_GRID, GlyphSafeExpConfig, _risk_auroc,
                                   _visual_tokens, align_world, select_alignment, world_config)
from icml26.rai.glyphsafe import UNSAFE_WORDS, VOCAB, GlyphSafe
from icml26.rai.injection import DEFAULT_KEYWORDS, RiskAwarenessInjection, UnsafePrototypeSubspace


def own_word_share(model, queries) -> float:
    """Share of images with a glyph token whose nearest input embedding (cosine) is its own word."""
    tokens = _visual_tokens(model, queries)
    emb = torch.nn.functional.normalize(model.get_input_embeddings().weight.detach().float(), dim=-1)
    nearest = (torch.nn.functional.normalize(tokens, dim=-1) @ emb.T).argmax(-1)  # (n, N_v)
    hits = [bool((nearest[i][torch.from_numpy(q.glyph)] == VOCAB[q.word]).any()) for i, q in enumerate(queries)]
    return float(np.mean(hits))


def dev_rows(seed: int, grid, n_dev: int = 200) -> list[dict]:
    base = world_config(GlyphSafeExpConfig())
    torch.set_num_threads(1)
    world = GlyphSafe(seed, base)
    with seeded_rng(seed, torch.device("cpu")):
        stem = world._train(None, ("s1", "s0"), torch.device("cpu"))
    rows = []
    for index in grid:
        cpu = time.process_time()
        w = GlyphSafe(seed, align_world(index, base))
        with seeded_rng(seed, torch.device("cpu")):
            model = w._train(copy.deepcopy(stem), ("s2", "s3"), torch.device("cpu"))
        final = w.precondition_[-1]
        attack, benign = w.attack_set(n_dev, split="dev"), w.benign_set(n_dev, split="dev")
        inlex = UnsafePrototypeSubspace.from_model(model, w.tokenizer, UNSAFE_WORDS)
        default = UnsafePrototypeSubspace.from_model(model, w.tokenizer, DEFAULT_KEYWORDS)
        row = {"seed": seed, "setting": index, **{k: list(v) if isinstance(v, tuple) else v
                                                   for k, v in ALIGN_GRID[index].items()}, "s3_steps": w.s3_steps_,
               **{k: final[k] for k in ("text_asr", "image_asr", "colour_accuracy", "compliance", "slot_asr",
                                        "oracle_asr", "oracle_ratio", "premise_passed", "oracle_passed")},
               "world": {k: list(v) if isinstance(v, tuple) else v
                         for k, v in dataclasses.asdict(w.config).items() if k in ALIGN_BASE},
               "selection_auroc": _risk_auroc(model, RiskAwarenessInjection(inlex, 0.01), attack, benign)["auroc"],
               "default_auroc": _risk_auroc(model, RiskAwarenessInjection(default, 0.01), attack, benign)["auroc"],
               "own_word_share": own_word_share(model, attack[:100]),
               "cpu_seconds": time.process_time() - cpu}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("seeds", nargs="*", type=int, default=list(ALIGN_DEV_SEEDS))
    parser.add_argument("--only", nargs="*", type=int, default=None,
                        help="indices into ALIGN_GRID to run (default all); the rule sees the rows given")
    parser.add_argument("--rows", default=None, help="a file of earlier JSON rows (one a line) to add")
    args = parser.parse_args()
    start = time.process_time()
    grid = list(args.only) if args.only is not None else list(range(len(ALIGN_GRID)))
    rows = [r for s in args.seeds for r in dev_rows(s, grid)]
    if args.rows:
        with open(args.rows) as f:
            rows += [json.loads(line) for line in f if line.startswith("{")]
    print("chosen alignment setting:", select_alignment(rows))
    print(f"CPU seconds: {time.process_time() - start:.0f}")
