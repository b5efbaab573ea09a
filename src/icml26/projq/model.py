"""Whole-model quantization of a Hugging Face causal LM and the hand-over to ``peft``.

:func:`quantize_model` collects every target ``nn.Linear``'s input statistics with forward
hooks in one full-precision pass, quantizes each weight in place with the chosen method and
keeps the Phase-2 adapters in a :class:`QuantizedModelReport`; :func:`to_peft_lora` builds a
``peft`` LoRA model whose ``lora_A``/``lora_B`` start from those adapters.

Reference: Yu et al., "ProjQ: Project-and-Quantize for Adapter-Aware LLM Compression", ICML 2026.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from icml26.core.validation import check_choice, check_int, check_scalar_in

from .projq import ProjQ, check_rank, loftq_init, lordq_init
from .quant import ActivationStats, GroupQuantizer, gptq_quantize, rtn_quantize

__all__ = ["quantize_model", "to_peft_lora", "QuantizedModelReport", "LayerReport", "METHODS",
           "target_linears", "collect_stats", "NF4_BLOCK"]

#: method → (quantizer, adapter initialisation)
METHODS = {
    "projq": "ProjQ Phase 1 + lordq adapters",
    "gptq": "GPTQ + zero-initialised LoRA",
    "gptq_eora": "GPTQ + lordq (EoRA) adapters",
    "rtn": "round-to-nearest + zero-initialised LoRA",
    "loftq": "LoftQ (weight-space alternation, same quantizer)",
    "nf4": "QLoRA: NF4 (block 64 absmax) + zero-initialised LoRA",
}
NF4_BLOCK = 64


@dataclass
class LayerReport:
    """What :func:`quantize_model` did to one linear layer.

    Attributes
    ----------
    name : str
        Module name of the layer.
    shape : tuple
        ``(m, n)`` of its weight.
    A, B : Tensor or None
        PEFT ``lora_A`` (r × n) and ``lora_B`` (m × r) initialisation; None for a
        zero-initialised LoRA.
    n_iter : int
        ProjQ Phase-1 iterations (0 for the other methods).
    seconds : float
        Wall time spent on the layer.

    References
    ----------
    Yu, Zhang, Wang, Lasaulce, Debbah, "ProjQ: Project-and-Quantize for Adapter-Aware LLM
    Compression", ICML 2026, arXiv:2606.00494 (the per-layer quantized weight and Phase-2
    adapters it reports).

    Examples
    --------
    >>> from icml26.zoo import tiny_llama
    >>> model = tiny_llama(vocab=40, hidden=32, layers=1, heads=4, seed=0)
    >>> ids = torch.randint(40, (4, 16), generator=torch.Generator().manual_seed(0))
    >>> report = quantize_model(model, ids, method="projq", bits=2, group_size=32, rank=4,
    ...                         modules=["model.layers.0.self_attn.q_proj"], max_iter=2)
    >>> entry = report.layers["model.layers.0.self_attn.q_proj"]
    >>> entry.shape, entry.A.shape, entry.B.shape, entry.n_iter
    ((32, 32), torch.Size([4, 32]), torch.Size([32, 4]), 2)
    """

    name: str
    shape: tuple
    A: torch.Tensor | None = None   # (r, n), PEFT lora_A weight; None: zero-initialised LoRA
    B: torch.Tensor | None = None   # (m, r), PEFT lora_B weight
    n_iter: int = 0
    seconds: float = 0.0


@dataclass
class QuantizedModelReport:
    """Settings and per-layer results of :func:`quantize_model` (adapters unscaled: ``W ≈ Ŵ + BA``).

    References
    ----------
    Yu, Zhang, Wang, Lasaulce, Debbah, "ProjQ: Project-and-Quantize for Adapter-Aware LLM
    Compression", ICML 2026, arXiv:2606.00494.

    Examples
    --------
    >>> from icml26.zoo import tiny_llama
    >>> model = tiny_llama(vocab=40, hidden=32, layers=1, heads=4, seed=0)
    >>> ids = torch.randint(40, (4, 16), generator=torch.Generator().manual_seed(0))
    >>> report = quantize_model(model, ids, method="projq", bits=2, group_size=32, rank=4,
    ...                         modules=["model.layers.0.self_attn.q_proj"], max_iter=2)
    >>> summary = report.summary()
    >>> summary["method"], summary["bits"], summary["layers"], summary["calibration_tokens"]
    ('projq', 2, 1, 64)
    """

    method: str
    bits: int
    group_size: int
    rank: int
    comp_rank: int
    layers: dict = field(default_factory=dict)
    calibration_tokens: int = 0

    @property
    def seconds(self) -> float:
        return sum(layer.seconds for layer in self.layers.values())

    def summary(self) -> dict:
        return {"method": self.method, "bits": self.bits, "group_size": self.group_size,
                "rank": self.rank, "comp_rank": self.comp_rank, "layers": len(self.layers),
                "calibration_tokens": self.calibration_tokens, "seconds": self.seconds,
                "mean_iterations": (sum(l.n_iter for l in self.layers.values()) / len(self.layers))
                if self.layers else 0.0}


def target_linears(model: torch.nn.Module, modules=None) -> dict:
    """The ``nn.Linear`` layers to quantize: all but the output head, or those named in ``modules``.

    Raises
    ------
    ValueError
        When the model has no Linear layer to quantize, has GPT-2-style ``Conv1D`` layers (their
        weights are transposed; not supported), or ``modules`` names a missing/non-Linear layer.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    conv1d = [name for name, mod in model.named_modules() if type(mod).__name__ == "Conv1D"]
    if conv1d:
        raise ValueError(f"model has GPT-2-style Conv1D layers ({conv1d[0]}, ...); their weights are "
                         "stored transposed and are not supported: convert them to nn.Linear first")
    named = dict(model.named_modules())
    if modules is not None:
        modules = [modules] if isinstance(modules, str) else list(modules)
        missing = [m for m in modules if not isinstance(named.get(m), torch.nn.Linear)]
        if missing:
            raise ValueError(f"modules {missing} are not nn.Linear layers of the model")
        return {m: named[m] for m in modules}
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    found = {name: mod for name, mod in named.items() if isinstance(mod, torch.nn.Linear) and mod is not head}
    if not found:
        raise ValueError("model has no torch.nn.Linear layers to quantize (besides the output head)")
    return found


