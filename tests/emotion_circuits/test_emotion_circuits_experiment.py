"""Quick runs of every part of the emotion_circuits experiment through the runner."""

from __future__ import annotations

import math

import pytest
import torch

from icml26.core.claims import Measurement, evaluate
from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("emotion_circuits")


def _by_id(outcome):
    return {c.id: c for c in outcome.result.claims}


def test_planted_quick_localises_the_planted_circuit(experiment):
    outcome = run_part(experiment, "planted", quick=True)
    claims = _by_id(outcome)
    assert len(claims) == 20
    for cid in ("head_auroc", "head_precision_at_4", "decoy_shadow_below", "attention_fooled", "spec_general",
                "random_HIT_change_abs"):
        assert claims[f"planted/{cid}"].verdict == "PASS", (cid, claims[f"planted/{cid}"].measured)
    assert all(math.isfinite(float(c.measured)) for c in claims.values())
    assert {"planted: layer scan", "planted: head scores"} <= set(outcome.result.figures)
    assert "interventions (test split)" in outcome.result.tables
    assert experiment.table.headline == "planted/veena_HIT_gain"


def test_trained_quick_runs_and_reports(experiment):
    outcome = run_part(experiment, "trained", quick=True)
    claims = _by_id(outcome)
    assert set(claims) == {"trained/spearman", "trained/veena_HIT_gain"}
    assert all(math.isfinite(float(c.measured)) for c in claims.values())
    assert outcome.result.figures


