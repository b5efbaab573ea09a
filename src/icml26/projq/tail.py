"""A tail of decoder blocks as a stand-alone causal LM (quantize and fine-tune only the last k blocks).

Running a 135 M-parameter model forward and backward for every fine-tuning step is too slow on a
2-core CPU. When only the last ``k`` blocks are quantized and fine-tuned, everything before them
is a fixed full-precision function of the tokens: :func:`prefix_hidden` computes the input of
block ``L − k`` once, and :func:`tail_model` builds a model of the same class holding only the
last ``k`` blocks, the final norm and the output head, fed with ``inputs_embeds``. Its logits are
those of the full model (tested), so quantization, LoRA fine-tuning and held-out cross-entropy
run on the tail alone.

Reference: Yu et al., "ProjQ: Project-and-Quantize for Adapter-Aware LLM Compression", ICML 2026.
"""

from __future__ import annotations

import copy
import math

import torch

from icml26.core.validation import check_int, check_scalar_in

__all__ = ["tail_model", "prefix_hidden", "rows_ce", "finetune_tail", "tail_linears"]


def _layers(model):
    from icml26.zoo import decoder_layers

    return decoder_layers(model)


def tail_model(model, k: int):
    """A copy of ``model`` (a Llama-style causal LM) keeping only its last ``k`` decoder blocks.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        ``LlamaForCausalLM``-like (``model.layers``, ``norm``, ``lm_head``); left unchanged.
    k : int
        Blocks to keep, 1 ≤ k ≤ number of blocks.

    Returns
    -------
    Same class as ``model``, on its device and in its dtype, in eval mode, ``use_cache=False``;
    block ``L − k + i`` of ``model``
    is its block ``i``. Feed it ``inputs_embeds`` = the input of block ``L − k``
    (:func:`prefix_hidden`): its logits equal ``model``'s.

    Examples
    --------
    >>> from icml26.zoo import tiny_llama
    >>> full = tiny_llama(vocab=40, hidden=32, layers=3, heads=4, seed=0)
    >>> ids = torch.randint(40, (2, 6), generator=torch.Generator().manual_seed(0))
    >>> tail = tail_model(full, 2)
    >>> h = prefix_hidden(full, ids, 1)
    >>> bool(torch.allclose(tail(inputs_embeds=h).logits, full(ids).logits, atol=1e-5))
    True
    """
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise TypeError(f"model must be a Hugging Face causal LM, got {type(model).__name__}")
    n_layers = len(_layers(model))
    check_int(k, "k", min_value=1, max_value=n_layers)
    first = n_layers - k
    config = copy.deepcopy(model.config)
    config.num_hidden_layers = k
    config.use_cache = False
    if getattr(config, "layer_types", None):
        config.layer_types = list(config.layer_types)[first:]
    state = {}
    for name, value in model.state_dict().items():
        if name.startswith("model.layers."):
            index = int(name.split(".")[2])
            if index < first:
                continue
            name = name.replace(f"model.layers.{index}.", f"model.layers.{index - first}.", 1)
        state[name] = value
    with torch.random.fork_rng(devices=[]):   # the (discarded) CPU init must not move the global RNG
        tail = type(model)(config)
    tail.load_state_dict(state, strict=True)
    if getattr(config, "tie_word_embeddings", False):
        tail.tie_weights()
    param = next(model.parameters())
    tail.to(device=param.device, dtype=param.dtype)
    return tail.eval()


class _Stop(Exception):
    pass


@torch.no_grad()
def prefix_hidden(model, input_ids: torch.Tensor, block: int, batch_size: int = 8) -> torch.Tensor:
    """The input hidden states of decoder block ``block`` (float32, rows × tokens × width).

    The forward pass stops at that block, so later blocks and the head cost nothing;
    ``block = 0`` gives the token embeddings.
    """
    if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.long or input_ids.ndim != 2:
        raise ValueError("input_ids must be a 2-D LongTensor of shape (rows, tokens)")
    if input_ids.numel() == 0:
        raise ValueError("input_ids is empty")
    layers = _layers(model)
    check_int(block, "block", min_value=0, max_value=len(layers) - 1)
    check_int(batch_size, "batch_size", min_value=1)
    captured = []

    def hook(_module, args, kwargs):
        captured.append((args[0] if args else kwargs["hidden_states"]).detach().float().clone())
        raise _Stop

    handle = layers[block].register_forward_pre_hook(hook, with_kwargs=True)
    was_training = model.training
    model.eval()
    try:
        for start in range(0, input_ids.shape[0], batch_size):
            try:
                model(input_ids[start:start + batch_size], use_cache=False)
            except _Stop:
                pass
    finally:
        handle.remove()
        model.train(was_training)
    return torch.cat(captured)


