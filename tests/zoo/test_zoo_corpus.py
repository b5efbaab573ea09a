"""The stdlib corpus: determinism independent of the caller's imports, recorded hashes, splits."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

from icml26.zoo.corpus import (RECORDED_SHA256, CharTokenizer, corpus_info, corpus_sha1, corpus_sha256,
                               corpus_splits, load_stdlib_corpus, split_corpus, stdlib_text, token_blocks)


def test_topics_source_is_the_pydoc_topics_in_sorted_order():
    from pydoc_data.topics import topics

    text = stdlib_text("topics")
    first = min(topics)
    assert text.startswith(topics[first].strip())
    assert len(text) > 400_000


def test_all_is_topics_then_docstrings():
    assert stdlib_text("all").startswith(stdlib_text("topics"))
    assert len(stdlib_text("all")) > len(stdlib_text("topics")) + 500_000


def test_text_does_not_depend_on_what_the_caller_imported():
    # transformers patches logging.Logger on import; the isolated build must not see that.
    code = ("import transformers, logging; from icml26.zoo.corpus import stdlib_text, corpus_sha256; "
            "assert hasattr(logging.Logger, 'warning_once'); print(corpus_sha256(stdlib_text('docstrings')))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == corpus_sha256(stdlib_text("docstrings"))


@pytest.mark.skipif(".".join(map(str, sys.version_info[:3])) not in RECORDED_SHA256,
                    reason="no corpus hash recorded for this Python version")
@pytest.mark.parametrize("source", ["topics", "docstrings", "all"])
def test_text_matches_the_recorded_sha256(source):
    info = corpus_info(source)
    assert info["matches_record"] is True and info["sha256"] == info["recorded_sha256"]


def test_a_changed_text_is_reported_against_the_record(monkeypatch):
    version = ".".join(map(str, sys.version_info[:3]))
    monkeypatch.setitem(RECORDED_SHA256, version, {"topics": "0" * 64})
    stdlib_text.cache_clear()
    try:
        with pytest.warns(UserWarning, match="not the one recorded"):
            stdlib_text("topics")
    finally:
        stdlib_text.cache_clear()


def test_splits_are_contiguous_90_5_5_by_characters():
    text = stdlib_text("topics")
    train, dev, test = corpus_splits("topics")
    assert train + dev + test == text
    n = len(text)
    assert len(train) == int(0.9 * n) and len(dev) == int(0.05 * n)


def test_char_split_of_the_text_equals_the_split_of_char_ids():
    text = stdlib_text("topics")
    tok = CharTokenizer()
    by_text = [tok.encode(part) for part in corpus_splits("topics")]
    by_ids = split_corpus(tok.encode(text))
    for a, b in zip(by_text, by_ids):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fractions", [(0.9, 0.1), (0.5, 0.5, 0.1), (1.0, 0.0, 0.0), (0.9, -0.05, 0.15)])
def test_split_refuses_bad_fractions(fractions):
    with pytest.raises(ValueError, match="fractions"):
        split_corpus(np.arange(10), fractions)


def test_unknown_source_is_refused():
    with pytest.raises(ValueError, match="source must be one of"):
        stdlib_text("wikipedia")


def test_in_process_builder_needs_a_source():
    with pytest.raises(ValueError, match="at least one"):
        load_stdlib_corpus(python_docs=False, docstrings=False)


def test_hashes_are_the_standard_digests():
    assert corpus_sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert corpus_sha1("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d"


def test_token_blocks_cut_contiguous_rows_and_drop_the_tail():
    rows = token_blocks(np.arange(11), 4)
    assert rows.dtype == torch.long and rows.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert token_blocks(torch.arange(11), 2, n_blocks=3).tolist() == [[0, 1], [2, 3], [4, 5]]


@pytest.mark.parametrize("kwargs, match", [({"seq_len": 0}, "seq_len"), ({"seq_len": 4, "n_blocks": 3}, "n_blocks=3"),
                                           ({"seq_len": 2, "n_blocks": 0}, "n_blocks")])
def test_token_blocks_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        token_blocks(np.arange(11), **kwargs)


def test_char_tokenizer_round_trip_and_unknown():
    tok = CharTokenizer()
    assert tok.vocab_size == 100
    assert tok.decode(tok.encode("def f(x):\n\treturn x")) == "def f(x):\n\treturn x"
    assert tok.decode(tok.encode("é")) == "?"
    with pytest.raises(ValueError, match="unknown"):
        CharTokenizer("ab", unknown="c")
