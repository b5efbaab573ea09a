"""Tiny Hugging Face models built offline from configs (no download), seeded.

* :func:`tiny_llama` — a ``LlamaForCausalLM`` of any small size (unit tests, trained toy LMs);
* :func:`tiny_llava` — a 0.81 M-parameter ``LlavaForConditionalGeneration``: CLIP vision
  tower 64 wide (2 layers, 32×32 images, 8×8 patches → 16 visual tokens), Llama text model
  128 wide (4 layers), ``image_token_id = 3``. Its language layers are real
  ``LlamaDecoderLayer`` modules (``model.model.language_model.layers[i]``) that take forward
  hooks, and the visual-token positions are ``input_ids == model.config.image_token_id``
  (:func:`image_token_mask`).

Weights are the models' own random initialisation under ``seed`` (the global torch RNG is
left untouched), so the same arguments give the same state dict.
"""

from __future__ import annotations

import torch

from icml26.core.device import seeded_rng
from icml26.core.validation import check_int

__all__ = ["tiny_llama_config", "tiny_llama", "tiny_llava_config", "tiny_llava", "image_token_mask",
           "tiny_llava_inputs"]


def _seeded_build(model_class, config, seed: int):
    check_int(seed, "seed", min_value=0)
    with seeded_rng(seed):          # the CPU generator only: no CUDA generator is reseeded
        model = model_class(config)
    return model.eval()


def tiny_llama_config(vocab: int = 128, hidden: int = 64, layers: int = 2, heads: int = 4, *,
                      kv_heads: int | None = None, intermediate: int | None = None,
                      max_position: int = 2048, tie_embeddings: bool = False, **config_kwargs):
    """A small ``LlamaConfig`` (arguments checked; extra keywords go to the config).

    Parameters
    ----------
    vocab, hidden, layers, heads : int
        Vocabulary size, residual width, decoder layers, attention heads (``hidden`` must be a
        multiple of ``heads``).
    kv_heads : int, optional
        Key/value heads (grouped-query attention); default ``heads``. Must divide ``heads``.
    intermediate : int, optional
        MLP width; default ``2 * hidden``.
    max_position : int
    tie_embeddings : bool
        Share the input embedding and the output head.

    Returns
    -------
    transformers.LlamaConfig
    """
    from transformers import LlamaConfig

    for name, value in (("vocab", vocab), ("hidden", hidden), ("layers", layers), ("heads", heads),
                        ("max_position", max_position)):
        check_int(value, name, min_value=1)
    if hidden % heads:
        raise ValueError(f"hidden must be a multiple of heads, got hidden={hidden}, heads={heads}")
    kv_heads = heads if kv_heads is None else check_int(kv_heads, "kv_heads", min_value=1)
    if heads % kv_heads:
        raise ValueError(f"kv_heads must divide heads, got kv_heads={kv_heads}, heads={heads}")
    intermediate = 2 * hidden if intermediate is None else check_int(intermediate, "intermediate", min_value=1)
    return LlamaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                       num_attention_heads=heads, num_key_value_heads=kv_heads,
                       intermediate_size=intermediate, max_position_embeddings=max_position,
                       tie_word_embeddings=tie_embeddings, **config_kwargs)


def tiny_llama(vocab: int = 128, hidden: int = 64, layers: int = 2, heads: int = 4, seed: int = 0,
               **config_kwargs):
    """A randomly initialised ``LlamaForCausalLM`` built from :func:`tiny_llama_config`.

    Parameters
    ----------
    vocab, hidden, layers, heads : int
        See :func:`tiny_llama_config`.
    seed : int
        Seed of the weight initialisation (the global torch RNG is not touched).
    **config_kwargs
        ``kv_heads``, ``intermediate``, ``max_position``, ``tie_embeddings`` or any
        ``LlamaConfig`` field.

    Returns
    -------
    transformers.LlamaForCausalLM
        In eval mode, float32.

    Examples
    --------
    >>> model = tiny_llama(vocab=40, hidden=32, layers=2, heads=4, seed=0)
    >>> model(torch.zeros(1, 5, dtype=torch.long)).logits.shape
    torch.Size([1, 5, 40])
    """
    from transformers import LlamaForCausalLM

    return _seeded_build(LlamaForCausalLM, tiny_llama_config(vocab, hidden, layers, heads, **config_kwargs), seed)


