"""Token Order Prediction (TOP): the ranking target, the ListNet loss and the extra head.

TOP (Zuhri, Fuadi & Aji, ICML 2026) adds one unembedding matrix ``top_head`` (d x V, no
bias) on the final hidden state of a causal LM and trains it with a listwise
learning-to-rank loss to order the vocabulary by how soon each token next appears in the
following ``window`` positions. The next-token head is unchanged and the TOP head is
dropped at inference.

Notes
-----
Paper notation -> code names. For the label row ``x`` (``labels[:, t]`` is the NTP target
at position ``t``) and window ``W``:

* ``k_t(v)`` = first offset ``k in 1..W`` with ``labels[t + k - 1] == v``
  (ids equal to ``ignore_index`` never count);
* target score ``s_t(v) = W + 1 - k_t(v)``, ``-inf`` when ``v`` is not in the window
  (:func:`top_targets`; :func:`top_targets_sparse` keeps only the <= W finite entries);
* ListNet top-one loss ``-sum_v softmax(s_t)_v log softmax(u_t)_v`` with ``u_t`` the
  TOP-head scores (:func:`listnet_loss`), averaged over positions whose window is
  non-empty;
* total ``L = L_NTP + top_weight * L_TOP`` (the reference adds them unweighted).

References
----------
Z. M. K. Zuhri, E. H. Fuadi, A. F. Aji. "Predicting the Order of Upcoming Tokens Improves
Language Modeling." ICML 2026, arXiv:2508.19228. Reference code:
github.com/zaydzuhri/token-order-prediction.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers.utils import ModelOutput

from icml26.core.validation import check_choice, check_int, check_scalar_in, check_tensor

__all__ = [
    "DENSE_TARGET_CAP",
    "top_targets",
    "top_targets_sparse",
    "listnet_loss",
    "sparse_listnet_loss",
    "causal_lm_loss",
    "shift_labels",
    "TOPHead",
    "TOPLoss",
    "TOPOutput",
    "TOPForCausalLM",
    "ndcg_at_k",
]

TOP_HEAD_FILE = "top_head.safetensors"
TOP_CONFIG_FILE = "top_config.json"

DENSE_TARGET_CAP = 2**28
"""Largest B*T*V the dense :func:`top_targets` builds (1 GiB of float32) before refusing."""


# -- validation -----------------------------------------------------------------------

def check_labels(labels, vocab_size: int, ignore_index: int, name: str = "labels",
                 ndim: int = 2) -> torch.Tensor:
    """An integer id tensor whose entries are in ``[0, vocab_size)`` or ``ignore_index``."""
    check_tensor(labels, name, ndim=ndim, finite=False)
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {labels.dtype}")
    bad = (labels != ignore_index) & ((labels < 0) | (labels >= vocab_size))
    if bool(bad.any()):
        example = int(labels[bad][0])
        raise ValueError(f"{name} holds id {example} outside [0, {vocab_size}); expected token "
                         f"ids in [0, vocab_size) or ignore_index={ignore_index}")
    return labels


def _label_rows(labels, vocab_size, window, ignore_index, inclusive, seq_len, validate=True):
    """Validate and pad the label rows; return (rows, T, span) with span = offsets counted.

    ``validate=False`` skips the id range check, the one step that reads tensor values on the
    host (a device synchronisation on an accelerator)."""
    check_int(vocab_size, "vocab_size", min_value=2)
    check_int(window, "window", min_value=1)
    check_int(ignore_index, "ignore_index")
    if validate:
        check_labels(labels, vocab_size, ignore_index)
    else:
        check_tensor(labels, "labels", ndim=2, finite=False)
    length = labels.shape[1]
    if seq_len is None:
        seq_len = length - window
        if seq_len < 1:
            raise ValueError(f"labels has {length} columns but window={window}: expected at least "
                             f"window + 1 columns (T + W), or pass seq_len")
    else:
        check_int(seq_len, "seq_len", min_value=1)
        if seq_len > length:
            raise ValueError(f"seq_len={seq_len} exceeds the {length} label columns; expected "
                             f"labels with at least seq_len columns")
    span = window + 1 if inclusive else window
    need = seq_len + span - 1
    rows = labels.long()
    if length < need:  # missing look-ahead is padding, never wrapped around
        pad = rows.new_full((rows.shape[0], need - length), ignore_index)
        rows = torch.cat([rows, pad], dim=1)
    return rows, seq_len, span


# -- targets --------------------------------------------------------------------------

def top_targets(labels: torch.Tensor, vocab_size: int, window: int, ignore_index: int = -100,
                inclusive: bool = False, dtype: torch.dtype = torch.float32,
                seq_len: Optional[int] = None, max_elements: int = DENSE_TARGET_CAP,
                fp16_targets: bool = False) -> torch.Tensor:
    """Dense TOP target scores ``s_t(v)``: ``W + 1 - (first offset of v)``, else ``-inf``.

    Parameters
    ----------
    labels : LongTensor of shape (B, L)
        Label rows: ``labels[:, t]`` is the next-token target of position ``t``; the columns
        past ``T`` are the look-ahead. ``ignore_index`` entries never get a score.
    vocab_size : int
        V (>= 2). Ids outside ``[0, V)`` other than ``ignore_index`` raise ``ValueError``.
    window : int
        W >= 1, the number of upcoming positions ranked.
    ignore_index : int
        Padding / ignore id.
    inclusive : bool
        False (default): offsets ``1..W`` as in the reference Triton training kernel.
        True: offsets ``1..W+1`` as in the reference's naive PyTorch version (the token at
        offset ``W+1`` gets score 0).
    dtype : torch.dtype
        Output dtype (float32: the scores are exact integers).
    seq_len : int, optional
        T, the number of positions to emit. Default ``L - window`` (the reference layout of
        T + W label columns). A shorter row is padded with ``ignore_index``.
    max_elements : int
        Refuse (``MemoryError``) to build more than this many B*T*V entries.
    fp16_targets : bool
        Round the scores through float16 like the reference kernel (inexact for W > 2048).

    Returns
    -------
    Tensor of shape (B, T, V)

    Notes
    -----
    A backward sweep keeps ``next_occ[v]`` (next label index holding ``v``): O(B (T+W) V)
    time, O(B V) state (spec §2.2).

    Examples
    --------
    >>> import torch
    >>> top_targets(torch.tensor([[2, 1, 2, 0]]), vocab_size=4, window=3, seq_len=1)
    tensor([[[-inf, 2., 3., -inf]]])

    References
    ----------
    Zuhri et al., ICML 2026 (arXiv:2508.19228), reference ``seq_to_top``.
    """
    rows, seq_len, span = _label_rows(labels, vocab_size, window, ignore_index, inclusive, seq_len)
    batch = rows.shape[0]
    check_int(max_elements, "max_elements", min_value=1)
    if batch * seq_len * vocab_size > max_elements:
        raise MemoryError(f"dense TOP targets need B*T*V = {batch}*{seq_len}*{vocab_size} = "
                          f"{batch * seq_len * vocab_size} entries > max_elements={max_elements}; "
                          f"use top_targets_sparse (at most W entries per position)")
    valid = (rows != ignore_index)
    tokens = torch.where(valid, rows, 0)
    never = rows.shape[1] + span + 1
    next_occ = torch.full((batch, vocab_size), never, dtype=torch.long, device=rows.device)
    out = torch.empty((batch, seq_len, vocab_size), dtype=dtype, device=rows.device)
    scores_at = torch.arange(window, window - span, -1, dtype=dtype, device=rows.device)
    neg_inf = torch.tensor(float("-inf"), dtype=dtype, device=rows.device)
    for j in range(rows.shape[1] - 1, -1, -1):
        tok = tokens[:, j : j + 1]
        current = next_occ.gather(1, tok)
        next_occ.scatter_(1, tok, torch.where(valid[:, j : j + 1], j, current))
        if j < seq_len:
            distance = next_occ - j
            inside = distance < span
            out[:, j] = torch.where(inside, scores_at[distance.clamp(max=span - 1)], neg_inf)
    if fp16_targets:
        out = out.half().to(dtype)
    return out


def _previous_occurrence(rows: torch.Tensor, valid: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Label index of the previous occurrence of the same token in the row (-1 if none)."""
    key = torch.where(valid, rows, vocab_size)
    order = torch.argsort(key, dim=1, stable=True)
    sorted_key = key.gather(1, order)
    same = sorted_key[:, 1:] == sorted_key[:, :-1]
    prev_sorted = torch.where(same, order[:, :-1], -1)
    prev_sorted = torch.cat([order.new_full((rows.shape[0], 1), -1), prev_sorted], dim=1)
    return torch.empty_like(order).scatter_(1, order, prev_sorted)


