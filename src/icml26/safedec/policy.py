"""``NavTransformer``: the small autoregressive navigation policy trained by imitation
(spec §5), a CPU-scale stand-in for SPOC (Ehsani et al., 2024) used by SafeDec
(Kapoor et al., ICML 2026, arXiv:2509.01728).

Per step: ``e_t = W_o o_t + E[a_{t−1}] + P[t]`` (BOS for t = 0), two pre-norm causal
transformer layers (d = 64, 4 heads, FF 128, dropout 0.1), linear head → |A| logits.
:meth:`NavTransformer.forward` runs a whole sequence (training); :meth:`NavTransformer.start`
and :meth:`NavTransformer.step` run it one token at a time with a key/value cache (same
numbers, O(t) per step).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ..core.device import resolve_device
from ..core.io import atomic_file
from ..core.validation import check_int, check_tensor
from .data import CELL, N_TOKENS, OBS_DIM, T_MAX, cache_dir, cache_key

__all__ = ["NavTransformer", "train_bc", "load_or_train"]


GOAL_FEATURES = 4


def goal_fine_features(obs: torch.Tensor) -> torch.Tensor:
    """Near-goal features in lattice cells, computed from a LatticeNav observation ``o_t``.

    ``o_t`` carries the goal offset as ``(g − p)/8`` m, so one cell is 0.03 input units and the
    goal cell is hard to tell from its neighbours. These features restate it in cells: the
    offset clipped to ±4 cells and scaled to ±1, and ``exp(−d²/2)``, ``exp(−d²/8)`` of the
    distance ``d`` in cells (1 at the goal, 0.61 / 0.88 one cell away). Shape (..., 4).
    """
    rel = obs[..., 2:4] * (8.0 / CELL)
    d2 = (obs[..., 4:5] * (8.0 / CELL)) ** 2
    return torch.cat([rel.clamp(-4.0, 4.0) / 4.0, torch.exp(-d2 / 2.0), torch.exp(-d2 / 8.0)], dim=-1)


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, ff: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.GELU(), nn.Linear(ff, dim))
        self.drop = nn.Dropout(dropout)

    def _split(self, x):  # (B, T, D) -> (B, H, T, D/H)
        b, t, d = x.shape
        return x.view(b, t, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x, cache: dict | None = None, attn_mask: torch.Tensor | None = None,
                window: int | None = None):
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = self._split(q), self._split(k), self._split(v)
        if cache is None:  # right-padded batches need no padding mask under causality
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=attn_mask is None,
                                                 dropout_p=self.drop.p if self.training else 0.0)
        else:
            if "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            if window is not None:  # attend to the last `window` steps only
                k, v = k[:, :, -window:], v[:, :, -window:]
            cache["k"], cache["v"] = k, v
            att = F.scaled_dot_product_attention(q, k, v)
        b, h, t, dh = att.shape
        x = x + self.drop(self.proj(att.transpose(1, 2).reshape(b, t, h * dh)))
        return x + self.drop(self.ff(self.norm2(x)))


class NavTransformer(nn.Module):
    """Causal transformer policy over (observation, previous action) sequences.

    Parameters
    ----------
    obs_dim : int
        Observation size (94 for LatticeNav).
    n_tokens : int
        Action vocabulary size |A|.
    dim, heads, ff, layers : int
        Width, attention heads, feed-forward width, number of layers.
    context : int
        Maximum sequence length.
    dropout : float
    window : int, optional
        Attend to the last ``window`` steps only.
    positional : bool
        Add the learned position embedding ``P[t]``.
    goal_features : bool
        Also feed :func:`goal_fine_features` of the observation (the goal offset in cells)
        through its own linear layer (off by default: the spec's 94-dim input only).

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728 (the
    autoregressive action-token policy it constrains; here a small stand-in trained by behaviour
    cloning). Vaswani et al., "Attention Is All You Need", NeurIPS 2017 (the transformer).

    Examples
    --------
    >>> import torch
    >>> net = NavTransformer().eval()
    >>> obs, prev = torch.zeros(2, 5, 94), torch.zeros(2, 5, dtype=torch.long)
    >>> net(obs, prev).shape
    torch.Size([2, 5, 7])
    """

    def __init__(self, obs_dim: int = OBS_DIM, n_tokens: int = N_TOKENS, dim: int = 64, heads: int = 4,
                 ff: int = 128, layers: int = 2, context: int = T_MAX, dropout: float = 0.1,
                 window: int | None = None, positional: bool = True, goal_features: bool = False):
        super().__init__()
        self.obs_dim, self.n_tokens, self.context = obs_dim, n_tokens, context
        self.window = window
        self.positional = positional
        self.bos = n_tokens
        self.obs_in = nn.Linear(obs_dim, dim)
        self.token_emb = nn.Embedding(n_tokens + 1, dim)  # + BOS
        self.pos_emb = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(_Block(dim, heads, ff, dropout) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, n_tokens)
        # GPT-2-style small embedding init: N(0, 1) embeddings would swamp W_o o_t (|o_t| ~ 1)
        nn.init.normal_(self.token_emb.weight, std=0.02)
        nn.init.normal_(self.pos_emb.weight, std=0.02)
        # created last, so a model without it draws the same initial weights as before
        self.goal_in = nn.Linear(GOAL_FEATURES, dim) if goal_features else None

    def _embed(self, obs, prev_tokens, positions):
        x = self.obs_in(obs) + self.token_emb(prev_tokens)
        if self.goal_in is not None:
            x = x + self.goal_in(goal_fine_features(obs))
        return x + self.pos_emb(positions) if self.positional else x

    def forward(self, obs: torch.Tensor, prev_tokens: torch.Tensor,
                attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits for every step.

        Parameters
        ----------
        obs : Tensor, shape (B, T, obs_dim)
        prev_tokens : LongTensor, shape (B, T)
            ``a_{t−1}`` (``self.bos`` at t = 0).
        attn_mask : BoolTensor, shape (B, 1, T, T), optional
            True where attention is allowed (default: causal).

        Returns
        -------
        Tensor, shape (B, T, n_tokens)
        """
        check_tensor(obs, "obs", ndim=3)
        if obs.shape[1] > self.context:
            raise ValueError(f"sequence length {obs.shape[1]} exceeds the context {self.context}")
        pos = torch.arange(obs.shape[1], device=obs.device)
        x = self._embed(obs, prev_tokens, pos[None])
        if attn_mask is None and self.window is not None:
            t = obs.shape[1]
            rel = pos[:, None] - pos[None, :]
            attn_mask = ((rel >= 0) & (rel < self.window))[None, None]
        for block in self.blocks:
            x = block(x, attn_mask=attn_mask)
        return self.head(self.norm(x))

    def start(self) -> dict:
        """A fresh key/value cache for :meth:`step`."""
        return {"t": 0, "layers": [{} for _ in self.blocks]}

    def step(self, cache: dict, obs: torch.Tensor, prev_tokens: torch.Tensor) -> torch.Tensor:
        """Logits (B, n_tokens) for the next step, extending ``cache`` in place.

        Parameters
        ----------
        cache : dict
            From :meth:`start`.
        obs : Tensor, shape (B, obs_dim)
        prev_tokens : LongTensor, shape (B,)
        """
        t = cache["t"]
        if t >= self.context:
            raise ValueError(f"context of {self.context} steps exhausted")
        pos = torch.full((obs.shape[0], 1), t, dtype=torch.long, device=obs.device)
        x = self._embed(obs[:, None], prev_tokens[:, None], pos)
        for block, layer_cache in zip(self.blocks, cache["layers"]):
            x = block(x, cache=layer_cache, window=self.window)
        cache["t"] = t + 1
        return self.head(self.norm(x))[:, 0]


def _pad_batch(demos, idx):
    lengths = [len(demos[k].tokens) for k in idx]
    t = max(lengths)
    obs = np.zeros((len(idx), t, demos[0].obs.shape[1]), dtype=np.float32)
    tok = np.zeros((len(idx), t), dtype=np.int64)
    pad = np.ones((len(idx), t), dtype=bool)
    for r, k in enumerate(idx):
        n = lengths[r]
        obs[r, :n] = demos[k].obs
        tok[r, :n] = demos[k].tokens
        pad[r, :n] = False
    return torch.from_numpy(obs), torch.from_numpy(tok), torch.from_numpy(pad)


def train_bc(demos: list, seed: int, steps: int = 800, *, batch: int = 32, lr: float = 3e-3,
             weight_decay: float = 0.01, label_smoothing: float = 0.1, action_dropout: float = 0.0,
             history_dropout: float = 0.0, warmup: int = 0, device="cpu", **model_kw) -> NavTransformer:
    """Behaviour cloning: cross-entropy with label smoothing, AdamW with cosine decay.

    Parameters
    ----------
    demos : list of Demo
    seed : int
        Seeds initialisation, batch order and dropout.
    steps : int
        Optimiser steps (spec: 800).
    batch : int
        Episodes per step (spec: 32).
    lr, weight_decay, label_smoothing : float
        Spec §5: 3e-3, 0.01, 0.1 (label smoothing bounds the optimal logit gap at
        ln(64) ≈ 4.2, on the scale of RCD's α — a resolution, not from the paper).
    device : str or torch.device
        Where the policy trains (``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"auto"``). Batches and
        the action/history-dropout masks are drawn on the CPU (the same on every device); the
        model's own dropout on ``device``.

    Returns
    -------
    NavTransformer
        In eval mode, on ``device``.
    """
    if not demos:
        raise ValueError("demos must be a non-empty list")
    check_int(steps, "steps", min_value=1)
    device = resolve_device(device)
    # The caller's global generators are left as they were: seeding happens inside a fork.
    forked = [device] if device.type == "cuda" and torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=forked):
        torch.manual_seed(seed)
        return _train_bc(demos, seed, steps, batch=batch, lr=lr, weight_decay=weight_decay,
                         label_smoothing=label_smoothing, action_dropout=action_dropout,
                         history_dropout=history_dropout, warmup=warmup, device=device, **model_kw)


