"""zoo's tiny models on a second device, and seeded builds that leave every RNG alone."""

import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases, forward_backward
from icml26.zoo import (decoder_layers, image_token_mask, state_dict_sha256, tiny_llama,
                        tiny_llama_config, tiny_llava, tiny_llava_config, tiny_llava_inputs,
                        token_blocks)


def _llama(dev):
    model = tiny_llama(vocab=32, hidden=16, layers=1, heads=2, seed=0).to(dev)
    ids = token_blocks(torch.arange(40) % 32, 8, 2).to(dev)
    out = forward_backward(model, ids, reduce=lambda o: o.logits.sum())
    out["sha"] = state_dict_sha256(model)
    out["layers"] = len(decoder_layers(model))
    return out


def _llava(dev):
    model = tiny_llava(seed=0).to(dev)
    inputs = tiny_llava_inputs(model, batch=1, text_tokens=2)
    out = model(**inputs)
    return {"logits": out.logits, "mask": image_token_mask(inputs["input_ids"], model)}


ENTRIES = [
    DeviceEntry("zoo.tiny_llama", _llama,
                covers=("zoo.tiny_llama_config", "zoo.token_blocks", "zoo.state_dict_sha256",
                        "zoo.decoder_layers")),
    DeviceEntry("zoo.tiny_llava", _llava,
                covers=("zoo.tiny_llava_config", "zoo.tiny_llava_inputs", "zoo.image_token_mask")),
]

NO_DEVICE = {
    "load_smollm2": "loads SmolLM2 on the CPU from the installed GGUF; move it with .to(device)",
    "smollm2_cache_dir": "a path",
    "smollm2_gguf_path": "a path",
    "SmolLM2NotInstalledError": "an exception",
    "file_sha256": "hashes a file",
}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


@pytest.mark.parametrize("build", [
    lambda: tiny_llama(vocab=16, hidden=8, layers=1, heads=2, seed=3),
    lambda: tiny_llava(seed=3),
])
def test_seeded_builds_reseed_no_cuda_generator(monkeypatch, build):
    calls = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", lambda seed: calls.append(("all", seed)))
    monkeypatch.setattr(torch.cuda, "manual_seed", lambda seed: calls.append(("one", seed)))
    state = torch.random.get_rng_state()
    build()
    assert calls == [] and torch.equal(torch.random.get_rng_state(), state)


def test_config_builders_are_plain_configs():
    assert tiny_llama_config(vocab=16, hidden=8, layers=1, heads=2).hidden_size == 8
    assert tiny_llava_config().image_token_id == 3
