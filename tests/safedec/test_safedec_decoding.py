"""constrain_logits, sampling, SafeDecoder and the baselines, the HF logits processor."""

import numpy as np
import pytest
import torch

from icml26.safedec import (Always, And, Eventually, FilterDecoder, InfeasibleSpecError, NavTransformer, Predicate,
                            RejectionDecoder, SafeDecLogitsProcessor, SafeDecoder, UnconstrainedDecoder,
                            constrain_logits, sample_tokens)


class Line:
    """1-D robot: tokens move by -1, 0, +1, +2."""

    steps = np.array([-1.0, 0.0, 1.0, 2.0])

    def predict_all(self, s):
        return np.asarray(s, dtype=float)[:, None, :] + self.steps[None, :, None]


LE2 = Always(Predicate("x<=2", lambda x: 2.0 - x[..., 0]))


def test_hcd_masks_exactly_negative_robustness_and_keeps_zero():
    z = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    out, infeasible = constrain_logits(z, [[0.5, 0.0, -1e-12, -3.0]], mode="hcd")
    assert out.tolist() == [[1.0, 2.0, float("-inf"), float("-inf")]]
    assert not infeasible.any()


def test_rcd_adds_clipped_exponential_bonus():
    z = torch.tensor([[0.5, -1.0, float("-inf")]], dtype=torch.float64)
    r = np.array([[0.3, 5.0, 0.0]])
    out, _ = constrain_logits(z, r, mode="rcd", alpha=5.0, beta=2.0, r_clip=1.0)
    expected = [0.5 + 5 * np.exp(0.6), -1.0 + 5 * np.exp(2.0), -np.inf]
    np.testing.assert_allclose(out.numpy()[0], expected)


def test_rcd_with_alpha_zero_is_bitwise_identity_and_never_overflows():
    z = torch.randn(8, 5)
    out, _ = constrain_logits(z, np.full((8, 5), 1e300), mode="rcd", alpha=0.0)
    assert torch.equal(out, z)
    big, _ = constrain_logits(z.half(), np.full((8, 5), 1e300), mode="rcd", alpha=10.0, beta=50.0)
    assert torch.isfinite(big).all()


def test_hcd_delta_never_demands_more_margin_than_current_state():
    z = torch.zeros(1, 3)
    out, _ = constrain_logits(z, [[0.1, 0.2, 0.5]], mode="hcd", delta=0.36, r_now=[0.15])
    assert torch.isneginf(out).tolist() == [[True, False, False]]


def test_all_masked_uses_fallback_or_raises_in_strict_mode():
    z = torch.tensor([[1.0, 2.0, 3.0]])
    rob = [[-1.0, -1.0, -1.0]]
    out, infeasible = constrain_logits(z, rob, fallback_token=1)
    assert infeasible.tolist() == [True] and out.tolist() == [[float("-inf"), 0.0, float("-inf")]]
    kept, _ = constrain_logits(z, rob)
    assert torch.equal(kept, z)
    with pytest.raises(InfeasibleSpecError):
        constrain_logits(z, rob, fallback_token=1, strict=True)


@pytest.mark.parametrize("logits,rob,match", [
    (torch.zeros(2, 3), np.zeros((2, 4)), "does not match logits shape"),
    (torch.tensor([[0.0, float("nan")]]), np.zeros((1, 2)), "NaN or \\+inf"),
    (torch.tensor([[0.0, float("inf")]]), np.zeros((1, 2)), "NaN or \\+inf"),
    (torch.full((1, 2), float("-inf")), np.zeros((1, 2)), "already all -inf"),
    (torch.zeros(1, 2), np.array([[0.0, np.nan]]), "NaN"),
])
def test_bad_logits_or_robustness_are_rejected(logits, rob, match):
    with pytest.raises(ValueError, match=match):
        constrain_logits(logits, rob)


@pytest.mark.parametrize("kw,match", [({"alpha": -1.0}, "alpha"), ({"beta": 0.0}, "beta"),
                                      ({"mode": "soft"}, "mode"), ({"delta": -0.1}, "delta")])
def test_bad_parameters_name_the_argument(kw, match):
    with pytest.raises(ValueError, match=match):
        constrain_logits(torch.zeros(1, 2), np.zeros((1, 2)), **kw)