def _train_bc(demos, seed, steps, *, batch, lr, weight_decay, label_smoothing, action_dropout,
              history_dropout, warmup, device, **model_kw) -> NavTransformer:
    rng = np.random.default_rng(seed)
    model = NavTransformer(obs_dim=demos[0].obs.shape[1], **model_kw).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup if warmup else 1.0) * 0.5 * (1 + math.cos(math.pi * s / steps)))
    model.train()
    for _ in range(steps):
        idx = rng.choice(len(demos), size=min(batch, len(demos)), replace=False)
        obs, tok, pad = _pad_batch(demos, idx)
        prev = torch.cat([torch.full((len(idx), 1), model.bos), tok[:, :-1]], dim=1)
        if action_dropout > 0:  # hide a_{t-1} at random: counters the copycat shortcut
            hide = torch.rand(prev.shape) < action_dropout
            prev = prev.masked_fill(hide, model.bos)
        mask = None
        if history_dropout > 0:  # some steps see only their own observation (anti-copycat)
            t = obs.shape[1]
            causal = torch.ones(t, t, dtype=torch.bool).tril()
            own = torch.eye(t, dtype=torch.bool)
            alone = torch.rand(len(idx), t) < history_dropout
            mask = torch.where(alone[:, None, :, None], own, causal).to(device)
        obs, prev, tok, pad = obs.to(device), prev.to(device), tok.to(device), pad.to(device)
        logits = model(obs, prev, attn_mask=mask)
        loss = F.cross_entropy(logits[~pad], tok[~pad], label_smoothing=label_smoothing)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return model.eval()