def top_targets_sparse(labels: torch.Tensor, vocab_size: int, window: int,
                       ignore_index: int = -100, inclusive: bool = False,
                       seq_len: Optional[int] = None, dtype: torch.dtype = torch.float32,
                       validate_args: bool = True):
    """Sparse TOP targets: for each position, the <= W (token, score) pairs that are finite.

    Same parameters and semantics as :func:`top_targets`, but nothing of size B*T*V is
    built: memory is O(B T W). ``validate_args=False`` skips the check that every id is in
    ``[0, vocab_size)`` or ``ignore_index`` (it reads the labels on the host: one device
    synchronisation per call on an accelerator); use it in a training loop over data checked
    once, as torchmetrics' ``validate_args`` does.

    Returns
    -------
    idx : LongTensor of shape (B, T, S)
        Token ids at offsets ``1..S`` (S = W, or W + 1 when ``inclusive``); 0 where unused.
    score : Tensor of shape (B, T, S)
        ``W + 1 - offset`` for the first occurrence of each token in the window, ``-inf``
        for repeats, ignored ids and padding.

    Examples
    --------
    >>> import torch
    >>> idx, score = top_targets_sparse(torch.tensor([[2, 1, 2, 0]]), 4, window=3, seq_len=1)
    >>> idx.tolist(), score.tolist()
    ([[[2, 1, 0]]], [[[3.0, 2.0, -inf]]])

    References
    ----------
    Zuhri et al., ICML 2026 (arXiv:2508.19228).
    """
    rows, seq_len, span = _label_rows(labels, vocab_size, window, ignore_index, inclusive, seq_len,
                                      validate=validate_args)
    valid = rows != ignore_index
    prev = _previous_occurrence(rows, valid, vocab_size)
    win_tok = rows.unfold(1, span, 1)[:, :seq_len]      # (B, T, S): label index t + d
    win_valid = valid.unfold(1, span, 1)[:, :seq_len]
    win_prev = prev.unfold(1, span, 1)[:, :seq_len]
    position = torch.arange(seq_len, device=rows.device).view(1, -1, 1)
    first = win_valid & (win_prev < position)
    offset_score = torch.arange(window, window - span, -1, dtype=dtype, device=rows.device)
    score = torch.where(first, offset_score, torch.tensor(float("-inf"), dtype=dtype))
    idx = torch.where(first, win_tok, 0)
    return idx, score


