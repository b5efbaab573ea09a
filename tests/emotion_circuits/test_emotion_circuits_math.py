"""Math of the emotion-circuit pipeline against direct computations, invariants and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.emotion_circuits import (VEENA, CircuitLocalizer, EmotionWheel, HFAdapter, SteeringVectors,
                                     ToyLVLM, WHEEL, cosine, hit_rate, make_pairs, sample_hit, specificity)
from icml26.emotion_circuits.hooks import AttentionBoost, Capture, HeadReplace, NeuronScale, ResidualAdd
from icml26.emotion_circuits.toy import Pairs, SUB

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def toy():
    return ToyLVLM.planted(seed=0)


@pytest.fixture(scope="module")
def pairs(toy):
    return make_pairs(toy, n=24, seed=3)


@pytest.fixture(scope="module")
def llama():
    from icml26.zoo import tiny_llama

    return tiny_llama(vocab=40, hidden=32, layers=2, heads=4, seed=0)


# -- metrics --------------------------------------------------------------------------------

def test_hit_rate_matches_direct_count():
    cats = torch.tensor([[0, 0, -1, 1, 2], [3, -1, -1, -1, -1], [-2, -2, -2, -2, -2]])
    labels = torch.tensor([0, 3, 1])
    rate, empty = hit_rate(cats, labels, 4, return_flags=True)
    assert torch.allclose(rate, torch.tensor([2 / 5, 1 / 5, 0.0]))
    assert empty.tolist() == [False, False, True]


def test_sample_hit_uses_plurality_set_with_ties():
    cats = torch.tensor([[0, 1, 1], [0, 1, -1], [-1, -1, -1]])
    assert sample_hit(cats, torch.tensor([0, 0, 0]), 3).tolist() == [0.0, 1.0, 0.0]


def test_wheel_rejects_duplicate_words_and_empty():
    with pytest.raises(ValueError, match="two categories"):
        EmotionWheel({"joy": ["happy"], "sadness": ["happy"]})
    with pytest.raises(ValueError, match="non-empty"):
        EmotionWheel({})


def test_specificity_formula():
    assert specificity([1, 0, 0, 0]) == pytest.approx(1.0)
    assert specificity([1, 1, 1, 1]) == pytest.approx(0.0)
    e = np.array([0.6, 0.2, 0.2, -0.5])
    p = np.maximum(e, 0) / np.maximum(e, 0).sum()
    assert specificity(e) == pytest.approx((4 * p.max() - 1) / 3)
    assert specificity([-1, -1]) == 0.0


def test_cosine_zero_vector_is_zero_not_nan():
    assert float(cosine(torch.zeros(5), torch.ones(5))) == 0.0
    a, b = torch.randn(7), torch.randn(7)
    assert float(cosine(a, b)) == pytest.approx(float(a @ b / a.norm() / b.norm()), abs=1e-6)


# -- hooks -----------------------------------------------------------------------------------

def test_head_capture_reconstructs_o_proj_output(toy, pairs):
    adapter = toy.adapter()
    cap = Capture(heads=True, residual=True)
    adapter.forward(pairs.emotional, capture=cap)
    a = cap.store["heads"][3]
    total = sum(adapter.head_write(3, c, a[..., c * 16:(c + 1) * 16]) for c in range(4))
    direct = toy.model.layers[3].self_attn.o_proj(a)
    assert torch.allclose(total, direct, atol=1e-5)


def test_vee_equals_reweighting_post_softmax(toy, pairs):
    """+ln β on visual logits == multiply visual attention weights by β and renormalise."""
    adapter = toy.adapter()
    beta, n = 3.0, pairs.query_pos
    plain, boosted = Capture(attention=True), Capture(attention=True)
    adapter.forward(pairs.emotional, capture=plain)
    boost = AttentionBoost([(3, 0)], [], beta, n, pairs.visual_mask)
    # capture attention of layer 3 only with the boost on layer 3 (upstream layers unchanged)
    adapter.forward(pairs.emotional, [boost], capture=boosted)
    w = plain.store["attention"][3][:, 0, n].clone()
    w[:, pairs.visual_mask] *= beta
    w /= w.sum(-1, keepdim=True)
    assert torch.allclose(boosted.store["attention"][3][:, 0, n], w, atol=1e-6)
    # other rows and heads untouched
    assert torch.equal(boosted.store["attention"][3][:, 1], plain.store["attention"][3][:, 1])
    assert torch.allclose(boosted.store["attention"][3][:, 0, :n], plain.store["attention"][3][:, 0, :n])


def test_vee_no_visual_keys_is_noop(toy, pairs):
    adapter = toy.adapter()
    base = adapter.forward(pairs.emotional)
    boost = AttentionBoost([(3, 0)], [(7, 2)], 2.0, pairs.query_pos, torch.zeros_like(pairs.visual_mask))
    assert torch.allclose(adapter.forward(pairs.emotional, [boost]), base, atol=1e-6)


def test_beta_gamma_one_are_bit_identical_noops(toy, pairs, llama):
    adapter = toy.adapter()
    veena = VEENA([(3, 0)], [(7, 2)], [(6, 0)], beta=1.0, gamma=1.0)
    base = adapter.forward(pairs.emotional)
    with veena.applied(toy, visual_mask=pairs.visual_mask, query_pos=pairs.query_pos):
        out = toy(inputs_embeds=pairs.emotional).logits
    assert torch.equal(out, base)
    ids = torch.randint(0, 40, (2, 9), generator=torch.Generator().manual_seed(5))
    ref = llama(ids).logits
    with VEENA([(0, 1)], [(1, 2)], [(1, 3)], 1.0, 1.0).applied(llama, visual_mask=torch.arange(9) < 4, query_pos=8):
        assert torch.equal(llama(ids).logits, ref)


def test_vee_registered_in_transformers_and_restored(llama):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    from icml26.emotion_circuits import VEE_ATTENTION

    ids = torch.randint(0, 40, (2, 9), generator=torch.Generator().manual_seed(5))
    ref = llama(ids).logits
    veena = VEENA([(0, 1)], [(1, 2)], [], beta=4.0, gamma=1.0)
    with veena.applied(llama, visual_mask=torch.arange(9) < 4, query_pos=8):
        assert llama.config._attn_implementation == VEE_ATTENTION
        changed = llama(ids).logits
    assert VEE_ATTENTION in ALL_ATTENTION_FUNCTIONS
    assert llama.config._attn_implementation == "sdpa"
    assert not torch.allclose(changed[:, 8:], ref[:, 8:])
    assert torch.allclose(changed[:, :8], ref[:, :8], atol=1e-6)      # before the query token: untouched
    assert torch.allclose(llama(ids).logits, ref)


def test_veena_works_inside_hf_generate_with_cache(llama):
    ids = torch.randint(0, 40, (2, 9), generator=torch.Generator().manual_seed(5))
    veena = VEENA([(0, 1)], [(1, 2)], [(1, 3)], beta=3.0, gamma=2.0)
    with veena.applied(llama, visual_mask=torch.arange(9) < 4, query_pos=8):
        out = llama.generate(ids, max_new_tokens=4, do_sample=False)
        full = llama(out[:, :-1]).logits[:, 8:]
    generated, predicted = out[:, 9:], full.argmax(-1)
    eos = llama.generation_config.eos_token_id
    for row in range(2):     # compare up to the first end-of-sequence token (generate pads after it)
        stop = (generated[row] == eos).nonzero()
        k = int(stop[0]) + 1 if len(stop) else generated.shape[1]
        assert torch.equal(predicted[row, :k], generated[row, :k])


def test_generation_with_cache_matches_full_forward(toy, pairs):
    adapter = toy.adapter()
    edits = VEENA([(3, 0), (4, 1)], [(7, 2)], [(6, 0)], 2.0, 2.0).edits(toy, pairs.visual_mask, pairs.query_pos)
    edits.append(ResidualAdd(5, 0.3 * torch.ones(64), from_pos=pairs.query_pos))
    ids = adapter.generate(pairs.emotional, 6, seed=1, edits=edits)
    seq = torch.cat([pairs.emotional, adapter.embed(ids[:, :5])], 1)
    full = adapter.forward(seq, edits)[:, pairs.query_pos:]
    teacher = adapter.generate(pairs.emotional, 6, seed=1, edits=edits, continuation=ids)
    assert torch.equal(teacher, ids)
    # greedy decisions of the full forward + the same Gumbel noise give the same tokens
    gen = torch.Generator().manual_seed(1)
    noise = -torch.log(-torch.log(torch.rand(len(pairs), 6, full.shape[-1], generator=gen).clamp_(1e-12, 1 - 1e-7)))
    scores = (full + noise).masked_fill(~adapter.allowed_tokens, float("-inf"))
    assert torch.equal(scores.argmax(-1), ids)


def test_residual_add_and_neuron_scale_direct(toy, pairs):
    adapter = toy.adapter()
    n = pairs.query_pos
    vec = torch.randn(64)
    cap0, cap1 = Capture(residual=True, neurons=True), Capture(residual=True, neurons=True)
    adapter.forward(pairs.emotional, capture=cap0)
    adapter.forward(pairs.emotional, [ResidualAdd(2, vec, from_pos=n)], capture=cap1)
    diff = cap1.store["residual"][2] - cap0.store["residual"][2]
    assert torch.allclose(diff[:, n], vec.expand(len(pairs), -1), atol=1e-5)
    assert torch.equal(diff[:, :n], torch.zeros_like(diff[:, :n]))
    cap2 = Capture(neurons=True)
    adapter.forward(pairs.emotional, [NeuronScale(6, [0, 5], 3.0, n)], capture=cap2)
    # the hook scales the input of down_proj; the capture (installed after) sees the scaled value
    assert torch.allclose(cap2.store["neurons"][6][:, n, [0, 5]], 3 * cap0.store["neurons"][6][:, n, [0, 5]])


def test_head_patching_full_replacement_equals_source_run(toy, pairs):
    adapter = toy.adapter()
    src = Capture(heads=True)
    ref = adapter.forward(pairs.neutral, capture=src)
    edits = [HeadReplace(l, h, src.store["heads"][l][..., h * 16:(h + 1) * 16]) for l in range(8) for h in range(4)]
    # replacing every head's output (all layers) on X+ leaves only the visual-token MLP difference
    patched = adapter.forward(pairs.emotional, edits)
    assert patched.shape == ref.shape
    assert not torch.allclose(patched, adapter.forward(pairs.emotional))


# -- pipeline math ---------------------------------------------------------------------------

def test_steering_vectors_match_direct_mean(toy, pairs):
    sv = SteeringVectors(tau=0.0, n_tokens=4, n_gen_positions=2, random_state=0).fit(toy, pairs, WHEEL)
    adapter = toy.adapter()
    caps = []
    for x in (pairs.emotional, pairs.neutral):
        cap = Capture(residual=True)
        adapter.forward(x, capture=cap)
        caps.append(cap.store["residual"])
    v = sv.valid_
    for layer in (0, 4, 7):
        direct = (caps[0][layer][v, pairs.query_pos] - caps[1][layer][v, pairs.query_pos]).mean(0)
        assert torch.allclose(sv.S_[layer], direct, atol=1e-5)
        k = int(pairs.labels[v][0])
        pick = v & (pairs.labels == k)
        direct_k = (caps[0][layer][pick, pairs.query_pos] - caps[1][layer][pick, pairs.query_pos]).mean(0)
        assert torch.allclose(sv.S_per_emotion_[k, layer], direct_k, atol=1e-5)
    # emotion reaches the query token only through layers 3-4: S_l ~ 0 before (toy ground truth)
    assert float(sv.S_[:3].norm(dim=-1).max()) < 0.05 * float(sv.S_[4].norm())


def test_alpha_normalises_injection_norm(toy, pairs):
    sv = SteeringVectors(tau=0.0, n_tokens=4, n_gen_positions=2).fit(toy, pairs, WHEEL)
    a = sv.alpha(4, 0.5)
    assert a * float(sv.S_[4].norm()) == pytest.approx(0.5 * float(sv.residual_norm_[4]), rel=1e-5)
    sv.S_[1] = 0.0
    assert sv.alpha(1, 1.0) == 0.0


def test_neuron_kappa_matches_direct(toy, pairs):
    sv = SteeringVectors(tau=0.0, n_tokens=4, n_gen_positions=2).fit(toy, pairs, WHEEL)
    loc = CircuitLocalizer(sv, n_gen_positions=2)
    table = loc.score_neurons(toy, pairs, top_k=4, layers=[6]).set_index(["layer", "neuron"])
    adapter = toy.adapter()
    acts = []
    for x in (pairs.emotional, pairs.neutral):
        cap = Capture(neurons=True)
        adapter.forward(x, capture=cap)
        acts.append(cap.store["neurons"][6][sv.valid_, pairs.query_pos])
    w = toy.model.layers[6].mlp.down_proj.weight[:, 2].detach()
    direct = float((acts[0][:, 2] - acts[1][:, 2]).mean() * (w @ sv.S_[6]) / (w.norm() * sv.S_[6].norm()))
    assert table.loc[(6, 2), "kappa"] == pytest.approx(direct, rel=1e-4, abs=1e-7)


def test_projection_proxy_effect_is_zero_for_unread_heads(toy, pairs):
    sv = SteeringVectors(tau=0.0, n_tokens=4, n_gen_positions=2).fit(toy, pairs, WHEEL)
    loc = CircuitLocalizer(sv, n_gen_positions=2)
    heads = loc.score_heads(toy, pairs, WHEEL, heads=[(3, 0), (4, 1)], metric="projection", proxy_layer=3)
    by = heads.set_index(["layer", "head"])
    assert by.loc[(4, 1), "noising"] == 0.0            # layer 4 is after the proxy layer
    assert by.loc[(3, 0), "noising"] != 0.0


# -- bad input --------------------------------------------------------------------------------

def test_bad_pairs_rejected(pairs):
    with pytest.raises(ValueError, match="aligned"):
        Pairs(pairs.emotional, pairs.neutral[:, :-1], pairs.labels, pairs.visual_mask, 17)
    with pytest.raises(ValueError, match="empty"):
        Pairs(pairs.emotional[:0], pairs.neutral[:0], pairs.labels[:0], pairs.visual_mask, 17)
    with pytest.raises(ValueError, match="labels"):
        Pairs(pairs.emotional, pairs.neutral, pairs.labels[:3], pairs.visual_mask, 17)
    bad = pairs.emotional.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        Pairs(bad, pairs.neutral, pairs.labels, pairs.visual_mask, 17)


def test_empty_valid_set_reports_max_hit_rate(toy, pairs):
    no_cue = Pairs(pairs.neutral, pairs.neutral, torch.full_like(pairs.labels, 3), pairs.visual_mask, 17)
    with pytest.raises(ValueError, match="observed max"):
        SteeringVectors(tau=0.5, n_tokens=6, n_gen_positions=2).fit(toy, no_cue, WHEEL)
    with pytest.raises(ValueError, match="tau"):
        SteeringVectors(tau=1.0).fit(toy, pairs, WHEEL)


def test_bad_veena_arguments(toy, pairs):
    with pytest.raises(ValueError, match="beta"):
        VEENA(beta=0.0)
    with pytest.raises(ValueError, match="beta"):
        VEENA(beta=-1.0)
    with pytest.raises(ValueError, match="gamma"):
        VEENA(gamma=-0.5)
    with pytest.raises(ValueError, match="mid_heads"):
        VEENA(mid_heads=[(8, 0)]).edits(toy, pairs.visual_mask, 17)
    with pytest.raises(ValueError, match="deep_heads"):
        VEENA(deep_heads=[(0, 4)]).edits(toy, pairs.visual_mask, 17)
    with pytest.raises(ValueError, match="neurons"):
        VEENA(neurons=[(6, 32)]).edits(toy, pairs.visual_mask, 17)


def test_bad_localizer_arguments(toy, pairs):
    sv = SteeringVectors(tau=0.0, n_tokens=3, n_gen_positions=2).fit(toy, pairs, WHEEL)
    loc = CircuitLocalizer(sv, n_gen_positions=2)
    with pytest.raises(ValueError, match="out of range"):
        loc.score_heads(toy, pairs, WHEEL, heads=[(0, 9)], metric="projection")
    with pytest.raises(ValueError, match="top_k"):
        loc.score_neurons(toy, pairs, top_k=10_000)
    with pytest.raises(ValueError, match="metric"):
        loc.score_heads(toy, pairs, WHEEL, metric="logit")
    with pytest.raises(ValueError, match="fitted"):
        CircuitLocalizer(SteeringVectors())
    with pytest.raises(TypeError, match="decoder layers"):
        HFAdapter(torch.nn.Linear(2, 2))


def test_frozen_calibration_meets_the_rule():
    from icml26.emotion_circuits import behaviour
    from icml26.emotion_circuits.toy import CALIBRATED, N_GENERATED

    toy = ToyLVLM.planted(seed=0, params=CALIBRATED)
    stats = behaviour(toy, make_pairs(toy, n=200, seed=10_000), WHEEL, N_GENERATED, seed=0)
    assert 0.30 <= stats["HIT"] <= 0.50
    assert stats["joy_hallucination"] >= 0.15


def test_steering_vectors_seed_is_a_deprecated_alias_of_random_state():
    from icml26.emotion_circuits import WHEEL, SteeringVectors, ToyLVLM, make_pairs

    toy = ToyLVLM.planted(seed=0)
    pairs = make_pairs(toy, n=12, seed=0)
    new = SteeringVectors(tau=0.0, n_tokens=4, n_gen_positions=2, random_state=5).fit(toy, pairs, WHEEL)
    with pytest.warns(FutureWarning, match="random_state"):
        old = SteeringVectors(tau=0.0, n_tokens=4, n_gen_positions=2, seed=5).fit(toy, pairs, WHEEL)
    assert torch.equal(new.continuation_, old.continuation_) and torch.equal(new.S_, old.S_)