def load_or_train(demo_fn, demo_key: dict, seed: int, steps: int, device="cpu",
                  **train_kw) -> NavTransformer:
    """Load the policy for ``(demo_key, seed, steps, train_kw)`` from the cache, or train and store it.

    ``demo_fn()`` produces the demonstrations (called only on a cache miss). Writes are
    atomic (:func:`icml26.core.io.atomic_file`), so parallel jobs never read half a file. The policy is
    trained on and returned on ``device``; a non-CPU device keys its own cache entry (another
    device's kernels and RNG train other weights), the CPU key is unchanged.
    """
    device = resolve_device(device)
    spec = {"demos": demo_key, "seed": seed, "steps": steps, "train": train_kw, "version": 2}
    if device.type != "cpu":
        spec["device"] = device.type
    key = cache_key(spec)
    path = cache_dir() / f"policy_{key}.pt"
    model_kw = {k: v for k, v in train_kw.items() if k in _MODEL_KEYS}
    if path.exists():
        model = NavTransformer(**model_kw)
        model.load_state_dict(torch.load(path, weights_only=True, map_location="cpu"))
        return model.to(device).eval()
    model = train_bc(demo_fn(), seed=seed, steps=steps, device=device, **train_kw)
    with atomic_file(path) as tmp:
        torch.save(model.state_dict(), tmp)
    return model


_MODEL_KEYS = {"dim", "heads", "ff", "layers", "context", "dropout", "window", "positional", "goal_features"}