def test_bad_temperature_is_rejected_unless_greedy():
    with pytest.raises(ValueError, match="temperature"):
        SafeDecoder(None, LE2, Line(), temperature=0.0)
    SafeDecoder(None, LE2, Line(), temperature=0.0, greedy=True)


def test_inverse_cdf_sampling_matches_manual_computation_and_skips_masked_tokens():
    z = torch.tensor([[0.0, float("-inf"), 0.0, 0.0]] * 4)
    u = torch.tensor([0.0, 0.33, 0.34, 0.999999])
    assert sample_tokens(z, u).tolist() == [0, 0, 2, 3]
    draws = sample_tokens(torch.tensor([[1.0, 0.0, -1.0]]).repeat(40000, 1),
                          generator=torch.Generator().manual_seed(0))
    freq = np.bincount(draws.numpy(), minlength=3) / 40000
    np.testing.assert_allclose(freq, torch.softmax(torch.tensor([1.0, 0.0, -1.0]), 0).numpy(), atol=0.01)


def test_hcd_equals_unconstrained_when_spec_is_trivially_true():
    spec = Always(Predicate("true", lambda x: np.ones(x.shape[:-1])))
    rng = np.random.default_rng(0)
    hcd, unc = SafeDecoder(None, spec, Line()), UnconstrainedDecoder(None, spec, Line())
    states = np.zeros((16, 1))
    for _ in range(5):
        z, u = torch.randn(16, 4), rng.random(16)
        a, _ = hcd.decode(z, states, u)
        b, _ = unc.decode(z, states, u)
        assert torch.equal(a, b)
        states = states + 1


def test_hcd_trajectories_never_violate_with_exact_dynamics():
    rng = np.random.default_rng(1)
    dec = SafeDecoder(None, LE2, Line(), fallback_token=1)
    states = np.zeros((64, 1))
    traj = [states]
    for _ in range(20):
        tokens, info = dec.decode(torch.randn(64, 4) * 3, states, rng.random(64))
        states = Line().predict_all(states)[np.arange(64), tokens.numpy()]
        traj.append(states)
    assert LE2.satisfied(np.stack(traj, axis=1)).all()


def test_filter_replaces_unsafe_token_by_fallback_and_rejection_resamples():
    z = torch.tensor([[0.0, 0.0, 0.0, 10.0]])
    at_edge = np.array([[1.0]])
    filt = FilterDecoder(None, LE2, Line(), fallback_token=1)
    assert int(filt.decode(z, at_edge, [0.5])[0][0]) == 1
    rej = RejectionDecoder(None, LE2, Line(), max_tries=3, fallback_token=1)
    tok, info = rej.decode(z, at_edge, np.array([[0.9999, 0.0, 0.5]]))
    assert int(tok[0]) == 0 and not info["filtered"][0]


def test_start_state_violating_spec_raises():
    with pytest.raises(InfeasibleSpecError, match="start state"):
        SafeDecoder(None, LE2, Line()).decode(torch.zeros(1, 4), np.array([[3.0]]))


def test_dynamics_shape_mismatch_with_logits_is_rejected():
    with pytest.raises(ValueError, match="predict_all returned shape"):
        SafeDecoder(None, LE2, Line()).decode(torch.zeros(1, 3), np.array([[0.0]]))


def test_decoder_rejects_time_bound_beyond_horizon():
    with pytest.raises(ValueError, match="horizon"):
        SafeDecoder(None, Always(LE2.children[0], 0, 500), Line(), horizon=100)


def test_step_calls_the_wrapped_policy():
    dec = SafeDecoder(lambda ctx: ctx, LE2, Line(), greedy=True)
    tok, info = dec.step(torch.tensor([[0.0, 0.0, 0.0, 9.0]]), np.array([[1.0]]))
    assert int(tok[0]) in (0, 1, 2) and info["masked"].tolist() == [[False, False, False, True]]


