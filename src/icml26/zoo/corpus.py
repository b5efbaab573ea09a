"""The stdlib text corpus: English prose that ships with Python, so no method downloads text.

Two sources, both part of every CPython install:

* ``"topics"`` — ``pydoc_data.topics.topics``, the language-reference topics that ``help()``
  shows (~465k characters, ~113k SmolLM2 tokens);
* ``"docstrings"`` — ``inspect.getdoc`` of the public stdlib modules, their classes,
  functions and methods (~670k characters);
* ``"all"`` — topics, then docstrings.

:func:`stdlib_text` builds the text in a fresh interpreter (``python -I -S``), so it does not
depend on what the calling process has imported (some libraries patch stdlib classes on
import, which changes their docstrings). The text is then deterministic for a given Python
build (sorted topic keys and module names, duplicate texts dropped, pieces joined by blank
lines); its SHA-256 is recorded in
:data:`RECORDED_SHA256` per Python version, and :func:`stdlib_text` warns when the text built
here differs from the record. The fixed train/dev/test split cuts the text into three
contiguous blocks at characters ``floor(0.9 n)`` and ``floor(0.95 n)`` (90/5/5), so a
character tokenizer and a subword tokenizer see the same held-out prose.

Examples
--------
>>> from icml26.zoo.corpus import corpus_splits, CharTokenizer
>>> train, dev, test = corpus_splits("topics")
>>> len(train) > 10 * len(test) > 0
True
"""

from __future__ import annotations

import functools
import hashlib
import string
import subprocess
import sys
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from icml26.zoo._corpus_build import build_corpus

__all__ = ["SOURCES", "DEFAULT_FRACTIONS", "RECORDED_SHA256", "CorpusSplits", "load_stdlib_corpus",
           "stdlib_text", "corpus_splits", "split_corpus", "corpus_sha256", "corpus_sha1",
           "corpus_info", "token_blocks", "corpus_token_blocks", "CharTokenizer"]

SOURCES = ("topics", "docstrings", "all")
DEFAULT_FRACTIONS = (0.9, 0.05, 0.05)
_BUILDER = Path(__file__).with_name("_corpus_build.py")

# SHA-256 of stdlib_text(source), measured on the named CPython build. A different Python
# version builds a different (equally deterministic) corpus; a record exists only where we
# measured one.
RECORDED_SHA256 = {
    "3.11.7": {
        "topics": "9b937e6f9ec9e25298171cec3fad3a5450dcbe608fc40e15bc9e423793047feb",
        "docstrings": "232352fc8b5e848f1dbed6c59cdb9464c4688a482b53eab57ef4299469128c96",
        "all": "54c3d28b219fd56a6d23b2e353ec48a9d4cbe993a1fd1dd75da786d050d15ca2",
    },
}


class CorpusSplits(NamedTuple):
    """The fixed contiguous ``(train, dev, test)`` blocks of a text or id sequence."""

    train: object
    dev: object
    test: object


def load_stdlib_corpus(python_docs: bool = True, docstrings: bool = True) -> str:
    """Build the corpus text *in this process* (the TOP reproduction's historical entry point).

    Deterministic for a given Python build **and set of imported libraries**: a library that
    patches a stdlib class on import changes the docstrings collected (``transformers`` adds
    ``warning_once`` to ``logging.Logger``). The TOP results record this text as built with
    ``torch`` and ``transformers`` imported. New code should use :func:`stdlib_text`, which
    builds the text in a fresh interpreter and is independent of what the caller imported.

    Parameters
    ----------
    python_docs : bool
        Include ``pydoc_data.topics.topics`` (the language reference, ~465k chars).
    docstrings : bool
        Include ``inspect.getdoc`` of public stdlib modules, classes and functions.

    Returns
    -------
    str

    Examples
    --------
    >>> len(load_stdlib_corpus(docstrings=False)) > 100_000
    True
    """
    return build_corpus(python_docs=python_docs, docstrings=docstrings)


