"""Layer-wise capacity / accessibility profiles of a Hugging Face causal LM, via forward hooks.

Reference: *Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs*
(ICML 2026). Metric definitions are a **Resolution (not from the paper)**; see
:mod:`icml26.accessibility.metrics`.

Hidden states are read with forward *pre*-hooks on the model's real modules: ``h^ℓ`` for
``ℓ < L`` is the input of decoder block ``ℓ`` (``h^0`` = the embeddings), and ``h^L`` is the
input of the final norm. So every state, the last included, is the **pre-norm residual
stream**. (In ``transformers`` the last entry of ``output_hidden_states`` is taken *after* the
final norm for Llama/Qwen/GPT-2 models; using it as ``h^L`` is a common mistake.)

Examples
--------
>>> from icml26.zoo import tiny_llama
>>> model = tiny_llama(vocab=50, hidden=32, layers=2, heads=4, seed=0)
>>> ids = torch.randint(50, (2, 40), generator=torch.Generator().manual_seed(0))
>>> sorted(residual_states(model, ids))
[0, 1, 2]
>>> profile(model, ids, ks=(4,)).shape[0]
3
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import warnings
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from icml26.core.validation import check_choice, check_int

from .metrics import (ACCESS_KS, LayerStats, accessibility_metrics, capacity_metrics,
                      readout_basis_from_weights, rms_normalize)

__all__ = ["ModelParts", "model_parts", "readout_basis", "residual_states", "collect_layer_stats",
           "logit_lens", "profile", "ProfilePass", "profile_pass", "profile_table", "TOKEN_NORMS"]

TOKEN_NORMS = ("none", "rms")

# (decoder path, layers attribute, final norm attribute) for the HF families we know.
_LAYOUTS = (
    ("model", "layers", "norm"),                         # Llama, Mistral, Qwen2/3, Gemma, Phi3
    ("model.language_model", "layers", "norm"),          # multimodal wrappers (LLaVA-style)
    ("transformer", "h", "ln_f"),                        # GPT-2, GPT-J, Falcon
    ("model.decoder", "layers", "final_layer_norm"),     # OPT
    ("gpt_neox", "layers", "final_layer_norm"),          # GPT-NeoX, Pythia
)


@dataclass
class ModelParts:
    """The modules a profile needs: decoder blocks, final norm, unembedding.

    Attributes
    ----------
    layers : list of torch.nn.Module
        The ``L`` decoder blocks, in order.
    norm : torch.nn.Module
        The final norm (RMSNorm or LayerNorm) applied before the unembedding.
    lm_head : torch.nn.Module
        The unembedding (``model.get_output_embeddings()``), weight ``(V, d)``.
    gamma : Tensor or None
        The final norm's gain (``norm.weight``), or None when it has none.

    References
    ----------
    "Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs", ICML 2026
    (authors not retrieved; see the package README). The readout (final norm and unembedding) is
    the logit lens of nostalgebraist, "interpreting GPT: the logit lens", LessWrong, 2020.

    Examples
    --------
    >>> from icml26.accessibility import model_parts
    >>> from icml26.zoo import tiny_llama
    >>> parts = model_parts(tiny_llama(vocab=40, hidden=16, layers=2, heads=2, seed=0))
    >>> parts.n_layers, parts.d_model
    (2, 16)
    """

    layers: list
    norm: torch.nn.Module
    lm_head: torch.nn.Module
    gamma: torch.Tensor | None
    architecture: str = ""

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def d_model(self) -> int:
        return int(self.lm_head.weight.shape[1])

    def readout(self, states: torch.Tensor) -> torch.Tensor:
        """Logits ``W_U N_γ(h)`` of pre-norm states (float32)."""
        return self.lm_head(self.norm(states))


def _getattr_path(obj, path: str):
    for name in path.split("."):
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


def model_parts(model) -> ModelParts:
    """Find the decoder blocks, final norm and unembedding of a HF causal LM.

    Raises
    ------
    TypeError
        When ``model`` is not a ``torch.nn.Module``.
    ValueError
        When the model has no unembedding (``get_output_embeddings()`` is None) or no
        recognisable decoder-block list and final norm (the message names the class).
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (a Hugging Face causal LM), got {type(model).__name__}")
    name = type(model).__name__
    get_out = getattr(model, "get_output_embeddings", None)
    lm_head = get_out() if callable(get_out) else None
    if lm_head is None or getattr(lm_head, "weight", None) is None:
        raise ValueError(f"model ({name}) has no readout: get_output_embeddings() is None; a causal LM "
                         "with an unembedding (lm_head) is required")
    for decoder, layers_attr, norm_attr in _LAYOUTS:
        base = _getattr_path(model, decoder)
        if base is None:
            continue
        layers = getattr(base, layers_attr, None)
        norm = getattr(base, norm_attr, None)
        if isinstance(layers, torch.nn.ModuleList) and len(layers) > 0 and isinstance(norm, torch.nn.Module):
            gamma = getattr(norm, "weight", None)
            if lm_head.weight.ndim != 2 or (gamma is not None and gamma.shape[-1] != lm_head.weight.shape[1]):
                raise ValueError(f"model ({name}): final norm width {tuple(gamma.shape)} does not match the "
                                 f"unembedding {tuple(lm_head.weight.shape)}")
            return ModelParts(list(layers), norm, lm_head, None if gamma is None else gamma.detach(),
                              architecture=name)
    raise ValueError(f"model ({name}): cannot find its decoder blocks and final norm (known layouts: "
                     + ", ".join(f"{d}.{l} + {d}.{n}" for d, l, n in _LAYOUTS) + ")")


