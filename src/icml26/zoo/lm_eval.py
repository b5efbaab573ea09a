"""Next-token cross-entropy of a causal LM on token blocks (the zoo's sanity measure)."""

from __future__ import annotations

import torch

from icml26.core.validation import check_int

__all__ = ["next_token_ce"]


@torch.no_grad()
def next_token_ce(model, input_ids: torch.Tensor, batch_size: int = 8) -> float:
    """Mean next-token cross-entropy (nats) over every predicted position of every row.

    Each row of ``T`` tokens contributes ``T - 1`` predictions (token ``t + 1`` from tokens
    ``<= t``); the mean is over all of them.

    Parameters
    ----------
    model : causal LM returning ``.logits`` of shape (B, T, V)
    input_ids : LongTensor of shape (N, T), T >= 2
    batch_size : int

    Returns
    -------
    float
    """
    if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.long or input_ids.ndim != 2:
        raise ValueError("input_ids must be a 2-D LongTensor of shape (rows, tokens)")
    if input_ids.shape[0] < 1 or input_ids.shape[1] < 2:
        raise ValueError(f"input_ids needs >= 1 row of >= 2 tokens, got shape {tuple(input_ids.shape)}")
    check_int(batch_size, "batch_size", min_value=1)
    total, count = 0.0, 0
    param = next(model.parameters(), None)
    device = input_ids.device if param is None else param.device      # the model's device
    for start in range(0, input_ids.shape[0], batch_size):
        rows = input_ids[start:start + batch_size].to(device)
        logits = model(rows).logits[:, :-1].float()
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), rows[:, 1:].reshape(-1),
                                                 reduction="sum")
        if not torch.isfinite(loss):
            raise FloatingPointError("non-finite cross-entropy (the model produced inf/NaN logits)")
        total += float(loss)
        count += rows[:, 1:].numel()
    return total / count