def tiny_llava_config(vocab: int = 200, hidden: int = 128, layers: int = 4, heads: int = 4,
                      intermediate: int = 256, *, vision_hidden: int = 64, vision_layers: int = 2,
                      vision_heads: int = 2, vision_intermediate: int | None = None,
                      image_size: int = 32, patch_size: int = 8, image_token_id: int = 3,
                      pad_token_id: int = 0, bos_token_id: int = 1, eos_token_id: int = 2):
    """A ``LlavaConfig``: CLIP vision tower + Llama text model, one visual token per patch.

    ``vision_feature_select_strategy="default"`` drops CLIP's class token, so an image gives
    ``(image_size // patch_size) ** 2`` visual tokens (16 by default), and
    ``image_seq_length`` is set to that number.

    Parameters
    ----------
    vocab, hidden, layers, heads, intermediate : int
        The Llama text model.
    vision_hidden, vision_layers, vision_heads, vision_intermediate : int
        The CLIP vision tower (``vision_intermediate`` defaults to ``2 * vision_hidden``).
    image_size, patch_size : int
        Square RGB images of ``image_size`` pixels, cut into ``patch_size`` patches.
    image_token_id : int
        The placeholder token id; one per visual token in ``input_ids``.
    pad_token_id, bos_token_id, eos_token_id : int

    Returns
    -------
    transformers.LlavaConfig
    """
    from transformers import CLIPVisionConfig, LlavaConfig

    for name, value in (("vision_hidden", vision_hidden), ("vision_layers", vision_layers),
                        ("vision_heads", vision_heads), ("image_size", image_size),
                        ("patch_size", patch_size)):
        check_int(value, name, min_value=1)
    if vision_hidden % vision_heads:
        raise ValueError(f"vision_hidden must be a multiple of vision_heads, got {vision_hidden}, {vision_heads}")
    if image_size % patch_size:
        raise ValueError(f"image_size must be a multiple of patch_size, got {image_size}, {patch_size}")
    for name, value in (("image_token_id", image_token_id), ("pad_token_id", pad_token_id),
                        ("bos_token_id", bos_token_id), ("eos_token_id", eos_token_id)):
        check_int(value, name, min_value=0, max_value=vocab - 1)
    vision_intermediate = (2 * vision_hidden if vision_intermediate is None
                           else check_int(vision_intermediate, "vision_intermediate", min_value=1))
    text = tiny_llama_config(vocab, hidden, layers, heads, intermediate=intermediate,
                             pad_token_id=pad_token_id, bos_token_id=bos_token_id,
                             eos_token_id=eos_token_id)
    vision = CLIPVisionConfig(hidden_size=vision_hidden, num_hidden_layers=vision_layers,
                              num_attention_heads=vision_heads, intermediate_size=vision_intermediate,
                              image_size=image_size, patch_size=patch_size, num_channels=3)
    return LlavaConfig(vision_config=vision, text_config=text, image_token_index=image_token_id,
                       vision_feature_select_strategy="default", vision_feature_layer=-1,
                       image_seq_length=(image_size // patch_size) ** 2, pad_token_id=pad_token_id)


def tiny_llava(vocab: int = 200, hidden: int = 128, layers: int = 4, heads: int = 4,
               intermediate: int = 256, seed: int = 0, **config_kwargs):
    """A randomly initialised tiny ``LlavaForConditionalGeneration`` (0.81 M parameters by default).

    Parameters
    ----------
    vocab, hidden, layers, heads, intermediate : int
        The Llama text model (default 200 / 128 / 4 / 4 / 256).
    seed : int
        Seed of the weight initialisation (the global torch RNG is not touched).
    **config_kwargs
        Any keyword of :func:`tiny_llava_config` (vision tower size, image and patch size,
        ``image_token_id``, special token ids).

    Returns
    -------
    transformers.LlavaForConditionalGeneration
        In eval mode, float32. Language layers: ``model.model.language_model.layers``;
        vision tower: ``model.model.vision_tower``; projector: ``model.model.multi_modal_projector``.

    Examples
    --------
    >>> model = tiny_llava(seed=0)
    >>> sum(p.numel() for p in model.parameters()), model.config.image_token_id
    (813184, 3)
    """
    from transformers import LlavaForConditionalGeneration

    config = tiny_llava_config(vocab, hidden, layers, heads, intermediate, **config_kwargs)
    return _seeded_build(LlavaForConditionalGeneration, config, seed)


def image_token_mask(input_ids: torch.Tensor, model_or_config) -> torch.Tensor:
    """Boolean mask of the visual-token positions: ``input_ids == config.image_token_id``.

    The decoder layers' hooks see hidden states, not ids; pass this mask to them (or capture
    ``input_ids`` with a pre-hook on the top-level ``forward``).

    Parameters
    ----------
    input_ids : LongTensor of shape (B, T)
    model_or_config : a LLaVA-style model or its config (anything with ``image_token_id``)

    Returns
    -------
    BoolTensor of shape (B, T)
    """
    config = getattr(model_or_config, "config", model_or_config)
    token_id = getattr(config, "image_token_id", None)
    if token_id is None:
        raise ValueError("model_or_config has no image_token_id (not a LLaVA-style model?)")
    if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.long or input_ids.ndim != 2:
        raise ValueError("input_ids must be a 2-D LongTensor of shape (batch, tokens)")
    return input_ids == token_id


def tiny_llava_inputs(model, batch: int = 2, text_tokens: int = 8, seed: int = 0) -> dict:
    """Random inputs for a tiny LLaVA: ``[bos] <image>×n text…`` ids, pixels, attention mask.

    Parameters
    ----------
    model : LlavaForConditionalGeneration (or its config)
    batch, text_tokens : int
        Rows, and text tokens after the image block.
    seed : int

    Returns
    -------
    dict with ``input_ids`` (B, 1 + n_image + text_tokens), ``pixel_values``
    (B, 3, image_size, image_size) and ``attention_mask``, drawn on the CPU and placed on the
    model's device when ``model`` is a module.
    """
    check_int(batch, "batch", min_value=1)
    check_int(text_tokens, "text_tokens", min_value=1)
    check_int(seed, "seed", min_value=0)
    config = getattr(model, "config", model)
    text, vision = config.text_config, config.vision_config
    specials = {config.image_token_id, text.pad_token_id, text.bos_token_id, text.eos_token_id}
    allowed = torch.tensor([i for i in range(text.vocab_size) if i not in specials])
    generator = torch.Generator().manual_seed(seed)
    words = allowed[torch.randint(len(allowed), (batch, text_tokens), generator=generator)]
    ids = torch.cat([torch.full((batch, 1), text.bos_token_id),
                     torch.full((batch, config.image_seq_length), config.image_token_id), words], dim=1)
    pixels = torch.rand(batch, 3, vision.image_size, vision.image_size, generator=generator)
    out = {"input_ids": ids, "pixel_values": pixels, "attention_mask": torch.ones_like(ids)}
    param = next(model.parameters(), None) if isinstance(model, torch.nn.Module) else None
    return out if param is None else {k: v.to(param.device) for k, v in out.items()}
