"""RAI math against direct computations, hook behaviour under generate, and bad input."""

import math

import pytest
import torch

from icml26.rai import DEFAULT_KEYWORDS, GlyphSafe, RiskAwarenessInjection, UnsafePrototypeSubspace
from icml26.zoo import tiny_llava, tiny_llava_inputs


@pytest.fixture(scope="module")
def model():
    return tiny_llava(seed=0)


def _ups(k=9, d=128, seed=0):
    return UnsafePrototypeSubspace.random(k, d, seed=seed)


def test_prototypes_are_mean_subtoken_embeddings_normalised():
    E = torch.randn(10, 6, generator=torch.Generator().manual_seed(0))
    ups = UnsafePrototypeSubspace.from_embeddings(E, [[1, 2], [5]], ["ab", "c"])
    direct = torch.stack([(E[1] + E[2]) / 2, E[5]])
    assert torch.allclose(ups.U, direct / direct.norm(dim=1, keepdim=True), atol=1e-6)


def test_centering_subtracts_the_vocabulary_mean():
    E = torch.randn(10, 6, generator=torch.Generator().manual_seed(1))
    ups = UnsafePrototypeSubspace.from_embeddings(E, [[3]], center=True)
    direct = E[3] - E.mean(0)
    assert torch.allclose(ups.U[0], direct / direct.norm(), atol=1e-6)


def test_from_model_uses_the_models_input_embeddings():
    world = GlyphSafe(0)
    m = world.build_model()
    ups = UnsafePrototypeSubspace.from_model(m, world.tokenizer, DEFAULT_KEYWORDS)
    ids = [world.tokenizer.convert_tokens_to_ids(w) for w in DEFAULT_KEYWORDS]
    E = m.get_input_embeddings().weight.detach()[ids]
    assert ups.n_prototypes == 9
    assert torch.allclose(ups.U, E / E.norm(dim=1, keepdim=True), atol=1e-6)


def test_modulate_matches_a_direct_loop():
    ups = _ups(k=5, d=16)
    h = torch.randn(32, 16, generator=torch.Generator().manual_seed(2))
    rai = RiskAwarenessInjection(ups, ratio=0.1, tau=0.05, strength=0.7)
    out, info = rai.modulate(h)
    m = max(1, math.ceil(0.1 * 32))
    expected = h.clone()
    S = torch.zeros(32, 5)
    for v in range(32):
        for k in range(5):
            S[v, k] = torch.dot(h[v], ups.U[k]) / h[v].norm()
    risk = S.max(1).values
    top = sorted(range(32), key=lambda v: -risk[v])[:m]
    chosen = [v for v in top if risk[v] > 0.05]
    for v in chosen:
        expected[v] = h[v] + 0.7 * sum(S[v, k] * ups.U[k] for k in range(5) if S[v, k] > 0.05)
    assert torch.allclose(info["scores"], S, atol=1e-5)
    assert sorted(info["selected"].tolist()) == sorted(chosen)
    assert torch.allclose(out, expected, atol=1e-5)


def test_relative_scale_and_projection_mode():
    ups = _ups(k=3, d=8)
    h = torch.randn(4, 8, generator=torch.Generator().manual_seed(3)) * 10
    rai = RiskAwarenessInjection(ups, ratio=1.0, tau=-1.0, scale="relative")
    out, info = rai.modulate(h)
    direct = h + (info["scores"] @ ups.U) * h.norm(dim=1, keepdim=True)
    assert torch.allclose(out, direct, atol=1e-4)
    proj = RiskAwarenessInjection(ups, ratio=1.0, tau=-1.0, mode="projection")
    out, _ = proj.modulate(h)
    P = ups.U.T @ torch.linalg.pinv(ups.U @ ups.U.T) @ ups.U
    assert torch.allclose(out, h + h @ P, atol=1e-4)
    assert torch.allclose(P @ P, P, atol=1e-5)


def test_strength_zero_is_bit_exact_and_zero_norm_token_has_zero_score():
    h = torch.randn(16, 128)
    h[3] = 0
    out, info = RiskAwarenessInjection(_ups(), strength=0.0).modulate(h)
    assert torch.equal(out, h)
    assert torch.all(info["scores"][3] == 0) and torch.isfinite(info["scores"]).all()


def test_tau_gate_can_leave_no_token_selected():
    h = -_ups(k=1, d=8).U.repeat(4, 1)  # every token anti-aligned with the prototype
    out, info = RiskAwarenessInjection(_ups(k=1, d=8), ratio=1.0, tau=0.0).modulate(h)
    assert info["selected"].numel() == 0 and torch.equal(out, h)


def test_bf16_input_returns_bf16_scores_in_fp32():
    h = torch.randn(16, 128).to(torch.bfloat16)
    out, info = RiskAwarenessInjection(_ups()).modulate(h)
    assert out.dtype == torch.bfloat16 and info["scores"].dtype == torch.float32


def test_hook_modulates_prefill_only_and_matches_modulate(model):
    inputs = tiny_llava_inputs(model, batch=2, seed=1)
    rai = RiskAwarenessInjection(_ups(), ratio=0.25, strength=3.0)
    seen = []
    norm0 = model.model.language_model.layers[0].input_layernorm  # sees the residual after RAI's pre-hook
    handle = norm0.register_forward_pre_hook(lambda m, a: seen.append(a[0].clone()))
    try:
        with torch.no_grad():
            model(**inputs)
            plain = seen.pop()
            with rai.attach(model):
                model(**inputs)
                out = model.generate(**inputs, max_new_tokens=3, do_sample=False)
        hooked = seen[0]
    finally:
        handle.remove()
    mask = inputs["input_ids"] == model.config.image_token_id
    for row in range(2):
        expected, _ = rai.modulate(plain[row][mask[row]])
        assert torch.allclose(hooked[row][mask[row]], expected, atol=1e-5)
        assert torch.equal(hooked[row][~mask[row]], plain[row][~mask[row]])
    assert [s.shape[1] for s in seen[2:]] == [1, 1]  # decoding steps: seen, not modulated again
    assert out.shape[1] == inputs["input_ids"].shape[1] + 3
    assert len(rai.last_selection_) == 2 and all(len(s["selected"]) == 4 for s in rai.last_selection_)


