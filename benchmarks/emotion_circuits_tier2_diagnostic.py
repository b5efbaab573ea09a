"""Issue #40 diagnostic of the tier-2 held-out HIT failure (seed 0 only; diagnostic, nothing is picked).

1. HIT / 𝓗 of descriptions drawn from the tier-2 data sampler itself (no model): what a model that
   learned its training descriptions perfectly scores without any intervention;
2. the trained model's vanilla description statistics against that sampler;
3. query→visual attention mass of the located heads and the logit change VEE can make;
4. test HIT with VEE alone (β ∈ {1.25, 3, 10}, γ = 1) and ENA alone (γ ∈ {1.5, 3}, β = 1).

Trains seed 0 (≈ 100 CPU-s) unless its weights are in the icml26 cache.
Run: ``python benchmarks/emotion_circuits_tier2_diagnostic.py``.
"""

import time

import numpy as np
import torch

from icml26.emotion_circuits.baselines import attention_head_scores
from icml26.emotion_circuits.circuits import CircuitLocalizer, SteeringVectors, behaviour, describe, select_circuit
from icml26.emotion_circuits.interventions import VEENA
from icml26.emotion_circuits.metrics import hit_rate, sample_hit
from icml26.emotion_circuits.tier2 import Tier2Config, _descriptions, tier2_adapter, tier2_pairs, train_tier2
from icml26.emotion_circuits.toy import N_GENERATED, VOCABULARY, WHEEL

torch.set_num_threads(1)
SEED = 0
cats_of = WHEEL.category_ids(VOCABULARY).numpy()
for s in (0, 1, 2):
    rng = np.random.default_rng([s, 99])
    labels, objects = rng.integers(0, 4, 200_000), rng.integers(0, 8, 200_000)
    cats = torch.tensor(cats_of[_descriptions(labels, objects, True, rng, Tier2Config())])
    lab = torch.tensor(labels)
    print(f"data sampler (draw seed {s}): HIT {float(sample_hit(cats, lab, 4).mean()):.4f}, "
          f"H {float(hit_rate(cats, lab, 4).mean()):.4f}")

t0 = time.process_time()
model, world = train_tier2(SEED, Tier2Config(), use_cache=True)
print(f"model: {time.process_time() - t0:.1f} CPU-s (training or cache), final loss {model.final_loss_:.3f}")
ad = tier2_adapter(model)
test = tier2_pairs(model, world, 200, 3000 + SEED)
analysis = tier2_pairs(model, world, 200, 1000 + SEED)
out = describe(ad, test.emotional, test.labels, WHEEL, N_GENERATED, SEED)
cats = WHEEL.category_ids(VOCABULARY)[out["ids"]]
lab = test.labels[:, None]
emo = cats >= 0
print(f"vanilla test: HIT {float(out['HIT'].mean()):.3f}, H {float(out['H'].mean()):.3f}, emotion words per "
      f"description {int(emo.sum()) / len(test):.2f} (data 4.20), share on label "
      f"{int(((cats == lab) & emo).sum()) / int(emo.sum()):.3f} (data 0.70 for uniform labels), joy share on "
      f"non-joy images {int(((cats == 0) & emo & (lab != 0)).sum()) / int((emo & (lab != 0)).sum()):.3f} (data 0.25)")

sv = SteeringVectors(tau=0.1, n_tokens=N_GENERATED, seed=SEED).fit(ad, analysis, WHEEL)
loc = CircuitLocalizer(sv, seed=SEED)
circuit = select_circuit(loc.score_heads(ad, analysis, WHEEL), loc.score_neurons(ad, analysis, top_k=16), 4, 2, 16)
print("circuit:", circuit["mid_heads"], circuit["deep_heads"], circuit["neurons"][:4], "...")
att = attention_head_scores(ad, test).set_index(["layer", "head"])["attention_mass"]
print("query->visual attention mass of the mid heads:",
      {h: round(float(att[h]), 4) for h in circuit["mid_heads"]}, f"(median of all heads {float(att.median()):.4f})")
vm, n = test.visual_mask, test.query_pos
base_logits = ad.forward(test.emotional)
for beta in (3.0, 10.0):
    edits = VEENA(circuit["mid_heads"], circuit["deep_heads"], [], beta, 1.0).edits(ad, vm, n)
    delta = (ad.forward(test.emotional, edits)[:, n] - base_logits[:, n]).abs().max()
    print(f"VEE beta {beta}: max |change of a query-token logit| {float(delta):.3g}")
base = behaviour(ad, test, WHEEL, N_GENERATED, SEED)
for beta, gamma in [(1.25, 1.0), (3.0, 1.0), (10.0, 1.0), (1.0, 1.5), (1.0, 3.0), (1.25, 1.5)]:
    v = VEENA(circuit["mid_heads"], circuit["deep_heads"], circuit["neurons"], beta, gamma)
    b = behaviour(ad, test, WHEEL, N_GENERATED, SEED, edits=v.edits(ad, vm, n))
    print(f"beta {beta}, gamma {gamma}: test HIT {b['HIT']:.3f} ({100 * (b['HIT'] - base['HIT']):+.1f} points), "
          f"H {b['H']:.3f} ({100 * (b['H'] - base['H']):+.1f})")