@torch.no_grad()
def collect_stats(model: torch.nn.Module, input_ids: torch.Tensor | None, layers: dict, batch_size: int = 8,
                  inputs_embeds: torch.Tensor | None = None) -> dict:
    """One forward pass over ``input_ids`` collecting :class:`ActivationStats` of each layer by hooks.

    With ``inputs_embeds`` (rows × tokens × width, float) the model is fed those hidden states
    instead of token ids (``model(inputs_embeds=...)``; e.g. the cached input of a tail of blocks).
    """
    if inputs_embeds is not None:
        if input_ids is not None:
            raise ValueError("give calib_ids or inputs_embeds, not both")
        if (not isinstance(inputs_embeds, torch.Tensor) or not inputs_embeds.is_floating_point()
                or inputs_embeds.ndim != 3):
            raise ValueError("inputs_embeds must be a 3-D float tensor of shape (rows, tokens, width)")
        if inputs_embeds.numel() == 0:
            raise ValueError("inputs_embeds is empty")
        if not torch.isfinite(inputs_embeds).all():
            raise ValueError("inputs_embeds contains NaN or infinity")
        feed, key = inputs_embeds, "inputs_embeds"
    else:
        if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.long or input_ids.ndim != 2:
            raise ValueError("calib_ids must be a 2-D LongTensor of shape (rows, tokens)")
        if input_ids.numel() == 0:
            raise ValueError("calib_ids is empty")
        feed, key = input_ids, "input_ids"
    check_int(batch_size, "batch_size", min_value=1)
    stats, handles = {}, []
    try:
        for name, module in layers.items():
            stats[name], handle = ActivationStats.from_module_hook(module, name)
            handles.append(handle)
        was_training = model.training
        model.eval()
        param = next(model.parameters(), None)
        device = feed.device if param is None else param.device      # the model's device
        for start in range(0, feed.shape[0], batch_size):
            model(**{key: feed[start:start + batch_size].to(device)})
        model.train(was_training)
    finally:
        for handle in handles:
            handle.remove()
    return stats


