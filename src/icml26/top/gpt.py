"""A small pre-LN GPT trunk (learned positions, LayerNorm, tied embeddings).

This is the trunk the experiments train: the star-graph GPT of Bachmann & Nagarajan's
*Next-Token-Failures* code (which the TOP authors forked), shrunk for CPU. It exposes the
same accessors as a Hugging Face causal LM (``get_decoder``, ``get_output_embeddings``,
``get_input_embeddings``) so :class:`~icml26.top.token_order.TOPForCausalLM` wraps it and a
``transformers`` model alike.

References
----------
Zuhri, Fuadi & Aji, "Predicting the Order of Upcoming Tokens Improves Language Modeling",
ICML 2026 (arXiv:2508.19228).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers.modeling_outputs import BaseModelOutput, CausalLMOutput

from icml26.core.validation import check_int, check_scalar_in

__all__ = ["GPTConfig", "Block", "TinyGPT", "GPTTrunk"]


@dataclass(frozen=True)
class GPTConfig:
    """Shape of a :class:`TinyGPT`.

    Parameters
    ----------
    vocab_size : int
        Number of token ids.
    block_size : int
        Longest sequence the learned position table holds.
    n_layer, n_head, n_embd : int
        Depth, attention heads, width (``n_embd`` divisible by ``n_head``).
    init_std : float
        Standard deviation of the normal initialisation of every linear and embedding
        (0.02 in the star-graph GPT).
    tie_embeddings : bool
        Share the input embedding with ``lm_head`` (the star-graph GPT does).

    References
    ----------
    Bachmann & Nagarajan, "The Pitfalls of Next-Token Prediction", ICML 2024 (its star-graph GPT).
    Zuhri, Fuadi & Aji, "Predicting the Order of Upcoming Tokens Improves Language Modeling", ICML
    2026 (arXiv:2508.19228).

    Examples
    --------
    >>> from icml26.top import TinyGPT
    >>> config = GPTConfig(vocab_size=10, block_size=8, n_layer=2, n_head=2, n_embd=8)
    >>> TinyGPT(config).config.n_embd
    8
    """

    vocab_size: int = 16
    block_size: int = 64
    n_layer: int = 3
    n_head: int = 4
    n_embd: int = 96
    init_std: float = 0.02
    tie_embeddings: bool = True

    def __post_init__(self) -> None:
        check_int(self.vocab_size, "vocab_size", min_value=2)
        check_int(self.block_size, "block_size", min_value=1)
        check_int(self.n_layer, "n_layer", min_value=1)
        check_int(self.n_head, "n_head", min_value=1)
        check_int(self.n_embd, "n_embd", min_value=1)
        check_scalar_in(self.init_std, "init_std", low=0.0, low_inclusive=False)
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd must be divisible by n_head, got n_embd={self.n_embd}, "
                             f"n_head={self.n_head}")


class Block(nn.Module):
    """Pre-LN transformer block: ``x + attn(ln(x))`` then ``x + mlp(ln(x))`` (causal)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head = config.n_head
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.attn_out = nn.Linear(config.n_embd, config.n_embd)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp_in = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.mlp_out = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, dim = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(dim, dim=-1)
        # (batch, heads, tokens, dim / heads)
        q, k, v = (t.view(batch, tokens, self.n_head, -1).transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_out(attn.transpose(1, 2).reshape(batch, tokens, dim))
        return x + self.mlp_out(F.gelu(self.mlp_in(self.ln_2(x))))


def init_weights(module: nn.Module, std: float) -> None:
    """Normal(0, std) for linears/embeddings, zero biases (the star-graph GPT's init)."""
    for sub in module.modules():
        if isinstance(sub, (nn.Linear, nn.Embedding)):
            nn.init.normal_(sub.weight, mean=0.0, std=std)
            if getattr(sub, "bias", None) is not None:
                nn.init.zeros_(sub.bias)


def _refuse_padding(attention_mask, input_ids: torch.Tensor) -> None:
    """Accept ``None`` or an all-ones mask of ``input_ids``' shape; refuse padding (a host read
    only when a mask is given)."""
    if attention_mask is None:
        return
    if tuple(attention_mask.shape) != tuple(input_ids.shape):
        raise ValueError(f"attention_mask must have the shape of input_ids {tuple(input_ids.shape)}, "
                         f"got {tuple(attention_mask.shape)}")
    if not bool((attention_mask != 0).all()):
        raise ValueError("attention_mask has padding (zeros): TinyGPT's causal blocks have no "
                         "padding mask; pass unpadded rows of equal length (or attention_mask=None)")


class GPTTrunk(nn.Module):
    """Embeddings + blocks + final LayerNorm; ``forward`` returns ``last_hidden_state``."""

    def __init__(self, config: GPTConfig, n_blocks: int | None = None):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        n_blocks = config.n_layer if n_blocks is None else n_blocks
        self.blocks = nn.ModuleList(Block(config) for _ in range(n_blocks))
        self.ln_f = nn.LayerNorm(config.n_embd)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        tokens = input_ids.shape[1]
        if tokens > self.config.block_size:
            raise ValueError(f"input_ids has {tokens} tokens; block_size is "
                             f"{self.config.block_size}")
        pos = torch.arange(tokens, device=input_ids.device)
        return self.wte(input_ids) + self.wpe(pos)

    def forward(self, input_ids: torch.Tensor, attention_mask=None, **_) -> BaseModelOutput:
        """Final hidden states. ``attention_mask`` may be given only without padding (all ones):
        the causal blocks have no padding mask, so a padded batch is refused, not ignored."""
        _refuse_padding(attention_mask, input_ids)
        x = self.embed(input_ids)
        for block in self.blocks:
            x = block(x)
        return BaseModelOutput(last_hidden_state=self.ln_f(x))


class TinyGPT(nn.Module):
    """A small GPT language model: :class:`GPTTrunk` + ``lm_head`` (tied by default).

    Parameters
    ----------
    config : GPTConfig

    Examples
    --------
    >>> import torch
    >>> model = TinyGPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2, n_embd=8))
    >>> model(torch.zeros(2, 5, dtype=torch.long)).logits.shape
    torch.Size([2, 5, 10])

    References
    ----------
    Zuhri et al., ICML 2026 (arXiv:2508.19228); Bachmann & Nagarajan, "The pitfalls of
    next-token prediction", ICML 2024.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = GPTTrunk(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        init_weights(self, config.init_std)
        scale_residual_projections(self, config)
        if config.tie_embeddings:
            self.lm_head.weight = self.transformer.wte.weight

    def get_decoder(self) -> GPTTrunk:
        return self.transformer

    def get_input_embeddings(self) -> nn.Embedding:
        return self.transformer.wte

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def forward(self, input_ids: torch.Tensor, attention_mask=None, **_) -> CausalLMOutput:
        """Next-token logits; a padded ``attention_mask`` is refused (see :class:`GPTTrunk`)."""
        hidden = self.transformer(input_ids, attention_mask=attention_mask).last_hidden_state
        return CausalLMOutput(logits=self.lm_head(hidden))


def scale_residual_projections(model: nn.Module, config: GPTConfig) -> None:
    """GPT-2's scaled init of the MLP output projections: std / sqrt(2 * n_layer)."""
    for name, param in model.named_parameters():
        if name.endswith("mlp_out.weight"):
            nn.init.normal_(param, mean=0.0, std=config.init_std / math.sqrt(2 * config.n_layer))
