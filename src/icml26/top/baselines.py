"""The paper's baselines: multi-token prediction with parallel heads (MTP, Gloeckle et al.
2024) and DeepSeek-V3-style sequential MTP (DS-MTP), on the :class:`~icml26.top.gpt.TinyGPT`
block. Plain next-token prediction is :class:`~icml26.top.gpt.TinyGPT` + ``causal_lm_loss``.

No maintained library implements either for small models, so both are written here from the
TOP authors' ``transformer_mtp`` / ``transformer_dsmtp`` models (fla fork).

References
----------
Zuhri, Fuadi & Aji, ICML 2026 (arXiv:2508.19228). Gloeckle et al., "Better & faster large
language models via multi-token prediction", ICML 2024. DeepSeek-AI, "DeepSeek-V3
technical report", 2024.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
from transformers.utils import ModelOutput

from icml26.core.validation import check_choice, check_int
from icml26.top.gpt import (Block, GPTConfig, GPTTrunk, _refuse_padding, init_weights,
                            scale_residual_projections)
from icml26.top.token_order import causal_lm_loss, check_labels, shift_labels

__all__ = ["MTPOutput", "MTPForCausalLM", "DSMTPForCausalLM"]


@dataclass
class MTPOutput(ModelOutput):
    """Output of the MTP baselines: ``logits`` are head 1's (next token).

    References
    ----------
    Gloeckle et al., "Better & faster large language models via multi-token prediction", ICML 2024.
    Follows the ``transformers.utils.ModelOutput`` convention.

    Examples
    --------
    >>> import torch
    >>> from icml26.top import GPTConfig, MTPForCausalLM, MTPOutput
    >>> model = MTPForCausalLM(GPTConfig(vocab_size=10, block_size=8, n_layer=3, n_head=2,
    ...                                  n_embd=8), n_future=2)
    >>> ids = torch.randint(0, 10, (2, 6), generator=torch.Generator().manual_seed(0))
    >>> out = model(ids, labels=ids)
    >>> isinstance(out, MTPOutput), out.logits.shape
    (True, torch.Size([2, 6, 10]))
    """

    loss: Optional[torch.Tensor] = None
    ntp_loss: Optional[torch.Tensor] = None
    head_losses: Optional[torch.Tensor] = None
    logits: Optional[torch.Tensor] = None


def _future_targets(row: torch.Tensor, offset: int, seq_len: int, ignore_index: int) -> torch.Tensor:
    """Targets ``x_{t+offset}`` for positions 0..T-1 from the shifted row (padded)."""
    part = row[:, offset - 1 : offset - 1 + seq_len]
    if part.shape[1] < seq_len:
        pad = row.new_full((row.shape[0], seq_len - part.shape[1]), ignore_index)
        part = torch.cat([part, pad], dim=1)
    return part


class _MultiTokenBase(nn.Module):
    def __init__(self, config: GPTConfig, n_future: int, reduction: str, ignore_index: int,
                 validate_args: bool = True):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        check_int(n_future, "n_future", min_value=1)
        if n_future >= config.n_layer:
            raise ValueError(f"n_future must be < n_layer (the trunk keeps n_layer - n_future >= 1 "
                             f"blocks), got n_future={n_future}, n_layer={config.n_layer}")
        check_choice(reduction, "reduction", ["sum", "mean"])
        self.config = config
        self.n_future = n_future
        self.reduction = reduction
        self.ignore_index = ignore_index
        self.validate_args = bool(validate_args)
        self.transformer = GPTTrunk(config, n_blocks=config.n_layer - n_future)
        self.heads = nn.ModuleList(Block(config) for _ in range(n_future))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def _finish_init(self) -> None:
        init_weights(self, self.config.init_std)
        scale_residual_projections(self, self.config)
        if self.config.tie_embeddings:
            self.lm_head.weight = self.transformer.wte.weight

    def get_input_embeddings(self) -> nn.Embedding:
        return self.transformer.wte

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def _trunk(self, input_ids: torch.Tensor, attention_mask=None) -> torch.Tensor:
        if self.validate_args:
            check_labels(input_ids, self.config.vocab_size, ignore_index=0, name="input_ids")
        _refuse_padding(attention_mask, input_ids)
        x = self.transformer.embed(input_ids)
        for block in self.transformer.blocks:
            x = block(x)
        return x

    def _loss(self, head_logits: list, input_ids, labels, lookahead_labels) -> MTPOutput:
        if labels.shape != input_ids.shape:
            raise ValueError(f"labels must have the shape of input_ids {tuple(input_ids.shape)}, "
                             f"got {tuple(labels.shape)}")
        if self.validate_args:
            check_labels(labels, self.config.vocab_size, self.ignore_index)
        row = shift_labels(labels, lookahead_labels, self.ignore_index)
        seq_len = input_ids.shape[1]
        losses = torch.stack([
            causal_lm_loss(logits, _future_targets(row, k + 1, seq_len, self.ignore_index),
                           self.ignore_index)
            for k, logits in enumerate(head_logits)])
        total = losses.sum() if self.reduction == "sum" else losses.mean()
        return MTPOutput(loss=total, ntp_loss=losses[0], head_losses=losses.detach(),
                         logits=head_logits[0])


class MTPForCausalLM(_MultiTokenBase):
    """Multi-token prediction with ``n_future`` parallel one-block heads (Gloeckle et al.).

    A trunk of ``n_layer - n_future`` blocks feeds every head block; head ``i`` (1-based)
    predicts ``x_{t+i}`` through the shared final norm and the shared ``lm_head``. Loss: the
    **sum** of the heads' cross-entropies (``reduction="sum"``, as the TOP authors' code).
    Inference uses head 1 only (depth ``n_layer - n_future + 1``).

    Parameters
    ----------
    config : GPTConfig
        ``n_layer`` counts trunk + head blocks.
    n_future : int
        Number of heads (paper: 4), ``1 <= n_future < n_layer``.
    reduction : {"sum", "mean"}
    ignore_index : int
    validate_args : bool
        Check the ids of ``input_ids`` and ``labels`` on every call (default); ``False`` skips
        these host reads (see :class:`~icml26.top.token_order.TOPLoss`).

    Notes
    -----
    ``forward(input_ids, labels=None, lookahead_labels=None)`` with Hugging Face-style
    labels, as :class:`~icml26.top.token_order.TOPForCausalLM`.

    Examples
    --------
    >>> import torch
    >>> m = MTPForCausalLM(GPTConfig(vocab_size=10, block_size=8, n_layer=3, n_head=2, n_embd=8), n_future=2)
    >>> ids = torch.randint(0, 10, (2, 6))
    >>> m(ids, labels=ids).head_losses.shape
    torch.Size([2])

    References
    ----------
    Gloeckle et al., ICML 2024; Zuhri et al., ICML 2026 (arXiv:2508.19228).
    """

    def __init__(self, config: GPTConfig, n_future: int = 4, reduction: str = "sum",
                 ignore_index: int = -100, validate_args: bool = True):
        super().__init__(config, n_future, reduction, ignore_index, validate_args)
        self._finish_init()

    def forward(self, input_ids: torch.Tensor, labels: Optional[torch.Tensor] = None,
                lookahead_labels: Optional[torch.Tensor] = None, attention_mask=None) -> MTPOutput:
        trunk = self._trunk(input_ids, attention_mask)
        heads = self.heads if labels is not None else self.heads[:1]
        head_logits = [self.lm_head(self.transformer.ln_f(head(trunk))) for head in heads]
        if labels is None:
            return MTPOutput(logits=head_logits[0])
        return self._loss(head_logits, input_ids, labels, lookahead_labels)


class DSMTPForCausalLM(_MultiTokenBase):
    """DeepSeek-V3-style sequential multi-token prediction.

    Trunk of ``n_layer - n_future`` blocks and the final norm; module 1 is a block on the
    normed trunk (predicts ``x_{t+1}``); module ``k >= 2`` applies one block to
    ``Linear_{2d->d}([RMSNorm(h^{k-1}_t); RMSNorm(stopgrad(Emb(x_{t+k-1})))])`` and predicts
    ``x_{t+k}``. All modules share ``lm_head`` (no norm after the modules: reference quirk).
    Loss: the **mean** cross-entropy over modules (``reduction="mean"``).

    Parameters
    ----------
    config : GPTConfig
    n_future : int
        Number of modules (paper: 4; 3 in the 120M config), ``1 <= n_future < n_layer``.
    reduction : {"mean", "sum"}
    ignore_index : int
    validate_args : bool
        As :class:`MTPForCausalLM`.

    Notes
    -----
    The token ``x_{t+k-1}`` of module k comes from ``input_ids`` and, past the block, from
    the look-ahead labels (0 where unknown: those positions have no target either).

    Examples
    --------
    >>> import torch
    >>> m = DSMTPForCausalLM(GPTConfig(vocab_size=10, block_size=8, n_layer=3, n_head=2, n_embd=8), n_future=2)
    >>> ids = torch.randint(0, 10, (2, 6))
    >>> m(ids).logits.shape
    torch.Size([2, 6, 10])

    References
    ----------
    DeepSeek-AI, DeepSeek-V3 technical report, 2024; Zuhri et al., ICML 2026 (arXiv:2508.19228).
    """

    def __init__(self, config: GPTConfig, n_future: int = 4, reduction: str = "mean",
                 ignore_index: int = -100, validate_args: bool = True):
        super().__init__(config, n_future, reduction, ignore_index, validate_args)
        d = config.n_embd
        self.hidden_norms = nn.ModuleList(nn.RMSNorm(d, eps=1e-6) for _ in range(n_future - 1))
        self.embed_norms = nn.ModuleList(nn.RMSNorm(d, eps=1e-6) for _ in range(n_future - 1))
        self.projections = nn.ModuleList(nn.Linear(2 * d, d, bias=True) for _ in range(n_future - 1))
        self._finish_init()

    def forward(self, input_ids: torch.Tensor, labels: Optional[torch.Tensor] = None,
                lookahead_labels: Optional[torch.Tensor] = None, attention_mask=None) -> MTPOutput:
        hidden = self.heads[0](self.transformer.ln_f(self._trunk(input_ids, attention_mask)))
        head_logits = [self.lm_head(hidden)]
        if labels is None:
            return MTPOutput(logits=head_logits[0])
        seq_len = input_ids.shape[1]
        row = shift_labels(labels, lookahead_labels, self.ignore_index)
        # tokens[:, j] = token at input index j, continuing into the look-ahead
        tokens = torch.cat([input_ids, row[:, seq_len - 1 :]], dim=1)
        tokens = torch.where(tokens == self.ignore_index, 0, tokens)
        for k in range(2, self.n_future + 1):
            shifted = _future_targets(tokens, k, seq_len, 0)           # x_{t+k-1}
            emb = self.transformer.wte(shifted).detach()
            mixed = torch.cat([self.hidden_norms[k - 2](hidden), self.embed_norms[k - 2](emb)], dim=-1)
            hidden = self.heads[k - 1](self.projections[k - 2](mixed))
            head_logits.append(self.lm_head(hidden))
        return self._loss(head_logits, input_ids, labels, lookahead_labels)
