"""quantize_model on a tiny Llama and the hand-over of the adapters to peft."""

import copy

import pytest
import torch

from icml26.projq import GroupQuantizer, quantize_model, rtn_quantize, to_peft_lora
from icml26.zoo import tiny_llama


@pytest.fixture(scope="module")
def tiny():
    model = tiny_llama(vocab=40, hidden=32, layers=2, heads=4, intermediate=64, seed=0)
    ids = torch.randint(40, (8, 32), generator=torch.Generator().manual_seed(0))
    return model, ids


def _merged(model, report):
    """The quantized base plus B A, written directly into a copy's weights."""
    merged = copy.deepcopy(model)
    for name, layer in report.layers.items():
        if layer.A is not None:
            merged.get_submodule(name).weight.data += layer.B @ layer.A
    return merged


@pytest.mark.parametrize("method", ["projq", "gptq_eora", "loftq"])
def test_peft_model_equals_quantized_base_plus_BA(tiny, method):
    model, ids = tiny
    quantized = copy.deepcopy(model)
    report = quantize_model(quantized, ids, method=method, bits=2, group_size=32, rank=4)
    expected = _merged(quantized, report)
    peft_model = to_peft_lora(quantized, report, lora_alpha=16)
    with torch.no_grad():
        torch.testing.assert_close(peft_model(ids).logits, expected(ids).logits, rtol=1e-4, atol=1e-5)
    trainable = {n for n, p in peft_model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)


def test_reference_scaling_loads_a_quarter_of_the_correction(tiny):
    model, ids = tiny
    quantized = copy.deepcopy(model)
    report = quantize_model(quantized, ids, method="gptq_eora", bits=2, group_size=32, rank=4)
    peft_model = to_peft_lora(copy.deepcopy(quantized), report, lora_alpha=1, respect_lora_scaling=False)
    name = next(iter(report.layers))
    layer = peft_model.get_base_model().get_submodule(name)
    delta = layer.scaling["default"] * layer.lora_B["default"].weight @ layer.lora_A["default"].weight
    torch.testing.assert_close(delta, (1 / 4) * report.layers[name].B @ report.layers[name].A)


def test_zero_init_methods_leave_the_quantized_model_unchanged(tiny):
    model, ids = tiny
    quantized = copy.deepcopy(model)
    report = quantize_model(quantized, ids, method="rtn", bits=3, group_size=32, rank=4)
    for name, layer in report.layers.items():
        W = model.get_submodule(name).weight
        torch.testing.assert_close(quantized.get_submodule(name).weight, rtn_quantize(W, GroupQuantizer(3, 32)))
    base = copy.deepcopy(quantized)
    peft_model = to_peft_lora(quantized, report)
    with torch.no_grad():
        torch.testing.assert_close(peft_model(ids).logits, base(ids).logits)


def test_quantize_model_leaves_the_head_and_embeddings_alone(tiny):
    model, ids = tiny
    quantized = copy.deepcopy(model)
    report = quantize_model(quantized, ids, method="projq", bits=2, group_size=32, rank=4)
    assert len(report.layers) == 14 and "lm_head" not in report.layers
    assert torch.equal(quantized.lm_head.weight, model.lm_head.weight)
    assert all(1 <= layer.n_iter <= 5 for layer in report.layers.values())


def test_model_without_linear_layers_is_rejected(tiny):
    _, ids = tiny
    with pytest.raises(ValueError, match="no torch.nn.Linear"):
        quantize_model(torch.nn.Sequential(torch.nn.Embedding(40, 8)), ids)


def test_conv1d_models_are_rejected_clearly(tiny):
    from transformers.pytorch_utils import Conv1D

    _, ids = tiny
    with pytest.raises(ValueError, match="Conv1D"):
        quantize_model(torch.nn.Sequential(Conv1D(8, 8)), ids)


def test_quantize_model_rejects_bad_arguments(tiny):
    model, ids = tiny
    with pytest.raises(ValueError, match="method"):
        quantize_model(copy.deepcopy(model), ids, method="awq")
    with pytest.raises(ValueError, match="bits"):
        quantize_model(copy.deepcopy(model), ids, bits=0)
    with pytest.raises(ValueError, match="rank"):
        quantize_model(copy.deepcopy(model), ids, group_size=32, rank=32)
    with pytest.raises(ValueError, match="group_size=24"):
        quantize_model(copy.deepcopy(model), ids, group_size=24, rank=4)
    with pytest.raises(ValueError, match="calib_ids"):
        quantize_model(copy.deepcopy(model), ids.float(), group_size=32, rank=4)
    with pytest.raises(ValueError, match="not nn.Linear"):
        quantize_model(copy.deepcopy(model), ids, group_size=32, rank=4, modules=["model.norm"])
