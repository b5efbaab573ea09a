"""Tiny Llama / LLaVA: offline build, seeding, shapes, hooks on the language layers, image-token mask."""

import pytest
import torch

from icml26.zoo.hashing import state_dict_sha256
from icml26.zoo.tiny import image_token_mask, tiny_llama, tiny_llava, tiny_llava_inputs


def test_tiny_llama_shapes_and_config():
    model = tiny_llama(vocab=40, hidden=32, layers=3, heads=4, seed=0, kv_heads=2)
    assert type(model).__name__ == "LlamaForCausalLM" and not model.training
    assert len(model.model.layers) == 3 and model.config.num_key_value_heads == 2
    logits = model(torch.randint(40, (2, 7))).logits
    assert logits.shape == (2, 7, 40) and torch.isfinite(logits).all()


def test_same_seed_same_weights_other_seed_other_weights_global_rng_untouched():
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    a = tiny_llama(vocab=40, hidden=32, layers=1, heads=4, seed=5)
    assert torch.equal(torch.rand(1), expected_next)
    b = tiny_llama(vocab=40, hidden=32, layers=1, heads=4, seed=5)
    c = tiny_llama(vocab=40, hidden=32, layers=1, heads=4, seed=6)
    assert state_dict_sha256(a) == state_dict_sha256(b) != state_dict_sha256(c)


@pytest.mark.parametrize("kwargs, error", [({"hidden": 30, "heads": 4}, "multiple of heads"),
                                           ({"kv_heads": 3}, "kv_heads must divide"),
                                           ({"layers": 0}, "layers must be >= 1"),
                                           ({"seed": -1}, "seed must be >= 0")])
def test_tiny_llama_bad_input(kwargs, error):
    with pytest.raises(ValueError, match=error):
        tiny_llama(**{"vocab": 40, "hidden": 32, "layers": 1, "heads": 4, **kwargs})


def test_tiny_llava_is_the_081m_llava_with_16_visual_tokens():
    model = tiny_llava(seed=0)
    assert type(model).__name__ == "LlavaForConditionalGeneration"
    assert sum(p.numel() for p in model.parameters()) == 813_184
    assert model.config.image_token_id == 3 and model.config.image_seq_length == 16
    assert model.config.vision_config.hidden_size == 64 and model.config.text_config.hidden_size == 128
    inputs = tiny_llava_inputs(model, batch=2, text_tokens=5, seed=0)
    assert inputs["input_ids"].shape == (2, 22)
    logits = model(**inputs).logits
    assert logits.shape == (2, 22, 200) and torch.isfinite(logits).all()


def test_layer0_pre_hook_sees_hidden_states_and_mask_marks_the_image_tokens():
    model = tiny_llava(seed=0)
    inputs = tiny_llava_inputs(model, batch=2, text_tokens=5, seed=1)
    seen = {}

    def hook(module, args, kwargs):
        seen["hidden"] = args[0] if args else kwargs["hidden_states"]

    handle = model.model.language_model.layers[0].register_forward_pre_hook(hook, with_kwargs=True)
    try:
        model(**inputs)
    finally:
        handle.remove()
    assert seen["hidden"].shape == (2, 22, 128)
    mask = image_token_mask(inputs["input_ids"], model)
    assert mask.shape == (2, 22) and mask.sum(1).tolist() == [16, 16]
    assert mask[:, 1:17].all() and not mask[:, 0].any() and not mask[:, 17:].any()
    # The hook's states at image positions are the projected vision features, not token embeddings.
    embedded = model.get_input_embeddings()(inputs["input_ids"].clamp(max=199))
    assert not torch.allclose(seen["hidden"][mask], embedded[mask])
    assert torch.allclose(seen["hidden"][~mask], embedded[~mask])


def test_image_pixels_change_only_through_the_visual_tokens():
    model = tiny_llava(seed=0)
    inputs = tiny_llava_inputs(model, batch=1, text_tokens=4, seed=0)
    other = dict(inputs, pixel_values=torch.rand_like(inputs["pixel_values"]))
    a, b = model(**inputs).logits, model(**other).logits
    assert torch.allclose(a[:, 0], b[:, 0])          # the bos position precedes the image
    assert not torch.allclose(a[:, -1], b[:, -1])


def test_image_token_mask_bad_input():
    model = tiny_llava(seed=0)
    with pytest.raises(ValueError, match="LongTensor"):
        image_token_mask(torch.zeros(3, dtype=torch.long), model)
    with pytest.raises(ValueError, match="image_token_id"):
        image_token_mask(torch.zeros(1, 3, dtype=torch.long), tiny_llama(vocab=8, hidden=8, layers=1, heads=2))


@pytest.mark.parametrize("kwargs, error", [({"image_size": 30}, "multiple of patch_size"),
                                           ({"image_token_id": 500}, "image_token_id must be <="),
                                           ({"vision_heads": 3}, "multiple of vision_heads")])
def test_tiny_llava_bad_input(kwargs, error):
    with pytest.raises(ValueError, match=error):
        tiny_llava(**kwargs)
