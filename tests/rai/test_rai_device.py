"""rai's torch components on a second device (fake here, CUDA where present)."""

import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases
from fakecuda import FakeCuda
from icml26.rai import (AdaShieldS, CoCA, ECSOLite, GlyphSafe, GlyphSafeConfig, NoDefense,
                        OracleReplacement, RAIDefense, RiskAwarenessInjection,
                        UnsafePrototypeSubspace, decoder_layers)
from icml26.rai.glyphsafe import _cache_key

WORLD = GlyphSafe(seed=0)


def _model(dev):
    return WORLD.build_model().to(dev)


def _queries():
    return WORLD.attack_set(2, split="dev") + WORLD.benign_set(1, split="dev")


def _defense(make):
    def run(dev):
        model = _model(dev)
        return make(model).respond(model, _queries()) + make(model).respond(
            model, WORLD.text_harmful_set(2))
    return run


def _rai():
    def run(dev):
        model = _model(dev)
        ups = UnsafePrototypeSubspace.from_model(model, WORLD.tokenizer)
        defense = RAIDefense(RiskAwarenessInjection(ups, ratio=0.25))
        answers = defense.respond(model, _queries())
        return {"answers": answers, "selections": defense.selections_, "U": ups.U,
                "states": GlyphSafe.last_token_states(model, _queries(), layer=1),
                "layers": len(decoder_layers(model))}
    return run


def _oracle(dev):
    model = _model(dev)
    return OracleReplacement.for_world(model, WORLD, tokens=2).respond(model, _queries())


def _train(dev):
    world = GlyphSafe(seed=0, config=GlyphSafeConfig(s1_steps=1, s0_steps=1, s2_steps=1,
                                                     s3_grid=(1,), batch=2, n_precondition=2))
    model = world.train(stages=("s1", "s0", "s2"), device=dev)
    return {"weights": model.lm_head.weight, "answers": world.generate(model, _queries())}


ENTRIES = [
    DeviceEntry("rai.NoDefense", _defense(lambda m: NoDefense())),
    DeviceEntry("rai.AdaShieldS", _defense(lambda m: AdaShieldS())),
    DeviceEntry("rai.ECSOLite", _defense(lambda m: ECSOLite())),
    DeviceEntry("rai.CoCA", _defense(lambda m: CoCA(alpha=2.0))),
    DeviceEntry("rai.RAIDefense", _rai(), outputs="any",
                covers=("rai.RiskAwarenessInjection", "rai.UnsafePrototypeSubspace",
                        "rai.decoder_layers", "rai.GlyphSafe", "rai.Query")),
    DeviceEntry("rai.OracleReplacement", _oracle, covers=("rai.TokenReplacement",)),
    DeviceEntry("rai.GlyphSafe training", _train, covers=("rai.GlyphSafeConfig",)),
]

NO_DEVICE = {
    "render": "numpy glyph images",
    "KeywordRefusalJudge": "judges text",
    "StepsJudge": "judges text",
    "asr": "counts judged text",
}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


def test_random_prototypes_work_on_a_device_model():
    with FakeCuda() as fake:
        model = _model(fake.device)
        ups = UnsafePrototypeSubspace.random(3, model.config.text_config.hidden_size, seed=0)
        RAIDefense(RiskAwarenessInjection(ups, ratio=0.25)).respond(model, _queries())


def test_trained_model_cache_key_names_a_non_cpu_device():
    cfg = GlyphSafeConfig()
    assert _cache_key(cfg, 0) == _cache_key(cfg, 0, "cpu") != _cache_key(cfg, 0, "cuda")
