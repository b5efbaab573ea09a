"""Diagnostic for #35 (not a claim, nothing here is recorded): where the old verdict (i) = −0.67 went.

Runs the *old recipe* (the spec's gate a = 10, b = 0.2 and a 128→64 projection before the push) with
today's deterministic jobs on a chosen test split and seeds, beside the backbone (and optionally the
shuffled-κ control), and prints the per-seed OA and the paired differences. ``CompareConfig.hyp_dim``
cannot be set from ``icml26 run --set``, hence this script.

    python benchmarks/pointchr_old_recipe.py --test-offset 1000 --seeds 0 1 2     # old split, old seeds
    python benchmarks/pointchr_old_recipe.py --test-offset 3000 --seeds 0 1 2     # fresh split, old seeds
    python benchmarks/pointchr_old_recipe.py --seeds 10 11 12 13 14 --shuffled    # the report seeds

Jobs are stored under the icml26 cache (``pointchr/diagnostic``); ~25 CPU-s each.
"""

from __future__ import annotations

import argparse

import numpy as np

from icml26.core.cache import cache_root
from icml26.pointchr import experiment as E


def run(seeds, test_offset: int = E.TEST_SEED_OFFSET, shuffled: bool = False) -> dict:
    """OA (%) per seed of the backbone and the old-recipe CHR (± shuffled κ) on one test split."""
    E.TEST_SEED_OFFSET = test_offset          # the split is a module constant (part of the job key)
    cache = str(cache_root("pointchr", "diagnostic"))
    variants = [("base", {}), ("chr", {"gate_rule": "spec", "hyp_dim": 64})]
    if shuffled:
        variants.append(("chr_shuffled", {"gate_rule": "spec", "hyp_dim": 64}))
    oa: dict = {v: [] for v, _ in variants}
    for seed in seeds:
        for variant, kw in variants:
            cfg = E.CompareConfig(cache_dir=cache, **kw)
            task = {"dataset": "finedetail8", "backbone": "pointnet", "variant": variant}
            metrics = E._cached(cfg, seed, task, lambda: E._train_and_test(cfg, seed, task))
            oa[variant].append(100 * metrics["oa"])
    return oa


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(E.REPORT_SEEDS))
    parser.add_argument("--test-offset", type=int, default=E.TEST_SEED_OFFSET)
    parser.add_argument("--shuffled", action="store_true")
    args = parser.parse_args()
    oa = run(args.seeds, args.test_offset, args.shuffled)
    for variant, values in oa.items():
        print(f"{variant:13s}" + "".join(f"{v:8.2f}" for v in values))
    for other in [v for v in oa if v != "chr"]:
        diff = np.asarray(oa["chr"]) - np.asarray(oa[other])
        test = E.sign_test(diff)
        print(f"CHR − {other}: mean {diff.mean():+.2f} (per seed {np.round(diff, 2).tolist()}; "
              f"{test['wins']} wins / {test['losses']} losses, p = {test['p']:.3f})")
