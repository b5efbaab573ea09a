"""emotion_circuits' torch components on a second device (fake here, CUDA where present)."""

import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases
from fakecuda import FakeCuda
from icml26.emotion_circuits import (WHEEL, CircuitLocalizer, HFAdapter, SteeringVectors, ToyLVLM,
                                     VEENA, behaviour, cosine, hit_rate, make_pairs,
                                     predicted_emotions, sample_hit, select_circuit)
from icml26.emotion_circuits.baselines import attention_head_scores
from icml26.zoo import tiny_llama


def _toy(dev, description="shared"):
    return ToyLVLM.planted(seed=0, description=description).to(dev)


def _pairs(toy, n=6):
    return make_pairs(toy, n=n, seed=0)


def _cats(dev):
    return torch.tensor([[0, 1, 1, -1], [2, 2, 0, -2], [-1, -1, -1, -1]]).to(dev)


def _forward(description):
    def run(dev):
        toy = _toy(dev, description)
        pairs = _pairs(toy, 3)
        return {"logits": toy(inputs_embeds=pairs.emotional).logits,
                "generated": HFAdapter.wrap(toy).generate(pairs.emotional, 3, seed=0)}
    return run


def _steering(dev):
    toy = _toy(dev)
    pairs = make_pairs(ToyLVLM.planted(seed=0), n=6, seed=0)      # CPU pairs: moved by fit
    sv = SteeringVectors(tau=0.0, n_tokens=4, n_gen_positions=2).fit(toy, pairs, WHEEL)
    return {"S": sv.S_, "per": sv.S_per_emotion_, "gen": sv.S_generated_,
            "norm": sv.residual_norm_, "valid": sv.valid_, "cont": sv.continuation_}


def _localizer(metric):
    def run(dev):
        toy = _toy(dev)
        pairs = _pairs(toy, 2)
        sv = SteeringVectors(tau=0.0, n_tokens=2, n_gen_positions=1).fit(toy, pairs, WHEEL)
        loc = CircuitLocalizer(sv, n_gen_positions=1)
        heads = loc.score_heads(toy, pairs, WHEEL, heads=[(3, 0)], metric=metric,
                                denoising=metric != "hit_rate")
        neurons = loc.score_neurons(toy, pairs, top_k=4, layers=[6, 7])
        out = {"heads": heads.to_dict("list"), "neurons": neurons.head(8).to_dict("list"),
               "circuit": select_circuit(heads, neurons, n_mid=1, n_deep=1, top_k=2)}
        if metric == "projection":
            out["layers"] = loc.scan_layers(toy, pairs, WHEEL).to_dict("list")
        return out
    return run


def _veena(dev):
    toy = _toy(dev)
    pairs = _pairs(toy, 3)
    veena = VEENA(mid_heads=[(3, 0)], deep_heads=[(7, 2)], neurons=[(6, 0)], beta=2.0, gamma=2.0)
    with veena.applied(toy, visual_mask=pairs.visual_mask, query_pos=pairs.query_pos):
        logits = toy(inputs_embeds=pairs.emotional).logits
    return {"logits": logits, "behaviour": behaviour(toy, pairs, WHEEL, 3, seed=0,
                                                     edits=veena.edits(toy, pairs.visual_mask,
                                                                       pairs.query_pos)),
            "attention": attention_head_scores(toy, pairs).to_dict("list")}


def _vee_on_llama(dev):
    model = tiny_llama(vocab=32, hidden=16, layers=2, heads=2, seed=0).to(dev)
    ids = torch.randint(0, 32, (2, 6), generator=torch.Generator().manual_seed(0)).to(dev)
    mask = torch.zeros(6, dtype=torch.bool)
    mask[1:4] = True
    veena = VEENA(mid_heads=[(0, 1)], deep_heads=[(1, 0)], neurons=[(1, 3)], beta=3.0, gamma=2.0)
    with veena.applied(model, visual_mask=mask.to(dev), query_pos=4):
        logits = model(ids).logits
    return logits


ENTRIES = [
    DeviceEntry("emotion_circuits.hit_rate", lambda dev: hit_rate(
        _cats(dev), torch.tensor([0, 2, 1]).to(dev), 3, return_flags=True)),
    DeviceEntry("emotion_circuits.sample_hit",
                lambda dev: sample_hit(_cats(dev), torch.tensor([1, 2, 0]).to(dev), 3)),
    DeviceEntry("emotion_circuits.predicted_emotions",
                lambda dev: predicted_emotions(_cats(dev), 3)),
    DeviceEntry("emotion_circuits.cosine",
                lambda dev: cosine(torch.randn(4, 3).to(dev), torch.randn(1, 3).to(dev))),
    DeviceEntry("emotion_circuits.ToyLVLM shared", _forward("shared"),
                covers=("emotion_circuits.make_pairs", "emotion_circuits.Pairs",
                        "emotion_circuits.HFAdapter")),
    DeviceEntry("emotion_circuits.ToyLVLM slotted", _forward("slotted")),
    DeviceEntry("emotion_circuits.SteeringVectors", _steering,
                covers=("emotion_circuits.EmotionWheel",)),
    DeviceEntry("emotion_circuits.CircuitLocalizer expected hit rate",
                _localizer("expected_hit_rate"), covers=("emotion_circuits.select_circuit",)),
    DeviceEntry("emotion_circuits.CircuitLocalizer sampled hit rate", _localizer("hit_rate")),
    DeviceEntry("emotion_circuits.CircuitLocalizer projection and layer scan",
                _localizer("projection")),
    DeviceEntry("emotion_circuits.VEENA", _veena, covers=("emotion_circuits.behaviour",)),
    DeviceEntry("emotion_circuits.vee_attention_forward", _vee_on_llama,
                covers=("emotion_circuits.register_vee_attention",)),
]

NO_DEVICE = {
    "specificity": "numpy arithmetic on patching effects",
}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


def test_pairs_follow_the_toy_and_move():
    with FakeCuda() as fake:
        toy = ToyLVLM.planted(seed=0).to(fake.device)
        pairs = make_pairs(toy, n=2, seed=0)
        assert {pairs.emotional.device, pairs.labels.device, pairs.visual_mask.device} == {fake.device}
        back = pairs.to("cpu")
        assert back.labels.device.type == "cpu" and back.emotional.device.type == "cpu"

FOLLOWS_INPUTS = {"SteeringVectors": "fit(model, pairs, wheel) runs on the model's device "
                                     "(pairs are moved there)"}