def quantize_model(model: torch.nn.Module, calib_ids: torch.Tensor, method: str = "projq", bits: int = 2,
                   group_size: int = 128, rank: int = 64, comp_rank: int | None = None, modules=None,
                   short_last_group: bool = False, max_iter: int = 5, tol: float = 0.02, damp: float = 0.1,
                   loftq_iter: int = 5, batch_size: int = 8, seed: int = 0,
                   calib_embeds: torch.Tensor | None = None) -> QuantizedModelReport:
    """Quantize every target linear layer of ``model`` in place with ``method``.

    Inputs of all layers are collected from the full-precision model in one pass (no sequential
    propagation), then each weight is replaced by its dequantised version.

    Parameters
    ----------
    model : torch.nn.Module
        E.g. a Hugging Face ``LlamaForCausalLM``; modified in place.
    calib_ids : LongTensor (rows, tokens) or None
        Calibration token blocks (None when ``calib_embeds`` is given).
    method : {"projq", "gptq", "gptq_eora", "rtn", "loftq", "nf4"}
    bits, group_size : int
        Quantizer (``nf4`` always uses 4 bits and blocks of 64).
    rank : int
        ProjQ's projection rank r_q.
    comp_rank : int, optional
        Adapter rank r_c (default ``rank``).
    modules : list of str, optional
        Layer names; default every ``nn.Linear`` except the output head.
    short_last_group, max_iter, tol, damp :
        See :class:`ProjQ`.
    loftq_iter : int
        LoftQ alternations.
    batch_size : int
        Rows per forward pass while collecting statistics.
    seed : int
        Seed of any randomized step.
    calib_embeds : float Tensor (rows, tokens, width), optional
        Calibration hidden states fed as ``model(inputs_embeds=...)`` instead of ``calib_ids``
        (a tail of blocks whose input was computed once by the full-precision prefix).

    Returns
    -------
    QuantizedModelReport
        Adapters ``A`` (r × n), ``B`` (m × r) per layer (None for zero-initialised LoRA).

    Examples
    --------
    >>> from icml26.zoo import tiny_llama
    >>> model = tiny_llama(vocab=40, hidden=32, layers=1, heads=4, seed=0)
    >>> ids = torch.randint(40, (4, 16), generator=torch.Generator().manual_seed(0))
    >>> report = quantize_model(model, ids, method="projq", bits=2, group_size=32, rank=4)
    >>> len(report.layers), report.layers["model.layers.0.self_attn.q_proj"].A.shape
    (7, torch.Size([4, 32]))
    """
    check_choice(method, "method", tuple(METHODS))
    check_int(bits, "bits", min_value=1, max_value=8)
    check_int(seed, "seed", min_value=0)
    check_int(loftq_iter, "loftq_iter", min_value=1)
    check_scalar_in(damp, "damp", low=0.0, high=1.0, high_inclusive=False)
    comp_rank = rank if comp_rank is None else comp_rank
    layers = target_linears(model, modules)
    for name, module in layers.items():
        check_rank(rank, module.out_features, module.in_features, "rank")
        check_rank(comp_rank, module.out_features, module.in_features, "comp_rank")
    if method == "nf4":
        quantizer = GroupQuantizer(4, NF4_BLOCK, nf4=True, short_last_group=short_last_group)
    else:
        quantizer = GroupQuantizer(bits, group_size, short_last_group=short_last_group)
    for module in layers.values():
        quantizer.group_width(module.in_features)
    needs_stats = method in ("projq", "gptq", "gptq_eora")
    if calib_embeds is not None and calib_ids is not None:
        raise ValueError("give calib_ids or calib_embeds, not both")
    if calib_embeds is None and calib_ids is None:
        raise ValueError("calib_ids is required (or calib_embeds)")
    stats = collect_stats(model, calib_ids, layers, batch_size, inputs_embeds=calib_embeds) if needs_stats else {}
    calib = calib_ids if calib_embeds is None else calib_embeds[..., 0]
    report = QuantizedModelReport(method, 4 if method == "nf4" else bits, NF4_BLOCK if method == "nf4"
                                  else group_size, rank, comp_rank, calibration_tokens=int(calib.numel()))
    for name, module in layers.items():
        start = time.perf_counter()
        W = module.weight.detach().to(torch.float32)
        entry = LayerReport(name, tuple(W.shape))
        if method in ("rtn", "nf4"):
            W_hat = rtn_quantize(W, quantizer)
        elif method == "loftq":
            W_hat, entry.A, entry.B = loftq_init(W, quantizer, comp_rank, loftq_iter)
        elif method == "projq":
            fitted = ProjQ(bits, group_size, rank, max_iter, tol, damp, short_last_group=short_last_group,
                           random_state=seed).fit(W, stats[name])
            W_hat, entry.n_iter = fitted.W_hat_, fitted.n_iter_
        else:
            W_hat = gptq_quantize(W, stats[name].hessian(), quantizer, damp, layer=name)
        if method in ("projq", "gptq_eora"):
            entry.A, entry.B = lordq_init(W, W_hat, stats[name], comp_rank, random_state=seed)
        module.weight.data.copy_(W_hat.to(module.weight.dtype))
        entry.seconds = time.perf_counter() - start
        report.layers[name] = entry
    return report


