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


def _descriptions(labels, objects, emotional, rng, cfg: Tier2Config) -> np.ndarray:
    """(n, 12) word ids of sampled descriptions (``emotional``: bool per sample)."""
    n, t, k = len(labels), N_GENERATED, len(EMOTIONS)
    word_id = {w: i for i, w in enumerate(VOCABULARY)}
    emo_ids = np.array([[word_id[w] for w in WHEEL_WORDS[e]] for e in EMOTIONS])    # (K, 3)
    obj_ids = np.array([word_id[w] for w in OBJECT_WORDS])
    fill_ids = np.array([word_id[w] for w in FILLER_WORDS])
    emotional = np.broadcast_to(np.asarray(emotional, bool), (n,))[:, None]
    u, v = rng.random((n, t)), rng.random((n, t))
    other = rng.integers(0, k, (n, t))
    cat_emotional = np.where(v < cfg.p_label, labels[:, None], np.where(v < cfg.p_label + cfg.p_joy, 0, other))
    cat_neutral = np.where(v < 0.4, 0, rng.integers(1, k, (n, t)))
    cat = np.where(emotional, cat_emotional, cat_neutral)
    emo_word = emo_ids[cat, rng.integers(0, 3, (n, t))]
    obj_word = np.where(rng.random((n, t)) < 0.5, obj_ids[objects][:, None], obj_ids[rng.integers(0, 8, (n, t))])
    fill_word = fill_ids[rng.integers(0, 8, (n, t))]
    obj_cut = cfg.p_emotion + (1 - cfg.p_emotion) / 2
    return np.where(u < cfg.p_emotion, emo_word, np.where(u < obj_cut, obj_word, fill_word))


def _prompts(model, world: _World, visual: np.ndarray) -> torch.Tensor:
    emb = model.get_input_embeddings().weight
    n = visual.shape[0]
    bos = emb[VOCABULARY.index("<bos>")].expand(n, 1, -1)
    q = emb[VOCABULARY.index("<q>")].expand(n, 1, -1)
    patches = torch.tensor(visual, dtype=torch.float32, device=emb.device) @ world.projector.to(emb.device)
    return torch.cat([bos, patches, q], 1)


def _cache_file(seed: int, config: Tier2Config, device: str = "cpu"):
    import dataclasses
    import hashlib
    import json

    from icml26.core.cache import cache_root

    spec = [seed, dataclasses.asdict(config), 1]
    if device != "cpu":               # another device trains other weights: its own entry
        spec.append({"device": device})
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    return cache_root("emotion_circuits") / f"tier2_{key}.pt"


def train_tier2(seed: int, config: Tier2Config = Tier2Config(), use_cache: bool = True,
                device="cpu"):
    """Train the tier-2 model for ``seed``; returns ``(model, world)`` (model in eval mode, on
    ``device``).

    With ``use_cache`` the trained weights are kept in the icml26 cache folder (written
    atomically) and reused, so a rerun skips training; a non-CPU device keys its own entry.
    """
    from icml26.core.device import resolve_device

    from icml26.core.cache import atomic_file
    from icml26.zoo import tiny_llama

    check_int(seed, "seed", min_value=0)
    world = _World(seed, config.hidden)
    device = resolve_device(device)
    model = tiny_llama(vocab=len(VOCABULARY), hidden=config.hidden, layers=config.layers, heads=config.heads,
                       seed=seed, intermediate=config.intermediate, max_position=64).to(device)
    path = _cache_file(seed, config, device.type)
    if use_cache and path.is_file():
        saved = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(saved["state"])
        model.final_loss_ = float(saved["loss"])
        model.from_cache_ = True
        return model.eval(), world
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    rng = np.random.default_rng([seed, 41])
    for step in range(config.steps):
        emo, neu, labels, objects, _ = toy_images(config.batch, 0, world.raw, 0.1, rng=rng)
        emotional = rng.random(config.batch) < 0.75
        visual = np.where(emotional[:, None, None], emo, neu)
        ids = torch.tensor(_descriptions(labels, objects, emotional, rng, config), device=device)
        prompt = _prompts(model, world, visual)
        x = torch.cat([prompt, model.get_input_embeddings()(ids[:, :-1])], 1)
        logits = model(inputs_embeds=x, use_cache=False).logits[:, QUERY_POS:]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    model.final_loss_ = float(loss.item())
    model.from_cache_ = False
    if use_cache:
        with atomic_file(path) as tmp:
            torch.save({"state": model.state_dict(), "loss": model.final_loss_}, tmp)
    return model, world


def tier2_pairs(model, world: _World, n: int, seed: int) -> Pairs:
    """``n`` aligned emotional/neutral prompts for the trained model."""
    emo, neu, labels, objects, strength = toy_images(n, seed, world.raw, 0.1)
    with torch.no_grad():
        pe, pn = _prompts(model, world, emo), _prompts(model, world, neu)
    visual = torch.zeros(N_VISUAL + 2, dtype=torch.bool)
    visual[1:N_VISUAL + 1] = True
    pairs = Pairs(pe, pn, torch.tensor(labels), visual, QUERY_POS, objects=torch.tensor(objects),
                  object_token_ids=torch.tensor([VOCABULARY.index(w) for w in OBJECT_WORDS]),
                  extra={"strength": torch.tensor(strength, dtype=torch.float32)})
    return pairs.to(pe.device)


def tier2_adapter(model):
    from .hooks import HFAdapter

    allowed = torch.tensor([w not in SPECIALS for w in VOCABULARY])
    return HFAdapter(model, vocabulary=VOCABULARY, allowed_tokens=allowed)
