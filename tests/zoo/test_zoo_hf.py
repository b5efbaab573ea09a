import pytest
import torch

from icml26.zoo import decoder_layers, tiny_llama, tiny_llava


def test_decoder_layers_of_llama_and_llava_are_their_real_layer_lists():
    lm = tiny_llama(layers=3)
    assert decoder_layers(lm) is lm.model.layers
    vlm = tiny_llava(seed=0)
    assert decoder_layers(vlm) is vlm.model.language_model.layers and len(decoder_layers(vlm)) == 4


def test_decoder_layers_refuses_a_model_without_them():
    with pytest.raises(TypeError, match="cannot find decoder layers on Linear"):
        decoder_layers(torch.nn.Linear(2, 2))