def test_hook_is_removed_after_the_context(model):
    inputs = tiny_llava_inputs(model, batch=1, seed=2)
    with torch.no_grad():
        before = model(**inputs).logits
        with RiskAwarenessInjection(_ups(), ratio=1.0, strength=5.0).attach(model):
            during = model(**inputs).logits
        after = model(**inputs).logits
    assert not torch.allclose(before, during) and torch.equal(before, after)


def test_text_only_rows_in_a_mixed_batch_are_untouched(model):
    inputs = tiny_llava_inputs(model, batch=2, seed=3)
    mask = inputs["input_ids"] == model.config.image_token_id
    mask[1] = False
    rai = RiskAwarenessInjection(_ups(), ratio=1.0, strength=5.0)
    with torch.no_grad():
        with rai.attach(model, visual_mask=lambda ids: mask):
            model(**inputs)
    assert [s["row"] for s in rai.last_selection_] == [0]


# -- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("ratio", [0.0, -0.1, 1.5])
def test_ratio_outside_unit_interval_raises(ratio):
    with pytest.raises(ValueError, match="ratio"):
        RiskAwarenessInjection(_ups(), ratio=ratio)


def test_negative_strength_raises():
    with pytest.raises(ValueError, match="strength"):
        RiskAwarenessInjection(_ups(), strength=-1.0)


def test_zero_prototypes_raise():
    with pytest.raises(ValueError, match="K = 0"):
        UnsafePrototypeSubspace(torch.zeros(0, 8))
    world = GlyphSafe(0)
    with pytest.raises(ValueError, match="K = 0"):
        UnsafePrototypeSubspace.from_model(world.build_model(), world.tokenizer, keywords=[])


def test_unknown_keywords_are_listed():
    world = GlyphSafe(0)
    with pytest.raises(ValueError, match=r"\['zzz', 'qqq'\]"):
        UnsafePrototypeSubspace.from_model(world.build_model(), world.tokenizer, ["bomb", "zzz", "qqq"])


def test_prototypes_of_wrong_width_raise(model):
    rai = RiskAwarenessInjection(_ups(d=64))
    with pytest.raises(ValueError, match="width"):
        rai.modulate(torch.randn(16, 128))
    with pytest.raises(ValueError, match="hidden size"):
        with rai.attach(model):
            pass


def test_model_without_image_token_id_raises():
    from icml26.zoo import tiny_llama

    lm = tiny_llama(vocab=40, hidden=128, layers=2, heads=4)
    with pytest.raises(ValueError, match="image_token_id"):
        with RiskAwarenessInjection(_ups()).attach(lm):
            pass


def test_layer_out_of_range_raises(model):
    with pytest.raises(ValueError, match="layer"):
        with RiskAwarenessInjection(_ups(), layer=4).attach(model):
            pass


def test_deeper_layer_warns(model):
    with pytest.warns(UserWarning, match="off-manifold"):
        with RiskAwarenessInjection(_ups(), layer=1).attach(model):
            pass


def test_nan_prototypes_raise():
    with pytest.raises(ValueError, match="NaN"):
        UnsafePrototypeSubspace(torch.full((2, 4), float("nan")))


# -- the oracle control's token replacement (issue #34) ------------------------------------

def test_token_replacement_puts_the_target_at_the_token_norm_on_rais_selection():
    from icml26.rai import TokenReplacement

    ups = _ups(d=16)
    h = torch.randn(16, 16, generator=torch.Generator().manual_seed(4)) * 5
    target = torch.randn(16, generator=torch.Generator().manual_seed(5))
    rep = TokenReplacement(ups, ratio=2 / 16)
    out, info = rep.modulate(h, target)
    expected_sel = RiskAwarenessInjection(ups, ratio=2 / 16, tau=-1.0).modulate(h)[1]["selected"]
    assert torch.equal(info["selected"], expected_sel) and len(info["selected"]) == 2
    for v in range(16):
        if v in info["selected"].tolist():
            assert torch.allclose(out[v], h[v].norm() * target / target.norm(), atol=1e-5)
        else:
            assert torch.equal(out[v], h[v])
    with pytest.raises(ValueError, match="target"):
        rep.modulate(h, torch.zeros(16))
    with pytest.raises(ValueError, match="target"):
        rep.modulate(h, torch.ones(3))


def test_token_replacement_hook_uses_one_target_per_row(model):
    from icml26.rai import TokenReplacement

    inputs = tiny_llava_inputs(model, batch=2, seed=6)
    rep = TokenReplacement(_ups(), ratio=1 / 16)
    with torch.no_grad():
        with pytest.raises(ValueError, match="targets"):
            with rep.attach(model):
                model(**inputs)
        rep.targets = torch.eye(128)[:2] * 3
        seen = []
        norm0 = model.model.language_model.layers[0].input_layernorm
        handle = norm0.register_forward_pre_hook(lambda m, a: seen.append(a[0].clone()))
        try:
            with rep.attach(model):
                model(**inputs)
        finally:
            handle.remove()
    for row, sel in enumerate(rep.last_selection_):
        token = seen[0][row, sel["positions"][sel["selected"]]][0]
        assert torch.allclose(token / token.norm(), torch.eye(128)[row], atol=1e-5)
