"""Data for ProjQ: the synthetic layer generator with known structure, SmolLM2 activations from
the stdlib corpus, and the char-level corpus for the end-to-end experiment.

The real pretrained model and text come only from :mod:`icml26.zoo`.
"""

from __future__ import annotations

import torch
from filelock import FileLock

from icml26.core.validation import check_int, check_scalar_in

__all__ = ["synthetic_layer", "corpus_prefix_blocks", "locked"]


def _orthogonal(n: int, generator: torch.Generator) -> torch.Tensor:
    Q, R = torch.linalg.qr(torch.randn(n, n, generator=generator, dtype=torch.float64))
    return Q * torch.sign(torch.diagonal(R))


def synthetic_layer(m: int = 256, n: int = 256, tokens: int = 4096, weight_decay: float = 0.5,
                    activation_decay: float = 1.0, seed: int = 0):
    """A linear layer and its inputs with power-law spectra (the unit tests' ground truth).

    Generative process: ``W = U diag(s) Vᵀ`` with ``s_i = i^{−weight_decay}`` and Haar-random
    orthogonal ``U, V``; inputs ``X = Z diag(c) Qᵀ`` with ``Z`` standard normal (tokens × n),
    ``c_j = j^{−activation_decay}`` (anisotropic activations) and a Haar-random ``Q``.

    Parameters
    ----------
    m, n : int
        Output and input width.
    tokens : int
        Rows N of X.
    weight_decay, activation_decay : float
        Exponents of the singular-value power laws.
    seed : int

    Returns
    -------
    W : Tensor (m, n) float32, X : Tensor (tokens, n) float32

    Examples
    --------
    >>> W, X = synthetic_layer(8, 6, tokens=20, seed=0)
    >>> W.shape, X.shape
    (torch.Size([8, 6]), torch.Size([20, 6]))
    """
    for name, value in (("m", m), ("n", n), ("tokens", tokens)):
        check_int(value, name, min_value=1)
    check_int(seed, "seed", min_value=0)
    check_scalar_in(weight_decay, "weight_decay", low=0.0)
    check_scalar_in(activation_decay, "activation_decay", low=0.0)
    generator = torch.Generator().manual_seed(seed)
    k = min(m, n)
    s = torch.arange(1, k + 1, dtype=torch.float64) ** -weight_decay
    W = _orthogonal(m, generator)[:, :k] @ torch.diag(s) @ _orthogonal(n, generator)[:, :k].T
    c = torch.arange(1, n + 1, dtype=torch.float64) ** -activation_decay
    Z = torch.randn(tokens, n, generator=generator, dtype=torch.float64)
    X = (Z * c) @ _orthogonal(n, generator).T
    return W.to(torch.float32), X.to(torch.float32)


# characters tokenized per wanted token (SmolLM2 averages ~3.5 characters per token on this text)
PREFIX_CHARS_PER_TOKEN = 8


def corpus_prefix_blocks(tokenizer, source: str, split: str, seq_len: int, n_blocks: int):
    """The first ``n_blocks`` rows of ``corpus_token_blocks(tokenizer, source, split, seq_len)``,
    tokenizing only a prefix of the split long enough for them (the whole split when needed)."""
    from icml26.zoo import corpus_splits
    from icml26.zoo.corpus import corpus_token_blocks, token_blocks

    text = getattr(corpus_splits(source), split)
    wanted = n_blocks * seq_len
    prefix = text[: wanted * PREFIX_CHARS_PER_TOKEN]
    ids = tokenizer(prefix, add_special_tokens=False, verbose=False)["input_ids"]
    if len(prefix) == len(text) or len(ids) <= wanted:      # too short: tokenize the whole split
        return corpus_token_blocks(tokenizer, source, split, seq_len, n_blocks)
    return token_blocks(ids[:wanted], seq_len, n_blocks)


def locked(path) -> FileLock:
    """An exclusive file lock (two jobs never build the same cache entry at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path))