def _check_source(source: str) -> str:
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    return source


@functools.lru_cache(maxsize=None)
def stdlib_text(source: str = "all") -> str:
    """The corpus text of one source, built once per process and checked against the record.

    Parameters
    ----------
    source : {"topics", "docstrings", "all"}

    Returns
    -------
    str

    Warns
    -----
    UserWarning
        When this Python version has a recorded SHA-256 and the text differs from it
        (results are then not comparable with the recorded runs).
    """
    _check_source(source)
    done = subprocess.run([sys.executable, "-I", "-S", str(_BUILDER), source], capture_output=True,
                          check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"building the stdlib corpus failed:\n{done.stderr.decode(errors='replace')}")
    text = done.stdout.decode("utf-8")
    recorded = RECORDED_SHA256.get(_python_version(), {}).get(source)
    if recorded is not None and corpus_sha256(text) != recorded:
        warnings.warn(f"stdlib corpus {source!r} has SHA-256 {corpus_sha256(text)}, not the one "
                      f"recorded for Python {_python_version()} ({recorded}): a module's docstrings "
                      "differ here (a patched stdlib?); numbers are not comparable with the record",
                      stacklevel=2)
    return text


def _python_version() -> str:
    return ".".join(map(str, sys.version_info[:3]))


def split_corpus(seq, fractions=DEFAULT_FRACTIONS) -> CorpusSplits:
    """Contiguous train/dev/test blocks of a sequence (array, tensor or string), 90/5/5 by default.

    Cuts at ``floor(f0 n)`` and ``floor(f0 n) + floor(f1 n)``.

    Parameters
    ----------
    seq : sliceable with ``len``
    fractions : three positive floats summing to 1

    Returns
    -------
    CorpusSplits

    Examples
    --------
    >>> split_corpus(np.arange(20)).test
    array([19])
    """
    fractions = tuple(float(f) for f in fractions)
    if len(fractions) != 3 or abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) <= 0:
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions}")
    n = len(seq)
    a = int(n * fractions[0])
    b = a + int(n * fractions[1])
    return CorpusSplits(seq[:a], seq[a:b], seq[b:])


def corpus_splits(source: str = "all", fractions=DEFAULT_FRACTIONS) -> CorpusSplits:
    """The fixed ``(train, dev, test)`` text blocks of a source (contiguous, 90/5/5 by characters).

    Splitting the text by characters means a :class:`CharTokenizer` over ``train`` gives
    exactly ``split_corpus(CharTokenizer().encode(text)).train``, and a subword tokenizer
    sees the same held-out prose.

    Parameters
    ----------
    source : {"topics", "docstrings", "all"}
    fractions : three positive floats summing to 1

    Returns
    -------
    CorpusSplits of str
    """
    return split_corpus(stdlib_text(source), fractions)


def corpus_sha256(text: str) -> str:
    """SHA-256 hex digest of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def corpus_sha1(text: str) -> str:
    """SHA-1 hex digest of the UTF-8 text (the fingerprint the TOP results record)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def corpus_info(source: str = "all") -> dict:
    """Size and fingerprint of a source: chars, sha256, recorded sha256 (or None), match."""
    text = stdlib_text(source)
    recorded = RECORDED_SHA256.get(_python_version(), {}).get(source)
    digest = corpus_sha256(text)
    return {"source": source, "python": _python_version(), "chars": len(text), "sha256": digest,
            "recorded_sha256": recorded, "matches_record": recorded == digest if recorded else None}


