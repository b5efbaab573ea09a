"""Tier 2: a tiny Hugging Face ``LlamaForCausalLM`` trained to describe ToyLVLM images.

Resolution (not from the paper): the paper's LVLMs cannot be had offline, so this trains
``icml26.zoo.tiny_llama`` (vocabulary = the ToyLVLM words, hidden 64, 4 layers, 4 heads, MLP 128)
on descriptions of the planted-circuit images. Visual tokens are fed as ``inputs_embeds`` from a
fixed random patch projector. A description has 12 words; each is an emotion word with
probability ``p_emotion`` — of the label's category with probability 0.6, joy with 0.2 (the
hallucination prior), another category otherwise — else an object word (the dominant object
with probability 0.5) or a filler word. Neutral images are described with emotion words drawn
from the prior only (joy 0.4, the others 0.2 each), so the model must read the cue.

Zhang, Sun, Xie, Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from icml26.core.validation import check_int

from .toy import (EMOTIONS, FILLER_WORDS, N_GENERATED, N_VISUAL, OBJECT_WORDS, QUERY_POS, SPECIALS,
                  VOCABULARY, WHEEL_WORDS, Pairs, toy_images)

__all__ = ["Tier2Config", "train_tier2", "tier2_pairs", "tier2_adapter"]


@dataclass(frozen=True)
class Tier2Config:
    hidden: int = 64
    layers: int = 4
    heads: int = 4
    intermediate: int = 128
    steps: int = 2000
    batch: int = 32
    lr: float = 3e-3
    p_emotion: float = 0.35
    p_label: float = 0.6
    p_joy: float = 0.2


def _raw_vectors(seed: int) -> torch.Tensor:
    from .toy import SUB, D_MODEL

    rng = np.random.default_rng([seed, 31])
    raw, _ = np.linalg.qr(rng.standard_normal((8, len(EMOTIONS) + 1)))
    vecs = np.zeros((len(EMOTIONS) + 1, D_MODEL))
    vecs[:, SUB["raw"]] = raw.T
    return torch.tensor(vecs, dtype=torch.float32)


class _World:
    """Fixed per-seed pieces: cue vectors and the patch projector."""

    def __init__(self, seed: int, hidden: int):
        from .toy import D_MODEL

        self.raw = _raw_vectors(seed)
        gen = torch.Generator().manual_seed(seed * 7919 + 3)
        self.projector = torch.randn(D_MODEL, hidden, generator=gen) / D_MODEL ** 0.5 * 3.0


def _descriptions(labels, objects, emotional: bool, rng, cfg: Tier2Config) -> np.ndarray:
    n = len(labels)
    word_id = {w: i for i, w in enumerate(VOCABULARY)}
    emo_ids = np.array([[word_id[w] for w in WHEEL_WORDS[k]] for k in EMOTIONS])    # (K, 3)
    obj_ids = np.array([word_id[w] for w in OBJECT_WORDS])
    fill_ids = np.array([word_id[w] for w in FILLER_WORDS])
    out = np.empty((n, N_GENERATED), dtype=np.int64)
    k = len(EMOTIONS)
    for i in range(n):
        for t in range(N_GENERATED):
            u = rng.random()
            if u < cfg.p_emotion:
                if emotional:
                    v = rng.random()
                    cat = labels[i] if v < cfg.p_label else (0 if v < cfg.p_label + cfg.p_joy else rng.integers(k))
                else:
                    cat = 0 if rng.random() < 0.4 else rng.integers(1, k)
                out[i, t] = emo_ids[cat, rng.integers(3)]
            elif u < cfg.p_emotion + (1 - cfg.p_emotion) / 2:
                out[i, t] = obj_ids[objects[i]] if rng.random() < 0.5 else obj_ids[rng.integers(8)]
            else:
                out[i, t] = fill_ids[rng.integers(8)]
    return out


def _prompts(model, world: _World, visual: np.ndarray) -> torch.Tensor:
    emb = model.get_input_embeddings().weight
    n = visual.shape[0]
    bos = emb[VOCABULARY.index("<bos>")].expand(n, 1, -1)
    q = emb[VOCABULARY.index("<q>")].expand(n, 1, -1)
    patches = torch.tensor(visual, dtype=torch.float32) @ world.projector
    return torch.cat([bos, patches, q], 1)


def train_tier2(seed: int, config: Tier2Config = Tier2Config()):
    """Train the tier-2 model for ``seed``; returns ``(model, world)`` (model in eval mode)."""
    from icml26.zoo import tiny_llama

    check_int(seed, "seed", min_value=0)
    world = _World(seed, config.hidden)
    model = tiny_llama(vocab=len(VOCABULARY), hidden=config.hidden, layers=config.layers, heads=config.heads,
                       seed=seed, intermediate=config.intermediate, max_position=64)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    rng = np.random.default_rng([seed, 41])
    gen = torch.Generator().manual_seed(seed)
    for step in range(config.steps):
        emo, neu, labels, objects, _ = toy_images(config.batch, 0, world.raw, 0.1, rng=rng)
        emotional = rng.random(config.batch) < 0.75
        visual = np.where(emotional[:, None, None], emo, neu)
        words = np.stack([_descriptions(labels[i:i + 1], objects[i:i + 1], bool(emotional[i]), rng, config)[0]
                          for i in range(config.batch)])
        ids = torch.tensor(words)
        prompt = _prompts(model, world, visual)
        x = torch.cat([prompt, model.get_input_embeddings()(ids[:, :-1])], 1)
        logits = model(inputs_embeds=x, use_cache=False).logits[:, QUERY_POS:]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    del gen
    model.eval()
    model.final_loss_ = float(loss)
    return model, world


def tier2_pairs(model, world: _World, n: int, seed: int) -> Pairs:
    """``n`` aligned emotional/neutral prompts for the trained model."""
    emo, neu, labels, objects, strength = toy_images(n, seed, world.raw, 0.1)
    with torch.no_grad():
        pe, pn = _prompts(model, world, emo), _prompts(model, world, neu)
    visual = torch.zeros(N_VISUAL + 2, dtype=torch.bool)
    visual[1:N_VISUAL + 1] = True
    return Pairs(pe, pn, torch.tensor(labels), visual, QUERY_POS, objects=torch.tensor(objects),
                 object_token_ids=torch.tensor([VOCABULARY.index(w) for w in OBJECT_WORDS]),
                 extra={"strength": torch.tensor(strength, dtype=torch.float32)})


def tier2_adapter(model):
    from .hooks import HFAdapter

    allowed = torch.tensor([w not in SPECIALS for w in VOCABULARY])
    return HFAdapter(model, vocabulary=VOCABULARY, allowed_tokens=allowed)
