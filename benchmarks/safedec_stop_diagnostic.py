"""Why the behaviour-cloned LatticeNav policy STOPs early: a diagnosis on a dev seed.

For each training recipe (``experiment.DEV_RECIPES``) the policy of dev seed 100 is rolled out
unconstrained on the *free* family of the dev split (τ = 1 sampling and greedy). Printed per
recipe: success, the share of episodes that STOP away from the goal (and how far away), the
share that never STOP, and the mean P(STOP) at steps away from the goal against the
label-smoothing floor ``ε/|A|``. Also the demonstrations' STOP labels: one per demonstration,
always on the goal cell. Never touches a test seed. Run:
``python benchmarks/safedec_stop_diagnostic.py [recipe ...]`` (policies come from the cache
that ``icml26 run safedec --exp dev`` fills; a missing one is trained, about 40 CPU-s).
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

from icml26.safedec.data import CELL, N_TOKENS, STOP, T_MAX, LatticeNavEnv, load_or_make_demos
from icml26.safedec.decoding import sample_tokens
from icml26.safedec.experiment import CHOSEN_RECIPE, DEV_SEEDS, SimpleRecipe, _policy, recipe
from icml26.safedec.rollout import episodes_for, uniforms_for

EPISODES = 200


def demo_stop_labels(n_demos: int = 2000) -> dict:
    demos = load_or_make_demos(n_demos, 12345, 0.15)
    lengths = np.array([len(d.tokens) for d in demos])
    return {"mean_length": float(lengths.mean()), "stop_share": float(len(demos) / lengths.sum()),
            "stop_at_goal": bool(all(d.obs[-1, 4] == 0 for d in demos) and all(d.tokens[-1] == STOP for d in demos)),
            "dist_feature_one_cell": CELL / 8.0}


def diagnose(name: str, seed: int = DEV_SEEDS[0]) -> dict:
    rec = recipe(name)
    policy = _policy(SimpleRecipe(**rec), seed)
    episodes = episodes_for(seed, EPISODES, split="dev")
    uniforms = uniforms_for(seed, EPISODES, split="dev")
    out = {"recipe": name, "floor": rec["label_smoothing"] / N_TOKENS}
    for greedy in (False, True):
        env = LatticeNavEnv(episodes)
        obs, states = env.reset()
        cache, prev = policy.start(), torch.full((len(episodes),), policy.bos)
        stop_t, stop_d, p_far = np.full(len(episodes), -1), np.full(len(episodes), np.nan), []
        for t in range(T_MAX):
            live = ~env.done
            if not live.any():
                break
            with torch.no_grad():
                logits = policy.step(cache, torch.as_tensor(obs, dtype=torch.float32), prev)
            dist = np.hypot(*((states[:, :2] - env.goals) * CELL).T)
            p_far.append(np.where(live & (dist > 1.0), torch.softmax(logits, 1)[:, STOP].numpy(), np.nan))
            tokens = sample_tokens(logits, uniforms[:, t, 0], greedy=greedy)
            stopped = live & (tokens.numpy() == STOP)
            stop_t[stopped], stop_d[stopped] = t, dist[stopped]
            obs, states, _, _ = env.step(tokens.numpy())
            prev = tokens
        early = (stop_t >= 0) & ~env.success
        key = "greedy" if greedy else "sampled"
        out[key] = {"success": 100 * env.success.mean(), "early_stop": 100 * early.mean(),
                    "early_far_1m": 100 * np.mean(early & (stop_d > 1.0)),
                    "early_within_1m": 100 * np.mean(early & (stop_d <= 1.0)),
                    "no_stop": 100 * np.mean(stop_t < 0),
                    "p_stop_far": float(np.nanmean(np.concatenate(p_far)))}
    return out


if __name__ == "__main__":
    t0 = time.process_time()
    print("demonstrations:", demo_stop_labels())
    for name in sys.argv[1:] or ["spec", "ls0", "ls0_goal", CHOSEN_RECIPE]:
        r = diagnose(name)
        print(f"{name}: label-smoothing floor P(STOP) = {r['floor']:.4f}")
        for key in ("sampled", "greedy"):
            print("  " + key + ": " + ", ".join(f"{k} {v:.3g}" for k, v in r[key].items()))
    print(f"CPU-s {time.process_time() - t0:.1f}")