# -- losses ---------------------------------------------------------------------------

def _reduce_rows(row_loss: torch.Tensor, has_target: torch.Tensor, reduction: str) -> torch.Tensor:
    row_loss = torch.where(has_target, row_loss, torch.zeros((), dtype=row_loss.dtype))
    if reduction == "none":
        return row_loss
    if reduction == "sum":
        return row_loss.sum()
    return row_loss.sum() / has_target.sum().clamp_min(1)


def _target_distribution(target_scores: torch.Tensor, validate: bool = True):
    """softmax over the finite target scores; (q, finite mask, row has any finite).

    ``validate`` checks for NaN / +inf in one reduction (one host read)."""
    if validate and bool((torch.isnan(target_scores) | torch.isposinf(target_scores)).any()):
        raise ValueError("targets contains NaN or +inf; expected finite scores or -inf for absent")
    finite = torch.isfinite(target_scores)
    has_target = finite.any(dim=-1)
    filled = torch.where(finite, target_scores.float(), torch.tensor(float("-inf")))
    filled = torch.where(has_target.unsqueeze(-1), filled, torch.zeros(()))
    q = torch.where(finite, torch.softmax(filled, dim=-1), torch.zeros(()))
    return q, finite, has_target


def listnet_loss(scores: torch.Tensor, targets: torch.Tensor, reduction: str = "mean",
                 validate_args: bool = True) -> torch.Tensor:
    """ListNet top-one loss ``-sum_v softmax(targets)_v log softmax(scores)_v`` per row.

    Parameters
    ----------
    scores : Tensor of shape (..., V)
        Model scores (any float dtype; the log-softmax is taken in float32).
    targets : Tensor of shape (..., V)
        Target scores, ``-inf`` for items outside the list (as :func:`top_targets` gives).
    reduction : {"mean", "sum", "none"}
        "mean" averages over rows that have at least one finite target; rows without one
        contribute 0 and are excluded from the mean (the reference counts them in the
        denominator; at pretraining scale there are none).
    validate_args : bool
        Check ``targets`` for NaN / +inf (one host read of a reduction; skip it in a training
        loop whose targets are built by :func:`top_targets`).

    Returns
    -------
    Tensor
        Scalar, or per-row losses of shape ``scores.shape[:-1]`` for "none".

    Notes
    -----
    The gradient with respect to ``scores`` is ``softmax(scores) - softmax(targets)``.

    Examples
    --------
    >>> import torch
    >>> round(float(listnet_loss(torch.zeros(1, 4), torch.tensor([[0., float("-inf"), 0., float("-inf")]]))), 4)
    1.3863

    References
    ----------
    Cao et al., "Learning to rank: from pairwise approach to listwise approach", ICML 2007;
    Zuhri et al., ICML 2026 (arXiv:2508.19228).
    """
    check_choice(reduction, "reduction", ["mean", "sum", "none"])
    check_tensor(scores, "scores", finite=False, floating=True)
    check_tensor(targets, "targets", finite=False, floating=True)
    if scores.shape != targets.shape:
        raise ValueError(f"scores and targets must have the same shape, got {tuple(scores.shape)} "
                         f"and {tuple(targets.shape)}")
    q, finite, has_target = _target_distribution(targets, validate_args)
    log_p = F.log_softmax(scores.float(), dim=-1)
    row_loss = -(q * torch.where(finite, log_p, torch.zeros(()))).sum(dim=-1)
    return _reduce_rows(row_loss, has_target, reduction)