def readout_basis(model) -> tuple[torch.Tensor, torch.Tensor]:
    """Right singular basis ``(Q, sv)`` of ``W_eff = W_U diag(gamma)`` of a HF causal LM.

    See :func:`~icml26.accessibility.metrics.readout_basis_from_weights` (float64, eigh of
    the ``d × d`` Gram matrix). LayerNorm's bias ``β`` is ignored.
    """
    parts = model_parts(model)
    return readout_basis_from_weights(parts.lm_head.weight, parts.gamma)


def _first_tensor(args, kwargs, key: str = "hidden_states") -> torch.Tensor:
    if args and isinstance(args[0], torch.Tensor):
        return args[0]
    value = kwargs.get(key)
    if isinstance(value, torch.Tensor):
        return value
    raise RuntimeError("could not read the hidden states passed to a hooked module")


@contextlib.contextmanager
def _capture(parts: ModelParts, store: dict):
    """Pre-hooks that put the input of block ℓ at ``store[ℓ]`` and the final norm's input at ``store[L]``."""
    handles = []

    def make(index):
        def hook(module, args, kwargs):
            store[index] = _first_tensor(args, kwargs)
        return hook

    try:
        for i, layer in enumerate(parts.layers):
            handles.append(layer.register_forward_pre_hook(make(i), with_kwargs=True))
        handles.append(parts.norm.register_forward_pre_hook(make(parts.n_layers), with_kwargs=True))
        yield store
    finally:
        for h in handles:
            h.remove()


def _check_ids(input_ids, attention_mask=None, parts: ModelParts | None = None):
    """Checked ids and mask (long), moved to the model's device when ``parts`` is given."""
    if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.long or input_ids.ndim != 2:
        raise ValueError("input_ids must be a 2-D LongTensor of shape (batch, tokens)")
    if input_ids.shape[0] < 1 or input_ids.shape[1] < 1:
        raise ValueError(f"input_ids is empty (shape {tuple(input_ids.shape)})")
    if attention_mask is not None:
        attention_mask = torch.as_tensor(attention_mask)
        if attention_mask.shape != input_ids.shape:
            raise ValueError(f"attention_mask must have the shape of input_ids {tuple(input_ids.shape)}, "
                             f"got {tuple(attention_mask.shape)}")
        attention_mask = attention_mask.to(device=input_ids.device, dtype=torch.long)
    if parts is not None:
        device = parts.lm_head.weight.device
        input_ids = input_ids.to(device)
        attention_mask = None if attention_mask is None else attention_mask.to(device)
    return input_ids, attention_mask


