"""Content hashes: files (the GGUF weights) and state dicts (what a conversion produced)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

__all__ = ["file_sha256", "state_dict_sha256"]


def file_sha256(path, chunk_bytes: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_bytes), b""):
            digest.update(chunk)
    return digest.hexdigest()


def state_dict_sha256(model_or_state_dict) -> str:
    """SHA-256 over a state dict: every tensor's name, dtype, shape and bytes, in sorted name order.

    Two conversions of the same weights give the same digest; any changed value changes it.

    Parameters
    ----------
    model_or_state_dict : torch.nn.Module or mapping of name -> Tensor

    Returns
    -------
    str
    """
    state = (model_or_state_dict.state_dict() if isinstance(model_or_state_dict, torch.nn.Module)
             else model_or_state_dict)
    digest = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous().reshape(-1)
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return digest.hexdigest()