def sparse_listnet_loss(scores: torch.Tensor, idx: torch.Tensor, target_scores: torch.Tensor,
                        reduction: str = "mean", validate_args: bool = True) -> torch.Tensor:
    """:func:`listnet_loss` with targets given as (idx, score) lists from :func:`top_targets_sparse`.

    Parameters
    ----------
    scores : Tensor of shape (..., V)
    idx : LongTensor of shape (..., S)
        Item ids of the listed entries.
    target_scores : Tensor of shape (..., S)
        Their target scores (``-inf`` = unused slot). Ids must be distinct among finite slots.
    reduction : {"mean", "sum", "none"}
    validate_args : bool
        Check ``target_scores`` for NaN / +inf (see :func:`listnet_loss`).

    Examples
    --------
    >>> import torch
    >>> u = torch.zeros(1, 4)
    >>> round(float(sparse_listnet_loss(u, torch.tensor([[0, 2]]), torch.tensor([[0., 0.]]))), 4)
    1.3863
    """
    check_choice(reduction, "reduction", ["mean", "sum", "none"])
    check_tensor(scores, "scores", finite=False)
    if idx.shape != target_scores.shape or idx.shape[:-1] != scores.shape[:-1]:
        raise ValueError(f"idx {tuple(idx.shape)} and target_scores {tuple(target_scores.shape)} must "
                         f"match each other and scores {tuple(scores.shape)} except the last axis")
    q, finite, has_target = _target_distribution(target_scores, validate_args)
    log_p = F.log_softmax(scores.float(), dim=-1).gather(-1, idx)
    row_loss = -(q * torch.where(finite, log_p, torch.zeros(()))).sum(dim=-1)
    return _reduce_rows(row_loss, has_target, reduction)


