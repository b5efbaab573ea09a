"""Baselines of the VEENA paper that no well-kept library provides for this hook surface (written here).

* :func:`attention_head_scores` — information-flow style attribution: rank heads by the
  attention mass from the query token to visual tokens;
* :func:`pai_edits` — PAI-style ("Paying More Attention to Image", Liu et al., ECCV 2024)
  amplification of image attention in *all* heads and layers;
* :func:`steering_edit` — plain steering-vector addition (ActAdd/CAA style) of the pooled ``S_l``;
* :func:`random_circuit` — random heads/neurons of the same counts (causal-fidelity control).

Zhang, Sun, Xie, Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from .hooks import AttentionBoost, Capture, HFAdapter, ResidualAdd

__all__ = ["attention_head_scores", "pai_edits", "steering_edit", "random_circuit"]


def attention_head_scores(model, pairs) -> pd.DataFrame:
    """Mean attention mass from the query token ``N`` of ``X^+`` to the visual keys, per head."""
    adapter = HFAdapter.wrap(model)
    pairs = pairs.to(adapter.device)
    cap = Capture(attention=True)
    adapter.forward(pairs.emotional, capture=cap)
    vis = pairs.visual_mask
    rows = []
    for layer in range(adapter.n_layers):
        weights = cap.store["attention"][layer][:, :, pairs.query_pos]          # (B, H, T)
        mass = weights[..., vis].sum(-1).mean(0)
        rows += [{"layer": layer, "head": h, "attention_mass": float(mass[h])} for h in range(adapter.n_heads)]
    return pd.DataFrame(rows)


def pai_edits(model, beta: float, query_pos: int, visual_mask) -> list:
    """PAI-style edit: ``+ ln β`` on visual-key logits in every head, at prefill and decoding."""
    adapter = HFAdapter.wrap(model)
    every = [(l, h) for l in range(adapter.n_layers) for h in range(adapter.n_heads)]
    return [AttentionBoost(every, every, beta, query_pos, torch.as_tensor(visual_mask).bool())]


def steering_edit(localizer, layer: int, query_pos: int) -> ResidualAdd:
    """Plain steering: add ``α_l S_l`` (pooled, emotion-agnostic) at ``t ≥ N`` of layer ``layer``."""
    return localizer.injection(layer, None, query_pos, pooled=True)


def random_circuit(model, circuit: dict, seed: int) -> dict:
    """Random heads (as many as ``circuit``'s mid and deep heads, drawn from all non-selected heads)
    and random neurons (as many, drawn from all non-selected neurons), seeded."""
    adapter = HFAdapter.wrap(model)
    rng = np.random.default_rng([seed, 99])
    chosen = set(circuit["mid_heads"]) | set(circuit["deep_heads"])
    heads = [(l, h) for l in range(adapter.n_layers) for h in range(adapter.n_heads) if (l, h) not in chosen]
    pick = rng.permutation(len(heads))
    n_mid, n_deep = len(circuit["mid_heads"]), len(circuit["deep_heads"])
    mid = [heads[i] for i in pick[:n_mid]]
    deep = [heads[i] for i in pick[n_mid:n_mid + n_deep]]
    taken = set(circuit["neurons"])
    neurons = [(l, n) for l in range(adapter.n_layers) for n in range(adapter.n_neurons) if (l, n) not in taken]
    pick = rng.permutation(len(neurons))[:len(circuit["neurons"])]
    return {"mid_heads": mid, "deep_heads": deep, "neurons": [neurons[i] for i in pick],
            "l_emo": circuit.get("l_emo")}