def test_scaling_quick_measures_a_slope(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claim = _by_id(outcome)["scaling/slope"]
    assert math.isfinite(float(claim.measured)) and float(claim.measured) > 0


def _planted_measurements(**over):
    good = {"layer_adapt_ratio": 0.0, "layer_mid_ratio": 1.0, "layer_deep_ratio": 0.9, "adapt_gap": 0.0,
            "random_adapt_gap": 0.4, "head_auroc": 1.0, "attention_auroc": 0.6, "head_precision_at_4": 1.0,
            "decoy_shadow_below": 1.0, "attention_fooled": 1.0, "spec_mid": 0.9, "spec_general": 0.1,
            "spec_other": 0.5, "esn_recall_at_4": 1.0, "random_esn_recall_at_4": 0.0, "pai_dev_cost": 5.0,
            "veena_H_gain": Measurement(10.0, interval=(8.0, 12.0)), "random_H_gain": 0.0, "pai_H_gain": 9.0,
            "veena_HIT_gain": Measurement(10.0, interval=(8.0, 12.0)), "random_HIT_gain": 0.0, "pai_HIT_gain": 9.0,
            "veena_joy_change": -2.0, "random_joy_change": 0.0,
            "vee_only_HIT_gain": Measurement(5.0, interval=(3.0, 7.0)),
            "ena_only_HIT_gain": Measurement(2.0, interval=(1.0, 3.0)), "random_HIT_change_abs": 0.0,
            "veena_object_change": 0.0, "pai_max_object_change": -10.0, "pai_object_change": -1.0,
            "veena_vs_pai_HIT": Measurement(1.0, interval=(0.5, 1.5)), "random_vs_pai_HIT": -9.0}
    good.update(over)
    return good


def test_planted_gates_can_flip(experiment):
    """Every paper claim passes on good measurements; a planted control flips the verdict."""
    table = experiment.table.for_part("planted")
    verdicts = lambda **over: {c.id: c.verdict for c in evaluate(table, _planted_measurements(**over))}  # noqa: E731
    good = verdicts()
    assert all(v == "PASS" for v in good.values()), good
    # a random circuit that gains as much: the HIT claim is not earned
    assert verdicts(random_HIT_gain=5.0)["planted/veena_HIT_gain"] == "NOT EARNED"
    # global amplification is free (premise control fails): the VEENA-vs-PAI claim is incomplete
    assert verdicts(pai_dev_cost=0.0)["planted/veena_vs_pai_HIT"] == "INCOMPLETE"
    # a tie with PAI-style: the interval straddles 0
    tie = verdicts(veena_vs_pai_HIT=Measurement(0.1, interval=(-1.0, 1.2)))
    assert tie["planted/veena_vs_pai_HIT"] == "INCONCLUSIVE"
    # a gain whose interval includes 0 is not a PASS, whatever its point value (the spec's 10 is an alt bar)
    assert verdicts(veena_HIT_gain=Measurement(12.0, interval=(-0.5, 24.0)))["planted/veena_HIT_gain"] == "INCONCLUSIVE"
    # amplification that costs nothing even at β = 12: "narrative preserved" holds by construction
    assert verdicts(pai_max_object_change=0.0)["planted/veena_object_change"] == "NOT EARNED"
    # the attention ranking finds the planted heads too: the head-score claim is not earned
    assert verdicts(attention_auroc=0.97)["planted/head_auroc"] == "NOT EARNED"


def test_pick_setting_respects_the_utility_constraint():
    """The dev rule takes the highest-HIT setting whose object accuracy stays within the tolerance
    (PAI-style β = 12 in the shared toy loses object words); without the constraint it may not."""
    from icml26.emotion_circuits import ToyLVLM, make_pairs
    from icml26.emotion_circuits.experiment import pick_pai_beta
    from icml26.emotion_circuits.toy import WHEEL, N_GENERATED
    from icml26.emotion_circuits.circuits import behaviour

    toy = ToyLVLM.planted(seed=0)
    model = toy.adapter()
    dev = make_pairs(toy, n=60, seed=0)
    base = behaviour(model, dev, WHEEL, N_GENERATED, 0)["object_accuracy"]
    beta, grid = pick_pai_beta(model, dev, (1.5, 12.0), 0, tolerance=0.02)
    chosen = next(g for g in grid if g["beta"] == beta)
    assert chosen["object_accuracy"] >= base - 0.02 - 1e-12
    free_beta, _ = pick_pai_beta(model, dev, (1.5, 12.0), 0, tolerance=None)
    assert free_beta == max(grid, key=lambda g: g["HIT"])["beta"]


def test_tone_slot_hit_rate_is_twice_the_twelve_word_rate():
    """In the slotted toy only the 6 odd (tone) slots can hold an emotion word, so 𝓗 over the 12
    words is at most 0.5 and 𝓗 over tone slots is exactly twice it."""
    from icml26.emotion_circuits import ToyLVLM, make_pairs
    from icml26.emotion_circuits.circuits import behaviour
    from icml26.emotion_circuits.toy import WHEEL, N_GENERATED

    toy = ToyLVLM.planted(seed=1, description="slotted")
    pairs = make_pairs(toy, n=32, seed=1)
    out = behaviour(toy.adapter(), pairs, WHEEL, N_GENERATED, 1, per_sample=True)
    h, h_tone = torch.tensor(out["H_s"]), torch.tensor(out["H_tone_s"])
    assert float(h.max()) <= 0.5
    assert torch.allclose(h_tone, 2 * h)
    assert len(out["HIT_s"]) == 32


def test_same_seed_same_numbers():
    from icml26.emotion_circuits import WHEEL, CircuitLocalizer, SteeringVectors, ToyLVLM, behaviour, make_pairs

    runs = []
    for _ in range(2):
        toy = ToyLVLM.planted(seed=2)
        pairs = make_pairs(toy, n=16, seed=2)
        sv = SteeringVectors(tau=0.0, n_tokens=6, n_gen_positions=4, random_state=2).fit(toy, pairs, WHEEL)
        heads = CircuitLocalizer(sv, n_gen_positions=4, seed=2).score_heads(toy, pairs, WHEEL, heads=[(3, 0), (7, 2)])
        runs.append((heads["score"].tolist(), behaviour(toy, pairs, WHEEL, 6, seed=2)))
    assert runs[0] == runs[1]


def test_slotted_description_separates_content_and_tone():
    """#40: the "slotted" toy reads object words only at even (content) slots and emotion words
    only at odd (tone) slots; the "shared" toy is unchanged (no mask, same logits)."""
    from icml26.emotion_circuits import WHEEL, ToyLVLM, make_pairs
    from icml26.emotion_circuits.toy import OBJECT_WORDS, VOCABULARY

    shared, slotted = ToyLVLM.planted(seed=1), ToyLVLM.planted(seed=1, description="slotted")
    pairs = make_pairs(shared, n=32, seed=1)
    assert shared.slot_mask(torch.arange(20)) is None
    a = shared(inputs_embeds=pairs.emotional).logits
    b = slotted(inputs_embeds=pairs.emotional).logits
    assert torch.equal(a[:, :-1], b[:, :-1])            # prompt positions are not masked
    ids = slotted.adapter().generate(pairs.emotional, 12, seed=1)
    words = [[VOCABULARY[i] for i in row] for row in ids.tolist()]
    for row in words:
        assert not any(WHEEL.category(w) is not None for w in row[0::2])
        assert not any(w in OBJECT_WORDS for w in row[1::2])
    assert any(WHEEL.category(w) is not None for row in words for w in row)
    assert any(w in OBJECT_WORDS for row in words for w in row)
    with pytest.raises(ValueError, match="description"):
        ToyLVLM.planted(seed=0, description="other")


def test_slotted_quick_runs_and_reports(experiment):
    outcome = run_part(experiment, "slotted", quick=True)
    claims = _by_id(outcome)
    assert len(claims) == 20
    assert "slotted/veena_H_tone_gain" in claims and "slotted/veena_H_gain" not in claims
    assert "slotted/veena_vs_pai_HIT" in claims
    assert all(math.isfinite(float(c.measured)) for c in claims.values())
    assert {"slotted: layer scan", "slotted: head scores"} <= set(outcome.result.figures)


def test_fit_leaves_the_global_rng_alone():
    from icml26.emotion_circuits import WHEEL, CircuitLocalizer, SteeringVectors, ToyLVLM, make_pairs

    toy = ToyLVLM.planted(seed=3)
    pairs = make_pairs(toy, n=16, seed=3)
    state = torch.get_rng_state()
    sv = SteeringVectors(tau=0.0, n_tokens=6, n_gen_positions=4, random_state=3).fit(toy, pairs, WHEEL)
    CircuitLocalizer(sv, n_gen_positions=4, seed=3).score_heads(toy, pairs, WHEEL, heads=[(3, 0)])
    assert torch.equal(torch.get_rng_state(), state)
