"""Hook surface on Hugging Face decoder models (and the ToyLVLM, which mirrors their module names).

* residual stream ``h_l`` = output of decoder layer ``l`` (forward hook on ``layers[l]``);
* head ``c``'s output ``a^{(l,c)}`` = slice ``c`` of the input of ``self_attn.o_proj`` (pre-hook);
  its write into the residual stream is ``o^{(l,c)} = W_O[:, slice c] a^{(l,c)}``;
* MLP neuron ``n``'s activation ``m^{(l)}_n`` = column ``n`` of the input of ``mlp.down_proj`` (pre-hook);
* VEE: an attention function registered in ``transformers``' ``ALL_ATTENTION_FUNCTIONS`` under
  :data:`VEE_ATTENTION` (eager attention plus a ``ln β`` logit bias on visual keys for chosen
  (layer, head, query-position) triples), switched on only while an intervention is active.

Reference: Zhang, Sun, Xie, Tian, "Interpreting and Enhancing Emotional Circuits in Large
Vision-Language Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from icml26.core.validation import check_int
from icml26.zoo.hf import decoder_layers

__all__ = ["VEE_ATTENTION", "vee_attention_forward", "register_vee_attention", "HFAdapter",
           "ResidualAdd", "HeadReplace", "HeadMeanAblate", "NeuronScale", "AttentionBoost",
           "Capture", "check_heads"]

VEE_ATTENTION = "emotion_circuits_vee"


def _eager():
    from transformers.models.llama.modeling_llama import eager_attention_forward
    return eager_attention_forward


def vee_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """Eager attention with the VEE logit bias of ``module`` (if an intervention set one).

    Adding ``ln β`` to the pre-softmax logits of visual keys is the exact form of multiplying
    their post-softmax weights by ``β`` and renormalising the row (paper's VEE). Rows whose
    visual keys are all masked are unchanged. Same signature as ``transformers``' attention
    functions; returns ``(output, weights)``.
    """
    state = getattr(module, "_emotion_circuits_vee", None)
    if state is not None:
        bias = state.bias(query.shape[0], query.shape[2], key.shape[2], query.dtype, query.device)
        attention_mask = bias if attention_mask is None else attention_mask + bias
    return _eager()(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)


_REGISTERED = False


def register_vee_attention() -> str:
    """Register :func:`vee_attention_forward` (and the eager mask) under :data:`VEE_ATTENTION`."""
    global _REGISTERED
    if not _REGISTERED:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, eager_mask

        AttentionInterface.register(VEE_ATTENTION, vee_attention_forward)
        AttentionMaskInterface.register(VEE_ATTENTION, eager_mask)
        _REGISTERED = True
    return VEE_ATTENTION


def _positions(length: int, offset: int | None, device) -> torch.Tensor | None:
    """Absolute positions of a chunk of ``length`` tokens that starts at ``offset``; None when the
    offset is unknown (a caller's own ``generate``: a one-token chunk is then a cached decoding step)."""
    return None if offset is None else offset + torch.arange(length, device=device)


def _position_mask(length: int, from_pos: int | None, device, offset: int | None = 0,
                   only_first: bool = False) -> torch.Tensor:
    """Positions ``t >= from_pos`` (or ``t == from_pos``) of a chunk starting at ``offset``."""
    if from_pos is None:
        return torch.ones(length, dtype=torch.bool, device=device)
    pos = _positions(length, offset, device)
    if pos is None:
        pos = torch.arange(length, device=device) + (from_pos + 1 if length == 1 else 0)
    return pos == from_pos if only_first else pos >= from_pos


# -- edits ------------------------------------------------------------------------------------

@dataclass
class ResidualAdd:
    """Add ``vector`` ((d,) or (B, d)) to the output of layer ``layer`` at positions ``>= from_pos``
    (``only_first``: at ``from_pos`` only)."""

    layer: int
    vector: torch.Tensor
    from_pos: int | None = None
    only_first: bool = False


@dataclass
class HeadReplace:
    """Replace head ``head``'s output in layer ``layer`` by ``values`` ((B, T, head_dim)) at every position."""

    layer: int
    head: int
    values: torch.Tensor


@dataclass
class HeadMeanAblate:
    """Replace the outputs of ``heads`` in layer ``layer`` by their mean over the batch, per position."""

    layer: int
    heads: Sequence[int]


@dataclass
class NeuronScale:
    """Multiply MLP neurons ``neurons`` of layer ``layer`` by ``factor`` at positions ``>= from_pos``."""

    layer: int
    neurons: Sequence[int]
    factor: float
    from_pos: int | None = None


@dataclass
class AttentionBoost:
    """VEE: add ``ln beta`` to the logits of visual keys, from the query token ``query_pos`` in
    ``prefill_heads`` and from every later position in ``decode_heads`` (lists of (layer, head))."""

    prefill_heads: Sequence[tuple]
    decode_heads: Sequence[tuple]
    beta: float
    query_pos: int
    visual_mask: torch.Tensor     # (T0,) or (B, T0) bool over the prompt


@dataclass
class Capture:
    """What a forward pass records: residual outputs, head outputs, neuron activations, attention."""

    residual: bool = False
    heads: bool = False
    neurons: bool = False
    attention: bool = False
    store: dict = field(default_factory=lambda: {"residual": {}, "heads": {}, "neurons": {}, "attention": {}})


class _VEEState:
    def __init__(self, n_heads: int, prefill: Sequence[int], decode: Sequence[int], log_beta: float,
                 query_pos: int, visual_mask: torch.Tensor):
        self.prefill = torch.zeros(n_heads, dtype=torch.bool)
        self.prefill[list(prefill)] = True
        self.decode = torch.zeros(n_heads, dtype=torch.bool)
        self.decode[list(decode)] = True
        self.log_beta, self.query_pos, self.visual_mask = log_beta, query_pos, visual_mask.bool()

    def bias(self, batch: int, q_len: int, k_len: int, dtype, device) -> torch.Tensor:
        q_abs = torch.arange(k_len - q_len, k_len)
        rows = ((self.prefill[:, None] & (q_abs == self.query_pos)[None])
                | (self.decode[:, None] & (q_abs > self.query_pos)[None]))            # (H, Tq)
        vis = self.visual_mask if self.visual_mask.ndim == 2 else self.visual_mask[None]
        keys = torch.zeros(vis.shape[0], k_len, dtype=torch.bool)
        n = min(k_len, vis.shape[1])
        keys[:, :n] = vis[:, :n]
        if keys.shape[0] not in (1, batch):
            raise ValueError(f"visual_mask has {keys.shape[0]} rows but the batch has {batch}")
        bias = self.log_beta * (rows[None, :, :, None] & keys[:, None, None, :]).to(dtype)
        return bias.to(device)


def check_heads(heads, n_layers: int, n_heads: int, name: str = "heads", unit: str = "head",
                units: str = "heads") -> list:
    """A list of (layer, index) int pairs within range (ValueError naming ``name`` otherwise);
    also used for (layer, neuron) pairs with ``unit="neuron", units="MLP neurons"``."""
    out = []
    for item in heads:
        try:
            layer, head = (int(v) for v in item)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be (layer, {unit}) pairs, got {item!r}") from None
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(f"{name}: {unit} {(layer, head)} out of range for a model with "
                             f"{n_layers} layers x {n_heads} {units}")
        out.append((layer, head))
    return out


_find_layers = decoder_layers  # icml26.zoo.hf: the one lookup shared with rai


class HFAdapter:
    """The hook surface VEENA needs, on a ``transformers`` decoder (Llama, LLaVA, Qwen2-VL) or a ToyLVLM.

    Parameters
    ----------
    model : torch.nn.Module
        A causal LM whose decoder layers have ``self_attn.o_proj`` and ``mlp.down_proj``.
    visual_token_mask_fn : callable, optional
        ``fn(input_ids) -> BoolTensor (B, T)`` marking visual tokens (for LLaVA:
        ``icml26.zoo.image_token_mask``); used by :meth:`visual_mask`.
    vocabulary : sequence of str, optional
        The decoded word of every token id (for the hit-rate metrics).
    allowed_tokens : BoolTensor (V,), optional
        Tokens :meth:`generate` may sample (special tokens excluded); default all.

    References
    ----------
    Zhang, Sun, Xie & Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
    Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980). The hooks follow the
    module names of Hugging Face ``transformers`` decoders (``self_attn.o_proj``,
    ``mlp.down_proj``).

    Examples
    --------
    >>> from icml26.zoo import tiny_llama
    >>> adapter = HFAdapter(tiny_llama(vocab=40, hidden=32, layers=2, heads=4))
    >>> adapter.n_layers, adapter.n_heads, adapter.head_dim, adapter.n_neurons
    (2, 4, 8, 64)
    """

    def __init__(self, model, visual_token_mask_fn: Callable | None = None, vocabulary=None,
                 allowed_tokens: torch.Tensor | None = None):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self.model = model
        self.layers = _find_layers(model)
        attn = self.layers[0].self_attn
        self.n_layers = len(self.layers)
        self.n_heads = int(attn.config.num_attention_heads)
        self.head_dim = int(attn.head_dim)
        self.n_neurons = int(self.layers[0].mlp.down_proj.in_features)
        self.hidden = int(attn.o_proj.out_features)
        self.visual_token_mask_fn = visual_token_mask_fn
        self.vocabulary = None if vocabulary is None else list(vocabulary)
        self.allowed_tokens = allowed_tokens
        self._attn_config = attn.config
        self.offset: int | None = None     # absolute position of the chunk being run (None: unknown)

    @classmethod
    def wrap(cls, model_or_adapter) -> "HFAdapter":
        if isinstance(model_or_adapter, HFAdapter):
            return model_or_adapter
        own = getattr(model_or_adapter, "emotion_circuits_adapter", None)   # ToyLVLM: vocabulary set
        return own() if callable(own) else cls(model_or_adapter)

    @property
    def device(self) -> torch.device:
        """The device of the model's parameters (where prompts and pairs are moved)."""
        param = next(self.model.parameters(), None)
        return torch.device("cpu") if param is None else param.device

    def visual_mask(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.visual_token_mask_fn is None:
            raise ValueError("visual_token_mask_fn was not given to HFAdapter; pass visual_mask explicitly")
        return self.visual_token_mask_fn(input_ids).bool()

    def o_proj(self, layer: int):
        return self.layers[layer].self_attn.o_proj

    def head_write(self, layer: int, head: int, values: torch.Tensor) -> torch.Tensor:
        """``o^{(l,c)} = W_O[:, slice c] a^{(l,c)}``: a head output mapped into the residual stream."""
        w = self.o_proj(layer).weight.detach()[:, head * self.head_dim:(head + 1) * self.head_dim]
        return values @ w.T

    def out_directions(self, layer: int) -> torch.Tensor:
        """``(F, d)``: each MLP neuron's write direction ``W_out[:, n]``."""
        return self.layers[layer].mlp.down_proj.weight.detach().T

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model.get_input_embeddings()(ids)

    # -- installing hooks -----------------------------------------------------------------
    @contextlib.contextmanager
    def hooks(self, edits: Sequence = (), capture: Capture | None = None):
        """Install ``edits`` (and ``capture``) for the duration of the block."""
        handles, vee_modules = [], []
        old_impl = getattr(self._attn_config, "_attn_implementation", None)
        switch = capture is not None and capture.attention
        per_layer: dict = {}
        for edit in edits:
            per_layer.setdefault((type(edit).__name__, getattr(edit, "layer", None)), []).append(edit)
        try:
            for (kind, layer), group in per_layer.items():
                if kind == "ResidualAdd":
                    handles.append(self.layers[layer].register_forward_hook(_residual_hook(group, self)))
                elif kind in ("HeadReplace", "HeadMeanAblate"):
                    handles.append(self.o_proj(layer).register_forward_pre_hook(
                        _head_hook(group, self.head_dim)))
                elif kind == "NeuronScale":
                    handles.append(self.layers[layer].mlp.down_proj.register_forward_pre_hook(
                        _neuron_hook(group, self)))
                elif kind == "AttentionBoost":
                    for boost in group:
                        vee_modules += self._install_vee(boost)
                    switch = switch or bool(vee_modules)
                else:
                    raise TypeError(f"unknown edit {kind}")
            if capture is not None:
                handles += self._install_capture(capture)
            if switch:
                self._attn_config._attn_implementation = register_vee_attention()
            yield capture.store if capture is not None else None
        finally:
            for h in handles:
                h.remove()
            for module in vee_modules:
                module._emotion_circuits_vee = None
            if switch:
                self._attn_config._attn_implementation = old_impl

    def _install_vee(self, boost: AttentionBoost) -> list:
        prefill = check_heads(boost.prefill_heads, self.n_layers, self.n_heads, "prefill_heads")
        decode = check_heads(boost.decode_heads, self.n_layers, self.n_heads, "decode_heads")
        if not boost.beta > 0:
            raise ValueError(f"beta must be > 0, got {boost.beta}")
        if boost.beta == 1.0:
            return []
        log_beta = math.log(boost.beta)
        modules = []
        for layer in sorted({l for l, _ in prefill + decode}):
            attn = self.layers[layer].self_attn
            if getattr(attn, "_emotion_circuits_vee", None) is not None:
                raise ValueError(f"two VEE boosts on layer {layer}; merge them into one AttentionBoost")
            attn._emotion_circuits_vee = _VEEState(
                self.n_heads, [h for l, h in prefill if l == layer], [h for l, h in decode if l == layer],
                log_beta, boost.query_pos, torch.as_tensor(boost.visual_mask))
            modules.append(attn)
        return modules

    def _install_capture(self, capture: Capture) -> list:
        handles, store = [], capture.store
        for l, layer in enumerate(self.layers):
            if capture.residual:
                handles.append(layer.register_forward_hook(_store_output(store["residual"], l)))
            if capture.heads:
                handles.append(layer.self_attn.o_proj.register_forward_pre_hook(_store_input(store["heads"], l)))
            if capture.neurons:
                handles.append(layer.mlp.down_proj.register_forward_pre_hook(_store_input(store["neurons"], l)))
            if capture.attention:
                handles.append(layer.self_attn.register_forward_hook(_store_attention(store["attention"], l)))
        return handles

    # -- running --------------------------------------------------------------------------
    def forward(self, embeds: torch.Tensor, edits: Sequence = (), capture: Capture | None = None,
                cache=None, offset: int = 0, return_cache: bool = False):
        """Logits ``(B, T, V)`` of one forward pass on ``inputs_embeds`` with ``edits`` installed
        (``cache``/``offset``: continue a cached sequence whose chunk starts at ``offset``)."""
        self.offset = offset
        try:
            with torch.no_grad(), self.hooks(edits, capture):
                out = self.model(inputs_embeds=embeds, cache=cache, use_cache=return_cache)
        finally:
            self.offset = None
        return (out.logits, out.cache) if return_cache else out.logits

    def _new_cache(self):
        if isinstance(self.model, torch.nn.Module) and type(self.model).__name__ == "ToyLVLM":
            return None
        from transformers import DynamicCache
        return DynamicCache()

    def generate(self, prompt: torch.Tensor, n_tokens: int, seed: int, edits: Sequence = (),
                 patch_source: torch.Tensor | None = None, patch_heads: Sequence = (),
                 continuation: torch.Tensor | None = None) -> torch.Tensor:
        """Sample ``n_tokens`` tokens at temperature 1 (Gumbel-max with noise fixed by ``seed``,
        so runs that differ only by an intervention are paired sample by sample).

        ``patch_source`` (prompt embeds aligned with ``prompt``) with ``patch_heads`` runs
        activation patching: at every step the source sequence (same generated tokens) is run
        and the outputs of ``patch_heads`` are copied into the main run. ``continuation``
        (B, T) teacher-forces given tokens instead of sampling.

        Returns
        -------
        LongTensor (B, n_tokens)
        """
        check_int(n_tokens, "n_tokens", min_value=1)
        batch = prompt.shape[0]
        if patch_source is not None and patch_source.shape != prompt.shape:
            raise ValueError(f"patch_source must be aligned with prompt (shape {tuple(prompt.shape)}), "
                             f"got {tuple(patch_source.shape)}")
        gen = torch.Generator().manual_seed(int(seed))
        ids = torch.zeros(batch, 0, dtype=torch.long, device=prompt.device)
        noise, cache, src_cache = None, self._new_cache(), self._new_cache()
        chunk, src_chunk, offset = prompt, patch_source, 0
        for step in range(n_tokens):
            step_edits = list(edits)
            if patch_source is not None and patch_heads:
                cap = Capture(heads=True)
                _, src_cache = self.forward(src_chunk, capture=cap, cache=src_cache, offset=offset,
                                            return_cache=True)
                step_edits += [HeadReplace(l, h, cap.store["heads"][l][..., h * self.head_dim:(h + 1) * self.head_dim])
                               for l, h in patch_heads]
            logits, cache = self.forward(chunk, step_edits, cache=cache, offset=offset, return_cache=True)
            logits = logits[:, -1].float()
            if noise is None:
                noise = -torch.log(-torch.log(torch.rand(batch, n_tokens, logits.shape[-1], generator=gen)
                                              .clamp_(1e-12, 1 - 1e-7)))
            if continuation is not None:
                tok = continuation[:, step]
            else:
                scores = logits + noise[:, step].to(logits.device)
                if self.allowed_tokens is not None:
                    scores = scores.masked_fill(~self.allowed_tokens.to(scores.device), float("-inf"))
                tok = scores.argmax(-1)
            ids = torch.cat([ids, tok[:, None]], 1)
            offset += chunk.shape[1]
            chunk = src_chunk = self.embed(tok[:, None])
        return ids


# -- hook factories ---------------------------------------------------------------------------

def _replace_output(output, new):
    return (new, *output[1:]) if isinstance(output, tuple) else new


def _residual_hook(edits, state):
    def hook(module, args, output):
        h = output[0] if isinstance(output, tuple) else output
        h = h.clone()
        for e in edits:
            mask = _position_mask(h.shape[1], e.from_pos, h.device, state.offset, e.only_first)
            vec = e.vector.to(h.dtype).to(h.device)
            vec = vec[:, None, :] if vec.ndim == 2 else vec[None, None, :]
            h = h + mask[None, :, None].to(h.dtype) * vec
        return _replace_output(output, h)
    return hook


def _head_hook(edits, head_dim: int):
    def hook(module, args):
        x = args[0].clone()
        for e in edits:
            if isinstance(e, HeadReplace):
                sl = slice(e.head * head_dim, (e.head + 1) * head_dim)
                x[..., sl] = e.values[:, :x.shape[1]].to(x.dtype)
            else:
                for head in e.heads:
                    sl = slice(head * head_dim, (head + 1) * head_dim)
                    x[..., sl] = x[..., sl].mean(0, keepdim=True)
        return (x, *args[1:])
    return hook


def _neuron_hook(edits, state):
    def hook(module, args):
        x = args[0].clone()
        for e in edits:
            mask = _position_mask(x.shape[1], e.from_pos, x.device, state.offset)
            idx = torch.as_tensor(list(e.neurons), dtype=torch.long)
            scale = torch.ones(x.shape[1], len(idx), dtype=x.dtype, device=x.device)
            scale[mask] = float(e.factor)
            x[:, :, idx] = x[:, :, idx] * scale
        return (x, *args[1:])
    return hook


def _store_output(store, layer):
    def hook(module, args, output):
        store[layer] = (output[0] if isinstance(output, tuple) else output).detach()
    return hook


def _store_input(store, layer):
    def hook(module, args):
        store[layer] = args[0].detach()
    return hook


def _store_attention(store, layer):
    def hook(module, args, output):
        if isinstance(output, tuple) and len(output) > 1 and output[1] is not None:
            store[layer] = output[1].detach()
    return hook