def _check_layers(layers, n_layers: int) -> list[int]:
    if layers is None:
        return list(range(n_layers + 1))
    out = []
    for layer in layers:
        check_int(layer, "layers", min_value=0)
        if layer > n_layers:
            raise ValueError(f"layers must be in [0, {n_layers}] (0 = embeddings, {n_layers} = the final "
                             f"pre-norm state), got {layer}")
        out.append(int(layer))
    return out


@functools.lru_cache(maxsize=None)
def _keeps_logits(cls) -> bool:
    """Whether ``cls.forward`` takes ``logits_to_keep`` (HF causal LMs since transformers 4.45): with
    1, the forward skips the ``(tokens, V)`` readout that the hooks do not need."""
    try:
        return "logits_to_keep" in inspect.signature(cls.forward).parameters
    except (TypeError, ValueError):
        return False


@torch.no_grad()
def _forward_states(model, parts: ModelParts, input_ids, attention_mask=None) -> dict:
    store: dict = {}
    extra = {"logits_to_keep": 1} if _keeps_logits(type(model)) else {}   # the states are all we read
    with _capture(parts, store):
        model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **extra)
    expected = parts.n_layers + 1
    if len(store) != expected:
        raise RuntimeError(f"model ({parts.architecture}) produced {len(store)} hidden states, expected L+1 = "
                           f"{expected} (a block or the final norm was not called?)")
    return store


def residual_states(model, input_ids, layers: Sequence[int] | None = None, attention_mask=None) -> dict:
    """Pre-norm residual states ``h^ℓ`` of the requested layers (hook-based, float32 copies).

    Parameters
    ----------
    model : Hugging Face causal LM
    input_ids : LongTensor (B, T)
    layers : sequence of int in [0, L], optional
        ``0`` = embeddings (input of block 0), ``L`` = input of the final norm. Default: all.
    attention_mask : (B, T), optional

    Returns
    -------
    dict int -> Tensor (B, T, d)

    Raises
    ------
    ValueError
        For a layer index outside ``[0, L]`` or malformed ``input_ids``.
    FloatingPointError
        When a requested state holds NaN or infinity.
    """
    parts = model_parts(model)
    input_ids, attention_mask = _check_ids(input_ids, attention_mask, parts)
    wanted = _check_layers(layers, parts.n_layers)
    store = _forward_states(model, parts, input_ids, attention_mask)
    out = {}
    for layer in wanted:
        h = store[layer].detach().float().clone()
        if not bool(torch.isfinite(h).all()):
            raise FloatingPointError(f"hidden states of layer {layer} contain NaN or infinity")
        out[layer] = h
    return out


def _token_mask(input_ids, attention_mask, skip: int) -> torch.Tensor:
    mask = torch.ones(input_ids.shape, dtype=torch.bool, device=input_ids.device)
    mask[:, :skip] = False
    if attention_mask is not None:
        mask &= attention_mask.bool()
    return mask


def _label_mask(input_ids, attention_mask, skip: int):
    """Positions t with a next token (t < T−1, both real) and ``t >= skip``; labels = ids[:, t+1]."""
    mask = _token_mask(input_ids, attention_mask, skip)
    mask[:, -1] = False
    if attention_mask is not None:
        mask[:, :-1] &= attention_mask[:, 1:].bool()
    labels = torch.roll(input_ids, -1, dims=1)
    return mask, labels


@dataclass
class _Lens:
    ce: np.ndarray
    kl: np.ndarray
    agree: np.ndarray
    count: int = 0

    @classmethod
    def zeros(cls, n):
        return cls(np.zeros(n), np.zeros(n), np.zeros(n), 0)

    def means(self) -> dict:
        if self.count == 0:
            raise ValueError("no token with a next-token label (sequences too short for skip?)")
        return {"ce": self.ce / self.count, "kl_to_final": self.kl / self.count, "top1_agree": self.agree / self.count}


