"""Small helpers for Hugging Face models shared by the methods that hook them (rai, emotion_circuits)."""

from __future__ import annotations

import torch

__all__ = ["decoder_layers"]

# Where decoder layers live: Llama/Qwen2-style causal LMs (``model.layers``), LLaVA in
# transformers >= 4.52 (``model.language_model.layers``) and older LLaVA layouts.
_LAYER_PATHS = ("model.layers", "model.language_model.layers", "language_model.model.layers",
                "model.language_model.model.layers", "language_model.layers")


def decoder_layers(model) -> torch.nn.ModuleList:
    """The decoder layers of a Hugging Face (vision-)language model, as a non-empty ``ModuleList``.

    Parameters
    ----------
    model : torch.nn.Module
        e.g. ``LlamaForCausalLM``, ``Qwen2ForCausalLM``, ``LlavaForConditionalGeneration``.

    Raises
    ------
    TypeError
        When no non-empty ``ModuleList`` of layers is found at the known paths.

    Examples
    --------
    >>> from icml26.zoo import tiny_llama
    >>> len(decoder_layers(tiny_llama(layers=3)))
    3
    """
    for path in _LAYER_PATHS:
        obj = model
        try:
            for attr in path.split("."):
                obj = getattr(obj, attr)
        except AttributeError:
            continue
        if isinstance(obj, torch.nn.ModuleList) and len(obj):
            return obj
    raise TypeError(f"cannot find decoder layers on {type(model).__name__}: expected "
                    "model.layers or model.language_model.layers (a Llama/LLaVA/Qwen2-style decoder)")