def causal_lm_loss(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Mean cross-entropy over non-ignored targets (0, still differentiable, when none).

    Parameters
    ----------
    logits : Tensor of shape (B, T, V)
    targets : LongTensor of shape (B, T), already aligned (``targets[:, t]`` for position t).
    ignore_index : int
    """
    flat = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=ignore_index, reduction="sum")
    count = (targets != ignore_index).sum().clamp_min(1)
    return flat / count


def shift_labels(labels: torch.Tensor, lookahead_labels: Optional[torch.Tensor] = None,
                 ignore_index: int = -100) -> torch.Tensor:
    """Hugging Face-style labels (aligned with ``input_ids``) -> per-position target row.

    ``row[:, t]`` is the target of position ``t``: ``labels[:, t + 1]``, continuing into
    ``lookahead_labels`` (the tokens after the input block), padded with one
    ``ignore_index`` at the end. Length ``T + len(lookahead)``.

    Examples
    --------
    >>> import torch
    >>> shift_labels(torch.tensor([[5, 6, 7]]), torch.tensor([[8, 9]])).tolist()
    [[6, 7, 8, 9, -100]]
    """
    parts = [labels[:, 1:]]
    if lookahead_labels is not None:
        check_tensor(lookahead_labels, "lookahead_labels", ndim=2, finite=False)
        if lookahead_labels.shape[0] != labels.shape[0]:
            raise ValueError(f"lookahead_labels has batch {lookahead_labels.shape[0]}, labels has "
                             f"{labels.shape[0]}; expected the same batch size")
        parts.append(lookahead_labels.to(labels.dtype))
    parts.append(labels.new_full((labels.shape[0], 1), ignore_index))
    return torch.cat(parts, dim=1)


# -- modules --------------------------------------------------------------------------

class TOPHead(nn.Module):
    """The extra unembedding ``u_t = W_T h_t`` (no bias, Normal(0, init_std) init).

    Parameters
    ----------
    hidden_size : int
    vocab_size : int
    init_std : float
        0.02 as in the star-graph GPT (the LM configs use 0.006).

    References
    ----------
    Zuhri, Fuadi & Aji, "Predicting the Order of Upcoming Tokens Improves Language Modeling", ICML
    2026 (arXiv:2508.19228).

    Examples
    --------
    >>> import torch
    >>> TOPHead(8, 5)(torch.zeros(2, 3, 8)).shape
    torch.Size([2, 3, 5])
    """

    def __init__(self, hidden_size: int, vocab_size: int, init_std: float = 0.02):
        super().__init__()
        check_int(hidden_size, "hidden_size", min_value=1)
        check_int(vocab_size, "vocab_size", min_value=2)
        check_scalar_in(init_std, "init_std", low=0.0, low_inclusive=False)
        self.proj = nn.Linear(hidden_size, vocab_size, bias=False)
        nn.init.normal_(self.proj.weight, mean=0.0, std=init_std)

    @property
    def weight(self) -> torch.Tensor:
        return self.proj.weight

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.proj(hidden)


@dataclass
class TOPOutput(ModelOutput):
    """Output of :class:`TOPLoss` and :class:`TOPForCausalLM`.

    References
    ----------
    Zuhri, Fuadi & Aji, "Predicting the Order of Upcoming Tokens Improves Language Modeling", ICML
    2026 (arXiv:2508.19228). Follows the ``transformers.utils.ModelOutput`` convention.

    Examples
    --------
    >>> import torch, torch.nn as nn
    >>> out = TOPLoss(window=4)(torch.randn(2, 6, 8), torch.randint(0, 5, (2, 10)),
    ...                         nn.Linear(8, 5), TOPHead(8, 5))
    >>> isinstance(out, TOPOutput), out.top_logits.shape
    (True, torch.Size([2, 6, 5]))
    """

    loss: Optional[torch.Tensor] = None
    ntp_loss: Optional[torch.Tensor] = None
    top_loss: Optional[torch.Tensor] = None
    logits: Optional[torch.Tensor] = None
    top_logits: Optional[torch.Tensor] = None


class TOPLoss(nn.Module):
    """``L_NTP + top_weight * L_TOP`` from final hidden states and a label row.

    Parameters
    ----------
    window : int or None
        W; ``None`` means W = T (the sequence length of each call), as in the paper
        (T = W = 4096) and the star-graph task.
    top_weight : float
        Weight of the TOP term (the reference adds it unweighted: 1.0).
    ignore_index : int
    positions : {"window", "labelled"}
        Which positions the TOP loss covers. "window" (default, the reference code, also its
        star-graph GPT): every position whose look-ahead window holds a target token.
        "labelled": only positions that have a next-token label (``labels[:, t] !=
        ignore_index``) — the spec's reading of the star-graph setup ("TOP loss only on
        target positions"), kept as an option (resolution, not from the paper).
    validate_args : bool
        Check label ids and target scores on every call (default). ``False`` skips the two
        host reads these checks make, so that a training step on an accelerator never waits
        for the device (NTP's step makes none); check the data once instead.

    Notes
    -----
    ``forward(hidden, labels, lm_head, top_head)`` takes ``hidden`` (B, T, d) and a target
    row ``labels`` (B, L >= T) with ``labels[:, t]`` the next-token target of position t and
    columns ``T..`` the look-ahead (padded with ``ignore_index`` when shorter than T + W).
    The TOP targets are built sparsely (:func:`top_targets_sparse`), so no B*T*V target
    tensor exists.

    References
    ----------
    Zuhri, Fuadi & Aji, "Predicting the Order of Upcoming Tokens Improves Language Modeling", ICML
    2026 (arXiv:2508.19228). The listwise loss is ListNet: Cao et al., "Learning to rank: from
    pairwise approach to listwise approach", ICML 2007.

    Examples
    --------
    >>> import torch, torch.nn as nn
    >>> loss = TOPLoss(window=4)
    >>> out = loss(torch.randn(2, 6, 8), torch.randint(0, 5, (2, 10)), nn.Linear(8, 5), TOPHead(8, 5))
    >>> sorted(k for k in out.keys())
    ['logits', 'loss', 'ntp_loss', 'top_logits', 'top_loss']
    """

    def __init__(self, window: Optional[int] = None, top_weight: float = 1.0,
                 ignore_index: int = -100, positions: str = "window", validate_args: bool = True):
        super().__init__()
        if window is not None:
            check_int(window, "window", min_value=1)
        check_scalar_in(top_weight, "top_weight", low=0.0)
        check_int(ignore_index, "ignore_index")
        check_choice(positions, "positions", ["window", "labelled"])
        self.window = window
        self.top_weight = top_weight
        self.ignore_index = ignore_index
        self.positions = positions
        self.validate_args = bool(validate_args)

    def targets(self, labels: torch.Tensor, vocab_size: int, window: int, seq_len: int):
        """The sparse TOP targets ``(idx, score)`` for a label row (override to alter them)."""
        return top_targets_sparse(labels, vocab_size, window, self.ignore_index, seq_len=seq_len,
                                  validate_args=self.validate_args)

    def forward(self, hidden: torch.Tensor, labels: torch.Tensor, lm_head: nn.Module,
                top_head: nn.Module) -> TOPOutput:
        check_tensor(hidden, "hidden", ndim=3, finite=False)
        batch, seq_len, _ = hidden.shape
        if labels.ndim != 2 or labels.shape[0] != batch or labels.shape[1] < seq_len:
            raise ValueError(f"labels must have shape (B, L >= T) = ({batch}, >= {seq_len}), "
                             f"got {tuple(labels.shape)}")
        logits = lm_head(hidden)
        top_logits = top_head(hidden)
        vocab = logits.shape[-1]
        window = seq_len if self.window is None else self.window
        idx, target_scores = self.targets(labels, vocab, window, seq_len)
        ntp = causal_lm_loss(logits, labels[:, :seq_len], self.ignore_index)
        if self.positions == "labelled":  # unlabelled positions become empty rows: excluded
            labelled = (labels[:, :seq_len] != self.ignore_index).unsqueeze(-1)
            target_scores = torch.where(labelled, target_scores, float("-inf"))
        top = sparse_listnet_loss(top_logits, idx, target_scores, validate_args=self.validate_args)
        return TOPOutput(loss=ntp + self.top_weight * top, ntp_loss=ntp, top_loss=top,
                         logits=logits, top_logits=top_logits)


def final_hidden(model: nn.Module, input_ids: torch.Tensor, attention_mask=None) -> torch.Tensor:
    """The normed final hidden states of a causal LM via its ``get_decoder()``."""
    decoder = model.get_decoder()
    kwargs = {} if attention_mask is None else {"attention_mask": attention_mask}
    return decoder(input_ids=input_ids, **kwargs).last_hidden_state


class TOPForCausalLM(nn.Module):
    """Wrap a causal LM (Hugging Face or :class:`~icml26.top.gpt.TinyGPT`) with a TOP head.

    Parameters
    ----------
    model : nn.Module
        Any causal LM exposing ``get_decoder()`` (returns an object with
        ``last_hidden_state``, after the final norm) and ``get_output_embeddings()``
        — e.g. ``transformers.LlamaForCausalLM`` or ``AutoModelForCausalLM`` models.
    window : int or None
        W (``None``: W = T of each batch).
    top_weight : float
        Weight of the TOP loss (reference: 1.0, unweighted sum).
    ignore_index : int
    init_std : float
        Init std of the TOP head (default: the model config's ``initializer_range`` if it
        has one, else 0.02).
    positions : {"window", "labelled"}
        Positions the TOP loss covers (see :class:`TOPLoss`; default "window", the reference).
    validate_args : bool
        Check ``input_ids`` and ``labels`` ids on every call (default); ``False`` skips the
        host reads (see :class:`TOPLoss`).

    Notes
    -----
    ``forward(input_ids, labels=None, lookahead_labels=None, attention_mask=None,
    return_top_logits=False)``: ``labels`` follow the Hugging Face convention (aligned with
    ``input_ids``; shifted inside); ``lookahead_labels`` (B, W') are the tokens after the
    block, giving every position a full window as in the paper's 2T-token rows (§2.4).
    Without labels only the NTP logits are computed: the TOP head is unused at inference.
    :meth:`generate` decodes with the next-token head (through the wrapped model's own
    ``generate`` when it has one); :meth:`save_pretrained` / :meth:`from_pretrained` save and
    load a wrapped Hugging Face model with its TOP head (``state_dict()`` works for any model).

    Examples
    --------
    >>> import torch
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> cfg = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...                   num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)
    >>> wrapped = TOPForCausalLM(LlamaForCausalLM(cfg), window=4)
    >>> ids = torch.randint(0, 32, (2, 8))
    >>> out = wrapped(ids, labels=ids, lookahead_labels=torch.randint(0, 32, (2, 4)))
    >>> bool(out.loss > 0), out.logits.shape
    (True, torch.Size([2, 8, 32]))

    References
    ----------
    Zuhri et al., ICML 2026 (arXiv:2508.19228).
    """

    def __init__(self, model: nn.Module, window: Optional[int] = None, top_weight: float = 1.0,
                 ignore_index: int = -100, init_std: Optional[float] = None,
                 positions: str = "window", validate_args: bool = True):
        super().__init__()
        for accessor in ("get_decoder", "get_output_embeddings"):
            if not callable(getattr(model, accessor, None)):
                raise TypeError(f"model must be a causal LM with {accessor}(), got "
                                f"{type(model).__name__}")
        self.model = model
        lm_head = model.get_output_embeddings()
        hidden_size, vocab_size = lm_head.weight.shape[1], lm_head.weight.shape[0]
        if init_std is None:
            init_std = getattr(getattr(model, "config", None), "initializer_range", 0.02)
        self.top_head = TOPHead(hidden_size, vocab_size, init_std=init_std)
        self.loss_fn = TOPLoss(window=window, top_weight=top_weight, ignore_index=ignore_index,
                               positions=positions, validate_args=validate_args)
        self.validate_args = bool(validate_args)
        self.vocab_size = vocab_size
        self.ignore_index = ignore_index

    def forward(self, input_ids: torch.Tensor, labels: Optional[torch.Tensor] = None,
                lookahead_labels: Optional[torch.Tensor] = None, attention_mask=None,
                return_top_logits: bool = False) -> TOPOutput:
        if self.validate_args:
            check_labels(input_ids, self.vocab_size, ignore_index=0, name="input_ids")
        hidden = final_hidden(self.model, input_ids, attention_mask)
        lm_head = self.model.get_output_embeddings()
        if labels is None:
            top_logits = self.top_head(hidden) if return_top_logits else None
            return TOPOutput(logits=lm_head(hidden), top_logits=top_logits)
        if labels.shape != input_ids.shape:
            raise ValueError(f"labels must have the shape of input_ids {tuple(input_ids.shape)}, "
                             f"got {tuple(labels.shape)}")
        row = shift_labels(labels, lookahead_labels, self.ignore_index)
        return self.loss_fn(hidden, row, lm_head, self.top_head)

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, **kwargs) -> torch.Tensor:
        """Generate with the next-token head only (the TOP head is unused at inference).

        A wrapped Hugging Face model generates through its own ``generate`` with every option
        it takes (``max_new_tokens``, ``do_sample``, ``attention_mask``, ...); the result is
        the same as ``lm.model.generate(...)``. A model without ``generate`` (e.g.
        :class:`~icml26.top.gpt.TinyGPT`) is decoded greedily for ``max_new_tokens``
        (default 20) tokens, the only option it takes.

        Returns
        -------
        LongTensor of shape (B, T + new tokens): the prompt followed by the generated ids.
        """
        check_labels(input_ids, self.vocab_size, ignore_index=0, name="input_ids")
        if callable(getattr(self.model, "generate", None)):
            return self.model.generate(input_ids, **kwargs)
        unknown = sorted(set(kwargs) - {"max_new_tokens"})
        if unknown:
            raise TypeError(f"{type(self.model).__name__} has no generate(); greedy decoding "
                            f"takes only max_new_tokens, got {unknown}")
        max_new = kwargs.get("max_new_tokens", 20)
        check_int(max_new, "max_new_tokens", min_value=0)
        limit = getattr(getattr(self.model, "config", None), "block_size", None)
        if limit is not None and input_ids.shape[1] + max_new > limit:
            raise ValueError(f"prompt length {input_ids.shape[1]} + max_new_tokens={max_new} "
                             f"exceeds the model's block_size={limit}")
        was_training, ids = self.training, input_ids
        self.eval()
        for _ in range(max_new):
            ids = torch.cat([ids, self(ids).logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        self.train(was_training)
        return ids

    def save_pretrained(self, save_directory: str, **kwargs) -> None:
        """Save a wrapped Hugging Face model, its TOP head and the TOP settings.

        ``save_directory`` holds an ordinary Hugging Face checkpoint of the wrapped model
        (``AutoModelForCausalLM.from_pretrained(save_directory)`` loads it without the TOP
        head, as for inference), plus ``top_head.safetensors`` and ``top_config.json``
        (window, top_weight, ignore_index, positions) for :meth:`from_pretrained`.
        ``kwargs`` go to the wrapped model's ``save_pretrained``. A custom ``loss_fn`` is not
        saved. Models without ``save_pretrained`` (e.g. ``TinyGPT``): save ``state_dict()``
        and load it into a wrapper built the same way.
        """
        save = getattr(self.model, "save_pretrained", None)
        if not callable(save):
            raise TypeError(f"save_pretrained needs a Hugging Face model; {type(self.model).__name__} "
                            "has none: use torch.save(lm.state_dict(), path) and "
                            "lm.load_state_dict(torch.load(path)) on a wrapper built the same way")
        from safetensors.torch import save_file

        os.makedirs(save_directory, exist_ok=True)
        save(save_directory, **kwargs)
        save_file({"weight": self.top_head.weight.detach().contiguous()},
                  os.path.join(save_directory, TOP_HEAD_FILE))
        settings = {"window": self.loss_fn.window, "top_weight": self.loss_fn.top_weight,
                    "ignore_index": self.ignore_index, "positions": self.loss_fn.positions}
        with open(os.path.join(save_directory, TOP_CONFIG_FILE), "w") as fh:
            json.dump(settings, fh, indent=2)

    @classmethod
    def from_pretrained(cls, save_directory: str, model_class=None, **kwargs) -> "TOPForCausalLM":
        """Load what :meth:`save_pretrained` wrote.

        Parameters
        ----------
        save_directory : str
        model_class : class, optional
            The wrapped model's class (default ``transformers.AutoModelForCausalLM``).
        **kwargs
            Passed to ``model_class.from_pretrained`` (``dtype``, ...).
        """
        from safetensors.torch import load_file

        paths = [os.path.join(save_directory, name) for name in (TOP_CONFIG_FILE, TOP_HEAD_FILE)]
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise FileNotFoundError(f"save_directory={save_directory!r} is not a TOPForCausalLM "
                                    f"checkpoint: missing {', '.join(missing)}")
        if model_class is None:
            from transformers import AutoModelForCausalLM as model_class
        with open(paths[0]) as fh:
            settings = json.load(fh)
        lm = cls(model_class.from_pretrained(save_directory, **kwargs), **settings)
        weight = load_file(paths[1])["weight"]
        if weight.shape != lm.top_head.weight.shape:
            raise ValueError(f"{paths[1]} holds a TOP head of shape {tuple(weight.shape)}; the model "
                             f"needs {tuple(lm.top_head.weight.shape)}")
        lm.top_head.proj.weight.data.copy_(weight.to(lm.top_head.weight.dtype))
        return lm


def ndcg_at_k(scores: torch.Tensor, targets: torch.Tensor, k: int = 10,
              gain: str = "binary") -> torch.Tensor:
    """NDCG@k of the ranking induced by ``scores`` against the TOP window (per row).

    Discount ``1 / log2(rank + 1)``. With ``gain="binary"`` (the spec's definition) an item
    gains 1 when it has a finite target score (a token truly in the window) and 0 otherwise;
    the ideal DCG puts all in-window tokens first (their order among themselves does not
    change a binary-gain DCG). With ``gain="graded"`` an in-window item gains its TOP target
    score ``W + 1 - k`` (the next token most, the token first seen at offset W least), so the
    metric also rewards getting the *order* right; the ideal DCG sorts the gains. With
    ``gain="exponential"`` the gain is ``2**(W + 1 - k) - 1`` (Burges et al.'s exponential
    gain on the same graded relevance, computed in float64): the nearest upcoming tokens
    dominate. Rows without any in-window token give NaN, so callers can drop them.

    Parameters
    ----------
    scores : Tensor of shape (..., V)
    targets : Tensor of shape (..., V)
        Dense TOP targets (``-inf`` = not in the window), e.g. from :func:`top_targets`.
    k : int
    gain : {"binary", "graded", "exponential"}
        "graded" and "exponential" are our additions (resolution, not from the paper).

    Returns
    -------
    Tensor of shape ``scores.shape[:-1]``

    Examples
    --------
    >>> import torch
    >>> inf = float("-inf")
    >>> float(ndcg_at_k(torch.tensor([[3., 2., 1.]]), torch.tensor([[1., inf, inf]]), k=2)[0])
    1.0
    >>> round(float(ndcg_at_k(torch.tensor([[2., 1.]]), torch.tensor([[1., 2.]]), gain="graded")[0]), 4)
    0.8597
    """
    check_int(k, "k", min_value=1)
    check_choice(gain, "gain", ["binary", "graded", "exponential"])
    check_tensor(scores, "scores", finite=False, floating=True)
    if bool(torch.isnan(scores).any()):  # a NaN score has no rank; ±inf ranks first/last
        raise ValueError("scores contains NaN; a NaN score has no rank")
    check_tensor(targets, "targets", finite=False, floating=True)
    if scores.shape != targets.shape:
        raise ValueError(f"scores and targets must have the same shape, got {tuple(scores.shape)} "
                         f"and {tuple(targets.shape)}")
    k = min(k, scores.shape[-1])
    finite = torch.isfinite(targets)
    if gain == "binary":
        gains = finite.float()
    else:
        if bool((finite & (targets <= 0)).any()):
            raise ValueError(f"{gain} NDCG needs positive target scores for in-window items "
                             "(TOP scores W + 1 - k >= 1); got a score <= 0")
        if gain == "graded":
            gains = torch.where(finite, targets.float(), 0.0)
        else:
            gains = torch.where(finite, torch.exp2(targets.double()) - 1, 0.0)
    top = scores.float().topk(k, dim=-1).indices
    discount = 1.0 / torch.log2(torch.arange(2, k + 2, dtype=gains.dtype, device=scores.device))
    dcg = (gains.gather(-1, top) * discount).sum(-1)
    ideal = (gains.topk(k, dim=-1).values * discount).sum(-1)
    ndcg = (dcg / ideal.clamp_min(1e-12)).to(torch.float32)
    return torch.where(finite.any(-1), ndcg, float("nan"))