def test_logits_processor_constrains_huggingface_generate():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=4, n_positions=16, n_embd=16, n_layer=1, n_head=2,
                                     bos_token_id=1, eos_token_id=None, pad_token_id=1)
    model = transformers.GPT2LMHeadModel(config).eval()

    def position(ids):  # state = running sum of the moves encoded by the tokens after the prompt
        moves = Line.steps[ids[:, 1:].numpy()]
        hist = np.concatenate([np.zeros((ids.shape[0], 1)), np.cumsum(moves, axis=1)], axis=1)
        return hist[..., None]

    proc = SafeDecLogitsProcessor(LE2, Line(), position, fallback_token=1)
    out = model.generate(torch.ones(8, 1, dtype=torch.long), do_sample=True, max_new_tokens=10,
                         logits_processor=transformers.LogitsProcessorList([proc]))
    assert LE2.satisfied(position(out)).all()


def test_logits_processor_rejects_unknown_options():
    with pytest.raises(TypeError, match="unexpected keyword"):
        SafeDecLogitsProcessor(LE2, Line(), lambda ids: ids, temperature=2.0)


def test_monitor_ignores_eventualities_with_warning_in_decoder():
    spec = And(LE2, Eventually(Predicate("far", lambda x: x[..., 0] - 5.0)))
    with pytest.warns(UserWarning, match="G-fragment"):
        SafeDecoder(None, spec, Line()).decode(torch.zeros(1, 4), np.array([[0.0]]))


def test_bounded_rcd_bonus_shifts_safe_tokens_equally_and_by_at_most_alpha():
    """r_clip = 0 (the E1 default): +α on every safe token, α·exp(β·r) < α on unsafe ones."""
    logits = torch.tensor([[0.5, -1.0, 2.0, 0.0]])
    rob = np.array([[0.3, 2.0, -0.1, -1.0]])
    new, _ = constrain_logits(logits, rob, mode="rcd", alpha=5.0, beta=12.0, r_clip=0.0)
    shift = (new - logits)[0].numpy()
    np.testing.assert_allclose(shift[:2], [5.0, 5.0])                       # safe ranking unchanged
    np.testing.assert_allclose(shift[2:], 5.0 * np.exp(12.0 * np.array([-0.1, -1.0])))
    assert shift.max() <= 5.0 and shift.min() > 0


def test_paired_log_pi_at_intervention_steps_matches_direct_computation():
    """A decoder shadowed by itself pairs to 0 at its own intervention steps; a shadow never acts."""
    from icml26.safedec.rollout import episodes_for, rollout, uniforms_for

    torch.manual_seed(0)
    policy = NavTransformer().eval()
    episodes, uniforms = episodes_for(3, 4), uniforms_for(3, 4)
    same = rollout(policy, episodes, "avoid", "hcd", uniforms=uniforms, shadow="hcd")
    assert np.array_equal(same["paired_n"], same["interventions"]) and same["interventions"].sum() > 0
    np.testing.assert_array_equal(same["paired_diff"], 0.0)
    hcd = rollout(policy, episodes, "avoid", "hcd", uniforms=uniforms, shadow="filter")
    assert np.array_equal(hcd["tokens"], same["tokens"])                    # the shadow never acts
    assert hcd["paired_n"].sum() >= hcd["interventions"].sum()


def test_dev_split_is_disjoint_from_test_and_names_bad_split():
    from icml26.safedec.rollout import episodes_for, uniforms_for

    test, dev = episodes_for(0, 3), episodes_for(0, 3, split="dev")
    assert all(not np.array_equal(a.walls, b.walls) for a, b in zip(test, dev))
    assert not np.allclose(uniforms_for(0, 3), uniforms_for(0, 3, split="dev"))
    with pytest.raises(ValueError, match="split"):
        episodes_for(0, 3, split="train")


def test_rcd_bonus_option_is_validated():
    from icml26.safedec.experiment import MainConfig, _rcd_grid

    assert _rcd_grid(MainConfig(rcd_bonus="spec")) == [dict(alpha=5.0, beta=2.0, r_clip=1.0),
                                                       dict(alpha=10.0, beta=2.0, r_clip=1.0)]
    assert len(_rcd_grid(MainConfig())) == 6 and {g["r_clip"] for g in _rcd_grid(MainConfig())} == {0.0}
    with pytest.raises(ValueError, match="rcd_bonus"):
        _rcd_grid(MainConfig(rcd_bonus="huge"))
