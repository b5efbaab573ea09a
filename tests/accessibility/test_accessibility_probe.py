"""Hook-based states, streaming statistics and the logit lens on a tiny Llama; bad inputs."""

import math

import pytest
import torch

from icml26.accessibility import (LayerStats, collect_layer_stats, logit_lens, model_parts, profile,
                                  readout_basis, residual_states)
from icml26.zoo import tiny_llama


@pytest.fixture(scope="module")
def model():
    m = tiny_llama(vocab=40, hidden=16, layers=3, heads=2, seed=0)
    with torch.no_grad():  # a non-trivial final-norm gain, so pre- and post-norm states differ
        m.model.norm.weight.copy_(torch.linspace(0.5, 2.0, 16))
    return m


@pytest.fixture(scope="module")
def ids():
    return torch.randint(40, (3, 20), generator=torch.Generator().manual_seed(0))


def test_residual_states_are_pre_norm_and_match_hidden_states(model, ids):
    states = residual_states(model, ids)
    out = model(ids, output_hidden_states=True)
    assert sorted(states) == [0, 1, 2, 3]
    for layer in range(3):
        assert torch.allclose(states[layer], out.hidden_states[layer], atol=1e-6)
    # the last HF hidden state is post-norm; ours is the norm's input
    assert torch.allclose(model.model.norm(states[3]), out.hidden_states[-1], atol=1e-5)
    assert not torch.allclose(states[3], out.hidden_states[-1], atol=1e-3)
    assert not any(layer._forward_pre_hooks for layer in model.model.layers)  # hooks removed


def test_collect_layer_stats_excludes_skip_and_padding(model, ids):
    mask = torch.ones_like(ids)
    mask[1, 15:] = 0
    stats = collect_layer_stats(model, ids, attention_mask=mask, skip=2, batch_size=2)
    states = residual_states(model, ids, attention_mask=mask)
    keep = mask.bool().clone()
    keep[:, :2] = False
    for layer in (0, 3):
        rows = states[layer][keep].double()
        assert stats[layer].n_tokens == int(keep.sum())
        assert torch.allclose(stats[layer].cov(), torch.cov(rows.T, correction=0), atol=1e-6)


def test_logit_lens_at_the_final_layer_is_the_model(model, ids):
    states = residual_states(model, ids, layers=[1, 3])
    labels = ids[:, 1:]
    cut = {k: v[:, :-1] for k, v in states.items()}
    lens = logit_lens(model, cut, labels)
    logits = model(ids).logits[:, :-1]
    ce = torch.nn.functional.cross_entropy(logits.detach().reshape(-1, 40), labels.reshape(-1))
    assert lens[3]["ce"] == pytest.approx(float(ce), rel=1e-5)
    assert lens[3]["kl_to_final"] == pytest.approx(0.0, abs=1e-6) and lens[3]["top1_agree"] == 1.0
    assert lens[1]["kl_to_final"] > 0


def test_profile_frame_and_variants(model, ids):
    frame = profile(model, ids, skip=1, ks=(4, 8))
    assert list(frame["layer"]) == [0, 1, 2, 3]
    assert {"entropy_norm", "erank", "enrichment_4", "readout_energy", "ce_lens", "cos_update"} <= set(frame)
    assert frame["entropy_norm"].between(0, 1).all()
    rms = profile(model, ids, skip=1, ks=(4,), token_norm="rms", lens=False)
    assert "ce_lens" not in rms and not rms["erank"].equals(frame["erank"])
    Q, sv = readout_basis(model)
    assert Q.shape == (16, 16) and bool((sv[:-1] >= sv[1:]).all())


class _NoHead(torch.nn.Module):
    def get_output_embeddings(self):
        return None


class _HeadOnly(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lm_head = torch.nn.Linear(4, 9, bias=False)

    def get_output_embeddings(self):
        return self.lm_head


def test_bad_inputs(model, ids):
    with pytest.raises(ValueError, match="no readout"):
        model_parts(_NoHead())
    with pytest.raises(ValueError, match="cannot find its decoder blocks"):
        model_parts(_HeadOnly())
    with pytest.raises(TypeError, match="torch.nn.Module"):
        model_parts("gpt2")
    with pytest.raises(ValueError, match=r"layers must be in \[0, 3\]"):
        residual_states(model, ids, layers=[4])
    with pytest.raises(ValueError, match="input_ids must be a 2-D LongTensor"):
        profile(model, ids.float())
    with pytest.raises(ValueError, match="exceeds the hidden size"):
        profile(model, ids, ks=(17,))
    with pytest.raises(ValueError, match="token_norm must be one of"):
        profile(model, ids, token_norm="layer")
    with pytest.raises(ValueError, match="attention_mask must have the shape"):
        collect_layer_stats(model, ids, attention_mask=torch.ones(3, 2))
    with pytest.warns(RuntimeWarning, match="rank-deficient"):  # 3 x 3 = 9 tokens < d = 16
        profile(model, ids[:, :4], skip=1, ks=(4,), lens=False)


def test_nan_activations_raise_a_clear_error(ids):
    broken = tiny_llama(vocab=40, hidden=16, layers=2, heads=2, seed=1)
    with torch.no_grad():
        broken.model.layers[0].mlp.down_proj.weight[0, 0] = float("nan")
    with pytest.raises(FloatingPointError, match="layer 1 contain NaN"):
        profile(broken, ids, ks=(4,))


def test_logit_lens_of_every_layer_against_float64_log_softmaxes(model, ids):
    """CE, KL(p_final ‖ p_ℓ) and top-1 agreement of the buffered lens (no (n, V) log-probabilities)
    against float64 log-softmaxes of the full lens logits."""
    states = residual_states(model, ids)
    labels = ids[:, 1:]
    cut = {k: v[:, :-1] for k, v in states.items()}
    mask = torch.ones(labels.shape, dtype=torch.bool)
    mask[0, :4] = False
    lens = logit_lens(model, cut, labels, mask=mask)
    parts = model_parts(model)
    with torch.no_grad():
        def logp(layer):
            return torch.log_softmax(parts.readout(cut[layer][mask]).double(), -1)
        final = logp(3)
        for layer in range(4):
            lp = logp(layer)
            want = (float(-lp.gather(1, labels[mask][:, None]).mean()),
                    float((final.exp() * (final - lp)).sum(1).mean()),
                    float((lp.argmax(1) == final.argmax(1)).double().mean()))
            got = (lens[layer]["ce"], lens[layer]["kl_to_final"], lens[layer]["top1_agree"])
            assert got == pytest.approx(want, rel=1e-5, abs=1e-6), layer
    assert lens[0]["kl_to_final"] > 100 * 1e-6   # resolvable at the tolerance above


def test_the_forward_skips_the_full_readout_but_not_the_states(model, ids):
    from icml26.accessibility.probe import _keeps_logits

    assert _keeps_logits(type(model))
    with torch.no_grad():
        ref = model(ids, output_hidden_states=True).hidden_states
    states = residual_states(model, ids)
    for layer in range(3):
        assert torch.equal(states[layer], ref[layer])
