"""Quick runs of every part of the emotion_circuits experiment through the runner."""

from __future__ import annotations

import math

import pytest
import torch

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("emotion_circuits")


def test_planted_quick_localises_the_planted_circuit(experiment):
    outcome = run_part(experiment, "planted", quick=True)
    claims = outcome.claims_by_name()
    assert len(claims) == 18
    for name in ("head score AUROC (planted specific vs other heads)", "head score precision@4",
                 "decoy and shadow below all planted heads (fraction of seeds)",
                 "attention-weight baseline: decoy or shadow in its top 4 (fraction of seeds)",
                 "specificity of planted mid heads", "specificity of general heads (7,0), (7,2)",
                 "random components: |HIT change| (points)"):
        assert claims[name].passed, (name, claims[name].measured)
    assert all(math.isfinite(float(c.measured)) for c in claims.values())
    assert {"planted: layer scan", "planted: head scores"} <= set(outcome.result.figures)
    assert "interventions (test split)" in outcome.result.tables


def test_trained_quick_runs_and_reports(experiment):
    outcome = run_part(experiment, "trained", quick=True)
    claims = outcome.claims_by_name()
    assert set(claims) == {"tier 2: Spearman(head score, ablation effect)", "tier 2: VEENA held-out HIT gain (points)"}
    assert all(math.isfinite(float(c.measured)) for c in claims.values())
    assert outcome.result.figures


def test_scaling_quick_measures_a_slope(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claim = outcome.claims_by_name()["head-scoring log-log slope in L·H"]
    assert math.isfinite(float(claim.measured)) and float(claim.measured) > 0


def test_same_seed_same_numbers():
    from icml26.emotion_circuits import WHEEL, CircuitLocalizer, SteeringVectors, ToyLVLM, behaviour, make_pairs

    runs = []
    for _ in range(2):
        toy = ToyLVLM.planted(seed=2)
        pairs = make_pairs(toy, n=16, seed=2)
        sv = SteeringVectors(tau=0.0, n_tokens=6, n_gen_positions=4, seed=2).fit(toy, pairs, WHEEL)
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
    claims = outcome.claims_by_name()
    assert len(claims) == 18
    assert "VEENA: object-word accuracy change (points)" in claims
    assert all(math.isfinite(float(c.measured)) for c in claims.values())
    assert {"slotted: layer scan", "slotted: head scores"} <= set(outcome.result.figures)