def _lens_logits(parts: ModelParts, states: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    """``W_U N_γ(h)`` in float32, into ``out`` when the unembedding is a float32 matrix without a bias
    (no fresh ``(n, V)`` allocation per layer), else through the module."""
    normed = parts.norm(states)
    weight = parts.lm_head.weight
    if out is not None and weight.dtype == torch.float32 and getattr(parts.lm_head, "bias", None) is None \
            and normed.dtype == torch.float32 and out.shape == (normed.shape[0], weight.shape[0]):
        return torch.mm(normed, weight.T, out=out)
    return parts.readout(states).float()


def _lens_update(acc: _Lens, parts: ModelParts, store: dict, labels, mask, layers: Sequence[int]):
    """Add one batch to the logit-lens sums.

    Per layer: ``CE = lse − z_y``; ``KL(p_final ‖ p_ℓ) = Σ p_f log p_f − p_f·z_ℓ + lse_ℓ`` (as
    ``Σ p_f = 1``), so no ``(n, V)`` log-probabilities are formed. Three ``(n, V)`` buffers are
    reused across layers (the logits, the final layer's softmax and a scratch softmax)."""
    from .pathway import _softmax_lse

    if not bool(mask.any()):
        return
    y = labels[mask][:, None]
    final_states = store[parts.n_layers][mask].float()
    shape = (final_states.shape[0], parts.lm_head.weight.shape[0])
    z_buf, scratch, p_final = (torch.empty(shape, dtype=torch.float32, device=final_states.device)
                               for _ in range(3))
    z = _lens_logits(parts, final_states, z_buf)
    lse_f = _softmax_lse(z, p_final)
    final_top = z.argmax(-1)
    zy_f = z.gather(1, y).squeeze(1)
    cross_f = torch.mul(p_final, z, out=scratch).sum(1)                  # p_f · z_L
    neg_entropy = cross_f - lse_f                                         # Σ p_f log p_f per token
    for layer in layers:
        if layer == parts.n_layers:   # the final layer's lens is the readout computed above
            zy, top, cross, lse = zy_f, final_top, cross_f, lse_f
        else:
            z = _lens_logits(parts, store[layer][mask].float(), z_buf)
            zy = z.gather(1, y).squeeze(1)
            top = z.argmax(-1)
            cross = torch.mul(p_final, z, out=scratch).sum(1)             # p_f · z_ℓ
            lse = _softmax_lse(z, scratch)
        if not bool(torch.isfinite(lse).all() and torch.isfinite(cross).all() and torch.isfinite(zy).all()):
            raise FloatingPointError(f"logit lens of layer {layer}: non-finite logits")
        acc.ce[layer] += float((lse - zy).sum())
        acc.kl[layer] += float((neg_entropy - cross + lse).sum())
        acc.agree[layer] += float((top == final_top).sum())
    acc.count += int(y.numel())


def logit_lens(model, states: dict, labels, mask=None) -> dict:
    """Logit-lens cross-entropy, KL to the final prediction, and top-1 agreement per layer.

    ``CE_lens(ℓ) = mean −log softmax(W_U N_γ(h^ℓ_t))[y_t]`` and ``KL(p_final ‖ p_lens(ℓ))``
    with ``p_final`` the readout of ``h^L`` (nostalgebraist 2020).

    Parameters
    ----------
    model : HF causal LM (its final norm and unembedding are used)
    states : dict int -> Tensor (B, T, d)
        Pre-norm states from :func:`residual_states`; must include layer ``L``.
    labels : LongTensor (B, T)
        Target token of each position (usually ``input_ids`` shifted left).
    mask : BoolTensor (B, T), optional
        Positions to score (default all).

    Returns
    -------
    dict int -> dict(ce, kl_to_final, top1_agree)
    """
    parts = model_parts(model)
    if parts.n_layers not in states:
        raise ValueError(f"states must include the final layer L={parts.n_layers} (the KL reference)")
    some = next(iter(states.values()))
    labels = torch.as_tensor(labels).to(some.device)
    if labels.shape != some.shape[:-1]:
        raise ValueError(f"labels must have shape {tuple(some.shape[:-1])}, got {tuple(labels.shape)}")
    mask = (torch.ones(labels.shape, dtype=torch.bool, device=some.device) if mask is None
            else torch.as_tensor(mask, dtype=torch.bool).to(some.device))
    acc = _Lens.zeros(parts.n_layers + 1)
    with torch.no_grad():
        _lens_update(acc, parts, states, labels, mask, sorted(states))
    means = acc.means()
    return {layer: {k: float(v[layer]) for k, v in means.items()} for layer in sorted(states)}


@dataclass
class ProfilePass:
    """What one forward pass over token blocks accumulated, per variant and token budget.

    Attributes
    ----------
    stats : dict (token_norm, skip, rows) -> list of LayerStats (one per layer 0..L)
    lens : dict rows -> dict(ce, kl_to_final, top1_agree) arrays over layers (skip = ``lens_skip``)
    align : dict rows -> dict(cos_update, update_ratio) arrays over layers (layer 0 is NaN)
    """

    stats: dict
    lens: dict
    align: dict
    n_layers: int
    d_model: int
    lens_skip: int
    budgets: tuple = ()
    meta: dict = field(default_factory=dict)


def _budget_splits(n_rows: int, batch_size: int, budgets: Sequence[int]):
    """Batch boundaries that also cut at every budget, so a snapshot lands exactly on it."""
    cuts = sorted(set(range(0, n_rows, batch_size)) | {b for b in budgets if 0 < b < n_rows} | {n_rows})
    return list(zip(cuts[:-1], cuts[1:]))


@torch.no_grad()
def profile_pass(model, input_ids, attention_mask=None, *, variants=(("none", 4),), budgets=None,
                 lens: bool = True, lens_skip: int = 4, batch_size: int = 4, progress=None) -> ProfilePass:
    """One streaming forward pass accumulating every statistic a depth profile needs.

    Parameters
    ----------
    model : HF causal LM
    input_ids : LongTensor (B, T); attention_mask : optional (B, T)
    variants : sequence of (token_norm, skip)
        ``token_norm`` in ``{"none", "rms"}`` (``"rms"``: each token divided by its RMS
        before the moments); ``skip``: leading positions of every row left out.
    budgets : sequence of int, optional
        Row counts at which to snapshot the statistics (e.g. ``(8, 16)``); default ``(B,)``.
    lens : bool
        Also accumulate the logit lens (the costly part: one ``d × V`` readout per layer).
    lens_skip : int
        Skip for the lens and the alignment diagnostics.
    batch_size : int
        Rows per forward call.

    Returns
    -------
    ProfilePass
    """
    parts = model_parts(model)
    input_ids, attention_mask = _check_ids(input_ids, attention_mask, parts)
    check_int(batch_size, "batch_size", min_value=1)
    check_int(lens_skip, "lens_skip", min_value=0)
    variants = [(check_choice(tn, "token_norm", TOKEN_NORMS), check_int(sk, "skip", min_value=0))
                for tn, sk in variants]
    if not variants:
        raise ValueError("variants must name at least one (token_norm, skip) pair")
    n_rows = input_ids.shape[0]
    budgets = tuple(sorted({n_rows} if budgets is None else {check_int(b, "budgets", min_value=1) for b in budgets}))
    if budgets[-1] > n_rows:
        raise ValueError(f"budgets must be <= the number of rows {n_rows}, got {budgets[-1]}")
    L, d = parts.n_layers, parts.d_model
    run_stats = {v: [LayerStats(d) for _ in range(L + 1)] for v in variants}
    run_lens = _Lens.zeros(L + 1)
    cos_sum, ratio_sum, align_count = np.zeros(L + 1), np.zeros(L + 1), 0
    out_stats, out_lens, out_align = {}, {}, {}
    for start, stop in _budget_splits(n_rows, batch_size, budgets):
        ids = input_ids[start:stop]
        am = None if attention_mask is None else attention_mask[start:stop]
        store = _forward_states(model, parts, ids, am)
        for layer in range(L + 1):
            if not bool(torch.isfinite(store[layer]).all()):
                raise FloatingPointError(f"hidden states of layer {layer} contain NaN or infinity "
                                         "(fp16 overflow? run the model in float32)")
        for (token_norm, skip), stats in run_stats.items():
            mask = _token_mask(ids, am, skip)
            for layer in range(L + 1):
                h = store[layer].double()
                stats[layer].update(rms_normalize(h) if token_norm == "rms" else h, mask)
        amask = _token_mask(ids, am, lens_skip)
        for layer in range(1, L + 1):
            prev, cur = store[layer - 1][amask].double(), store[layer][amask].double()
            delta = cur - prev
            pn = prev.norm(dim=-1).clamp_min(1e-30)
            cos_sum[layer] += float((torch.nn.functional.cosine_similarity(delta, prev, dim=-1, eps=1e-30)).sum())
            ratio_sum[layer] += float((delta.norm(dim=-1) / pn).sum())
        align_count += int(amask.sum())
        if lens:
            lmask, labels = _label_mask(ids, am, lens_skip)
            _lens_update(run_lens, parts, store, labels, lmask, range(L + 1))
        del store
        if stop in budgets:
            for v, stats in run_stats.items():
                out_stats[(v[0], v[1], stop)] = [s.copy() for s in stats]
            if lens:
                out_lens[stop] = run_lens.means()
            with np.errstate(invalid="ignore", divide="ignore"):
                cos = np.where(np.arange(L + 1) > 0, cos_sum / max(align_count, 1), np.nan)
                ratio = np.where(np.arange(L + 1) > 0, ratio_sum / max(align_count, 1), np.nan)
            out_align[stop] = {"cos_update": cos, "update_ratio": ratio}
        if progress is not None:
            progress(stop, n_rows)
    return ProfilePass(out_stats, out_lens, out_align, L, d, lens_skip, budgets)


def random_enrichment(cov, k: int, n_bases: int = 20, seed: int = 0) -> float:
    """Mean ``Â_k`` of ``cov`` over ``n_bases`` random orthonormal ``k``-frames (seeded, local generator).

    The negative control of the weak-access claims: a readout subspace unrelated to ``W_U``.

    Examples
    --------
    >>> round(random_enrichment(torch.eye(16, dtype=torch.float64), 4), 6)
    1.0
    """
    cov = torch.as_tensor(cov, dtype=torch.float64)
    d = cov.shape[0]
    check_int(k, "k", min_value=1)
    if k > d:
        raise ValueError(f"k={k} exceeds the hidden size d={d}")
    trace = float(torch.diagonal(cov).sum())
    if trace <= 0:
        return float("nan")
    g = torch.Generator().manual_seed(seed)
    vals = []
    for _ in range(check_int(n_bases, "n_bases", min_value=1)):
        Qk, _ = torch.linalg.qr(torch.randn(d, k, generator=g, dtype=torch.float64))
        vals.append(float((Qk * (cov @ Qk)).sum()) / trace * d / k)
    return float(np.mean(vals))


def profile_table(stats: Sequence[LayerStats], Q, sv, *, centered: bool = True, ks: Sequence[int] = ACCESS_KS,
                  lens: dict | None = None, align: dict | None = None, random_bases: int = 0) -> pd.DataFrame:
    """One row per layer: capacity, accessibility, and (when given) lens / alignment columns.

    Parameters
    ----------
    stats : list of LayerStats (layers 0..L)
    Q, sv : readout basis (:func:`readout_basis`)
    centered : bool
        Covariance (True) or raw second moment (False).
    ks : subspace sizes for the enrichment ``Â_k``
    lens, align : per-layer arrays from :class:`ProfilePass`
    random_bases : int
        When positive, add ``enrichment_<ks[0]>_random``: ``Â`` of the same covariance on this
        many random orthonormal frames (:func:`random_enrichment`; the access claims' control).

    Returns
    -------
    pandas.DataFrame with columns ``layer, n_tokens, entropy_norm, erank, participation_ratio,
    stable_rank, k90, enrichment_k…, access_k…, readout_energy`` [, ``ce_lens, kl_to_final,
    top1_agree``] [, ``cos_update, update_ratio``].
    """
    if not stats:
        raise ValueError("stats is empty")
    d = stats[0].d_model
    for k in ks:
        check_int(k, "k", min_value=1)
        if k > d:
            raise ValueError(f"k={k} exceeds the hidden size d={d}")
    n = stats[0].n_tokens
    if n < d:
        warnings.warn(f"only {n} tokens for hidden size {d}: the covariance is rank-deficient and erank is "
                      f"capped by N; use N >= 2d ({2 * d}) tokens for stable numbers", RuntimeWarning, stacklevel=2)
    elif n < 2 * d:
        warnings.warn(f"{n} tokens for hidden size {d}: fewer than 2d, spectral metrics are noisy",
                      RuntimeWarning, stacklevel=2)
    rows = []
    for layer, s in enumerate(stats):
        cov = s.cov(centered=centered)
        row = {"layer": layer, "n_tokens": s.n_tokens}
        row.update(capacity_metrics(cov))
        row.update(accessibility_metrics(cov, Q, sv, ks))
        if random_bases:
            row[f"enrichment_{ks[0]}_random"] = random_enrichment(cov, ks[0], random_bases)
        if lens is not None:
            row.update({"ce_lens": float(lens["ce"][layer]), "kl_to_final": float(lens["kl_to_final"][layer]),
                        "top1_agree": float(lens["top1_agree"][layer])})
        if align is not None:
            row.update({k: float(v[layer]) for k, v in align.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def collect_layer_stats(model, input_ids, attention_mask=None, skip: int = 4, token_norm: str = "none",
                        batch_size: int = 4) -> list:
    """Streaming float64 moments of the pre-norm states of every layer ``0..L``.

    Parameters
    ----------
    model : HF causal LM; input_ids : LongTensor (B, T); attention_mask : (B, T), optional
        Padding positions (mask 0) are excluded.
    skip : int
        Leading positions of each row left out (attention-sink / massive-activation tokens).
    token_norm : {"none", "rms"}
    batch_size : int

    Returns
    -------
    list of LayerStats (length L + 1)
    """
    run = profile_pass(model, input_ids, attention_mask, variants=((token_norm, skip),), lens=False,
                       lens_skip=skip, batch_size=batch_size)
    return run.stats[(token_norm, skip, input_ids.shape[0])]


def profile(model, input_ids, attention_mask=None, *, skip: int = 4, token_norm: str = "none",
            centered: bool = True, ks: Sequence[int] = ACCESS_KS, lens: bool = True,
            batch_size: int = 4, random_bases: int = 0) -> pd.DataFrame:
    """The depth profile of a causal LM: capacity, accessibility and logit lens per layer.

    Parameters
    ----------
    model : Hugging Face causal LM (Llama/Qwen/Mistral, GPT-2, OPT, GPT-NeoX layouts)
    input_ids : LongTensor (B, T); attention_mask : optional
    skip : int
        Leading positions dropped from every row (default 4).
    token_norm : {"none", "rms"}
        ``"rms"`` divides every token by its RMS before the moments.
    centered : bool
        Covariance (True) or raw second moment (False).
    ks : subspace sizes of the enrichment ``Â_k`` (each ≤ d)
    lens : bool
        Include the logit-lens columns.
    batch_size : int
    random_bases : int
        Random readout frames for the ``enrichment_<k>_random`` control column (0: none).

    Returns
    -------
    pandas.DataFrame, one row per layer ``0..L`` (see :func:`profile_table`).

    Examples
    --------
    >>> from icml26.zoo import tiny_llama
    >>> m = tiny_llama(vocab=40, hidden=16, layers=2, heads=2, seed=0)
    >>> ids = torch.randint(40, (2, 30), generator=torch.Generator().manual_seed(0))
    >>> list(profile(m, ids, ks=(4,)).columns[:4])
    ['layer', 'n_tokens', 'entropy_norm', 'erank']
    """
    parts = model_parts(model)
    input_ids, attention_mask = _check_ids(input_ids, attention_mask)
    check_choice(token_norm, "token_norm", TOKEN_NORMS)
    check_int(skip, "skip", min_value=0)
    for k in ks:
        check_int(k, "k", min_value=1)
        if k > parts.d_model:
            raise ValueError(f"k={k} exceeds the hidden size d={parts.d_model}")
    run = profile_pass(model, input_ids, attention_mask, variants=((token_norm, skip),), lens=lens,
                       lens_skip=skip, batch_size=batch_size)
    rows = input_ids.shape[0]
    Q, sv = readout_basis_from_weights(parts.lm_head.weight, parts.gamma)
    return profile_table(run.stats[(token_norm, skip, rows)], Q, sv, centered=centered, ks=ks,
                         lens=run.lens.get(rows), align=run.align.get(rows), random_bases=random_bases)