def token_blocks(ids, seq_len: int, n_blocks: int | None = None):
    """Cut a 1-D id sequence into non-overlapping contiguous rows of ``seq_len`` tokens.

    Parameters
    ----------
    ids : 1-D sequence of int (list, array or tensor)
    seq_len : int
        Tokens per row (>= 1).
    n_blocks : int, optional
        Keep only the first ``n_blocks`` rows; an error when fewer are available.
        Default: every full row (the tail shorter than ``seq_len`` is dropped).

    Returns
    -------
    torch.LongTensor of shape (n_blocks, seq_len)

    Examples
    --------
    >>> token_blocks(list(range(10)), 4).tolist()
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    """
    import torch

    if not isinstance(seq_len, (int, np.integer)) or isinstance(seq_len, bool) or seq_len < 1:
        raise ValueError(f"seq_len must be an int >= 1, got {seq_len!r}")
    flat = torch.as_tensor(np.asarray(ids), dtype=torch.long).reshape(-1)
    available = flat.numel() // seq_len
    if n_blocks is None:
        n_blocks = available
    elif not isinstance(n_blocks, (int, np.integer)) or isinstance(n_blocks, bool) or n_blocks < 1:
        raise ValueError(f"n_blocks must be an int >= 1 or None, got {n_blocks!r}")
    elif n_blocks > available:
        raise ValueError(f"n_blocks={n_blocks} rows of {seq_len} tokens need {n_blocks * seq_len} "
                         f"ids, got {flat.numel()}")
    return flat[: n_blocks * seq_len].reshape(n_blocks, seq_len)


def corpus_token_blocks(tokenizer, source: str = "topics", split: str = "test", seq_len: int = 256,
                        n_blocks: int | None = None, fractions=DEFAULT_FRACTIONS):
    """Tokenise one fixed split of a source and cut it into contiguous rows of ``seq_len`` tokens.

    Parameters
    ----------
    tokenizer : Hugging Face tokenizer (called with ``add_special_tokens=False``) or any object
        with ``encode(text)`` returning ids (e.g. :class:`CharTokenizer`)
    source : {"topics", "docstrings", "all"}
    split : {"train", "dev", "test"}
    seq_len, n_blocks : int
        See :func:`token_blocks`.
    fractions : three positive floats summing to 1

    Returns
    -------
    torch.LongTensor of shape (n_blocks, seq_len)
    """
    if split not in CorpusSplits._fields:
        raise ValueError(f"split must be one of {CorpusSplits._fields}, got {split!r}")
    text = getattr(corpus_splits(source, fractions), split)
    if isinstance(tokenizer, CharTokenizer) or not callable(tokenizer):
        ids = tokenizer.encode(text)
    else:
        ids = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
    return token_blocks(ids, seq_len, n_blocks)


class CharTokenizer:
    """Character tokenizer over a fixed alphabet (default: ``string.printable``, V = 100).

    Characters outside the alphabet map to ``unknown`` (default ``"?"``).

    References
    ----------
    Follows the ``encode``/``decode`` convention of Hugging Face tokenizers. Used for the
    character-level language models of Zuhri, Fuadi & Aji, "Predicting the Order of Upcoming Tokens
    Improves Language Modeling", ICML 2026 (arXiv:2508.19228). (our CPU-scale setting, not from the
    paper).

    Examples
    --------
    >>> tok = CharTokenizer()
    >>> tok.decode(tok.encode("hé!"))
    'h?!'
    """

    def __init__(self, alphabet: str = string.printable, unknown: str = "?"):
        if len(set(alphabet)) != len(alphabet) or len(alphabet) < 2:
            raise ValueError("alphabet must hold at least 2 distinct characters")
        if unknown not in alphabet:
            raise ValueError(f"unknown={unknown!r} must be in the alphabet")
        self.alphabet = alphabet
        self.unknown = unknown
        self._index = {c: i for i, c in enumerate(alphabet)}

    @property
    def vocab_size(self) -> int:
        return len(self.alphabet)

    def encode(self, text: str) -> np.ndarray:
        unk = self._index[self.unknown]
        return np.fromiter((self._index.get(c, unk) for c in text), dtype=np.int64, count=len(text))

    def decode(self, ids) -> str:
        return "".join(self.alphabet[int(i)] for i in ids)