def to_peft_lora(model: torch.nn.Module, report: QuantizedModelReport, lora_alpha: float = 16,
                 respect_lora_scaling: bool = True, lora_dropout: float = 0.0):
    """Wrap the quantized ``model`` in a ``peft`` LoRA model initialised from ``report``'s adapters.

    The LoRA layers are ``peft``'s own (``LoraConfig`` + ``get_peft_model``); only their
    ``lora_A``/``lora_B`` weights are overwritten with the Phase-2 (or LoftQ) adapters. Layers
    with no adapter (RTN, GPTQ, NF4) keep peft's zero-initialised LoRA (B = 0).

    Parameters
    ----------
    model : torch.nn.Module
        The model :func:`quantize_model` quantized (modified: peft injects its layers).
    report : QuantizedModelReport
    lora_alpha : float
        PEFT scaling numerator (scaling α / r).
    respect_lora_scaling : bool
        True (Resolution, not from the paper): store ``A·√(r/α)``, ``B·√(r/α)`` so that the
        scaled correction ``(α/r)·BA`` equals the computed one. False: load them unscaled as
        the reference code does (initial correction α/r of the computed one).
    lora_dropout : float

    Returns
    -------
    peft.PeftModel
    """
    from peft import LoraConfig, get_peft_model

    if not isinstance(report, QuantizedModelReport):
        raise TypeError(f"report must be a QuantizedModelReport, got {type(report).__name__}")
    if not report.layers:
        raise ValueError("report has no layers")
    check_scalar_in(lora_alpha, "lora_alpha", low=0.0, low_inclusive=False)
    check_scalar_in(lora_dropout, "lora_dropout", low=0.0, high=1.0, high_inclusive=False)
    config = LoraConfig(r=report.comp_rank, lora_alpha=lora_alpha, target_modules=list(report.layers),
                        lora_dropout=lora_dropout, bias="none")
    peft_model = get_peft_model(model, config)
    factor = math.sqrt(report.comp_rank / lora_alpha) if respect_lora_scaling else 1.0
    base = peft_model.get_base_model()
    with torch.no_grad():
        for name, layer in report.layers.items():
            if layer.A is None:
                continue
            lora_layer = base.get_submodule(name)
            lora_layer.lora_A["default"].weight.copy_(layer.A * factor)
            lora_layer.lora_B["default"].weight.copy_(layer.B * factor)
    return peft_model