def _check_pair(hidden, input_ids):
    if not isinstance(hidden, torch.Tensor) or not hidden.is_floating_point() or hidden.ndim != 3:
        raise ValueError("hidden must be a 3-D float tensor (rows, tokens, width)")
    if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.long or input_ids.ndim != 2:
        raise ValueError("input_ids must be a 2-D LongTensor of shape (rows, tokens)")
    if tuple(hidden.shape[:2]) != tuple(input_ids.shape):
        raise ValueError(f"hidden {tuple(hidden.shape)} and input_ids {tuple(input_ids.shape)} disagree on "
                         "(rows, tokens)")
    if input_ids.shape[0] < 1 or input_ids.shape[1] < 2:
        raise ValueError(f"need >= 1 row of >= 2 tokens, got shape {tuple(input_ids.shape)}")


@torch.no_grad()
def rows_ce(model, hidden: torch.Tensor, input_ids: torch.Tensor, batch_size: int = 8) -> torch.Tensor:
    """Mean next-token cross-entropy (nats) of each row, the model fed ``inputs_embeds=hidden``.

    Row ``i`` averages the ``T − 1`` predictions of token ``t + 1`` from positions ``≤ t``; the
    mean of the returned vector is the corpus CE (all rows have the same length).
    """
    _check_pair(hidden, input_ids)
    check_int(batch_size, "batch_size", min_value=1)
    was_training = model.training
    model.eval()
    out = []
    for start in range(0, input_ids.shape[0], batch_size):
        rows = input_ids[start:start + batch_size]
        logits = model(inputs_embeds=hidden[start:start + batch_size]).logits[:, :-1].float()
        ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), rows[:, 1:], reduction="none")
        out.append(ce.mean(dim=1))
    model.train(was_training)
    result = torch.cat(out).double()
    if not torch.isfinite(result).all():
        raise FloatingPointError("non-finite cross-entropy (the model produced inf/NaN logits)")
    return result


def _cosine(step: int, steps: int, warmup_fraction: float) -> float:
    warmup = max(1, int(round(warmup_fraction * steps)))
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def finetune_tail(model, hidden: torch.Tensor, input_ids: torch.Tensor, steps: int, batch: int, lr: float,
                  weight_decay: float = 0.1, warmup_fraction: float = 0.03, seed: int = 0) -> list:
    """AdamW (warm-up + cosine) on the trainable parameters of ``model`` over cached rows.

    Each step takes ``batch`` rows of (``hidden``, ``input_ids``) in the order of seeded
    permutations (every row once per pass); the loss is the model's next-token CE
    (``labels=input_ids``). Returns the loss of every step.
    """
    _check_pair(hidden, input_ids)
    check_int(steps, "steps", min_value=1)
    check_int(batch, "batch", min_value=1, max_value=input_ids.shape[0])
    check_scalar_in(lr, "lr", low=0.0, low_inclusive=False)
    check_scalar_in(weight_decay, "weight_decay", low=0.0)
    check_scalar_in(warmup_fraction, "warmup_fraction", low=0.0, high=1.0)
    check_int(seed, "seed", min_value=0)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters")
    generator = torch.Generator().manual_seed(seed)
    need = steps * batch
    order = torch.cat([torch.randperm(input_ids.shape[0], generator=generator)
                       for _ in range(-(-need // input_ids.shape[0]))])[:need]

    def batch_loss(step: int) -> torch.Tensor:
        pick = order[step * batch:(step + 1) * batch]
        return model(inputs_embeds=hidden[pick], labels=input_ids[pick]).loss

    return adamw_cosine(model, params, steps, lr, weight_decay, warmup_fraction, batch_loss)


def adamw_cosine(model, params, steps: int, lr: float, weight_decay: float, warmup_fraction: float,
                 batch_loss) -> list:
    """AdamW with linear warm-up and cosine decay for ``steps`` steps; ``batch_loss(step)`` gives
    the loss of step ``step``. Puts ``model`` in train mode, back in eval mode at the end; returns
    the loss of every step (the one loop of E2 and E2-smollm2)."""
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _cosine(s, steps, warmup_fraction))
    model.train()
    losses = []
    for step in range(steps):
        loss = batch_loss(step)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def tail_linears(model) -> list:
    """Names of the ``nn.Linear`` layers inside the decoder blocks (not the head)."""
    return [name for name, mod in model.named_modules()
            if isinstance(mod, torch.nn.Linear) and name.startswith("model.layers.")]
