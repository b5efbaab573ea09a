"""ILR loss: closed form, gradient identities, macro weights, edge cases and bad input."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26.inverse_reweight import InverseReweightLoss, inverse_weights, per_class_mean, prior_weights


def _batch(seed=0, n_classes=6, batch=64, absent=(4,), dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    allowed = torch.tensor([c for c in range(n_classes) if c not in absent])
    targets = allowed[torch.randint(len(allowed), (batch,), generator=gen)]
    logits = torch.randn(batch, n_classes, generator=gen, dtype=dtype) * 2
    return logits, targets


def test_inverse_weights_satisfy_stationarity_condition():
    gen = torch.Generator().manual_seed(1)
    losses = torch.rand(7, generator=gen, dtype=torch.float64) * 3 + 0.1
    present = torch.tensor([True, True, False, True, True, True, False])
    prior = torch.rand(7, generator=gen, dtype=torch.float64) + 0.5
    alpha = 0.7
    w = inverse_weights(losses, present, alpha=alpha, prior=prior, eps=0.0)
    target = losses[present].mean()
    gradient = 2 * losses * (w * losses - target) + 2 * alpha * (w - prior)
    assert torch.allclose(gradient[present], torch.zeros(5, dtype=torch.float64), atol=1e-12)
    assert torch.equal(w[~present], prior[~present])


def test_inverse_weights_minimise_the_objective():
    losses = torch.tensor([0.5, 1.0, 2.5], dtype=torch.float64)
    present = torch.ones(3, dtype=torch.bool)
    prior = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    w = inverse_weights(losses, present, alpha=0.3, prior=prior, eps=0.0)

    def objective(v):
        return ((v * losses - losses.mean()) ** 2).sum() + 0.3 * ((v - prior) ** 2).sum()

    for delta in (1e-3, -1e-3):
        for c in range(3):
            moved = w.clone()
            moved[c] += delta
            assert objective(moved) > objective(w)


def test_alpha_zero_equalises_weighted_class_losses():
    logits, targets = _batch()
    loss_fn = InverseReweightLoss(np.arange(1, 7))
    ce = F.cross_entropy(logits, targets, reduction="none")
    l, present = per_class_mean(ce, targets, 6)
    w = loss_fn.class_weights(l, present)
    assert torch.allclose((w * l)[present], l[present].mean().expand(int(present.sum())), atol=1e-6)


def test_official_gradient_equals_scaled_macro_average_gradient():
    logits, targets = _batch(seed=3)
    loss_fn = InverseReweightLoss(np.arange(1, 7), max_weight=1e9)
    loss_fn.batch_presence.copy_(torch.tensor([3.0, 9.0, 1.0, 4.0, 0.0, 7.0]))
    loss_fn.update_macro_weights()
    z = logits.clone().requires_grad_(True)
    (grad_ilr,) = torch.autograd.grad(loss_fn(z, targets), z)
    ce = F.cross_entropy(z, targets, reduction="none")
    l, present = per_class_mean(ce, targets, 6)
    (grad_macro,) = torch.autograd.grad(l[present].mean(), z)
    s_b = loss_fn.macro_weights[targets].to(torch.float64).mean()
    assert torch.allclose(grad_ilr, s_b * grad_macro, atol=1e-9)


def test_detached_weights_give_a_different_gradient():
    logits, targets = _batch(seed=4)
    z = logits.clone().requires_grad_(True)
    official = torch.autograd.grad(InverseReweightLoss(np.ones(6))(z, targets), z)[0]
    detached = torch.autograd.grad(InverseReweightLoss(np.ones(6), detach_weights=True)(z, targets), z)[0]
    cos = F.cosine_similarity(official.flatten(), detached.flatten(), dim=0)
    assert cos < 0.999


def test_detached_gradient_is_sample_weighted_ce_gradient():
    logits, targets = _batch(seed=5)
    loss_fn = InverseReweightLoss(np.ones(6), detach_weights=True)
    z = logits.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss_fn(z, targets), z)
    w = loss_fn.last_weights
    z2 = logits.clone().requires_grad_(True)
    expected = (w[targets] * F.cross_entropy(z2, targets, reduction="none")).mean()
    (grad_expected,) = torch.autograd.grad(expected, z2)
    assert torch.allclose(grad, grad_expected, atol=1e-6)


def test_gradcheck_of_official_loss():
    logits, targets = _batch(seed=6, batch=12)
    loss_fn = InverseReweightLoss(np.arange(1, 7), alpha=0.5, prior="inv_sqrt_freq", max_weight=1e9)
    z = logits.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: loss_fn(x, targets), (z,), fast_mode=True)


def test_absent_classes_keep_prior_and_get_no_gradient():
    logits, targets = _batch(seed=7, absent=(1, 4))
    loss_fn = InverseReweightLoss([50, 40, 30, 20, 10, 5], alpha=0.2, prior="inv_freq")
    z = logits.clone().requires_grad_(True)
    loss_fn(z, targets).backward()
    assert torch.allclose(loss_fn.last_weights[[1, 4]], loss_fn.prior_weights[[1, 4]])
    ce = F.cross_entropy(z, targets, reduction="none")
    l, present = per_class_mean(ce, targets, 6)
    w = loss_fn.class_weights(l, present)
    grad = torch.autograd.grad(w[[1, 4]].sum(), z, allow_unused=True, materialize_grads=True)[0]
    assert grad.abs().max() == 0


def test_large_alpha_returns_prior():
    l = torch.tensor([0.1, 1.0, 5.0])
    prior = prior_weights([10, 5, 1], "inv_freq")
    w = inverse_weights(l, torch.ones(3, dtype=torch.bool), alpha=1e9, prior=prior)
    assert torch.allclose(w, prior, atol=1e-6)


def test_clamp_caps_weight_of_perfectly_fitted_class_without_gradient():
    loss_fn = InverseReweightLoss([10, 10, 10], max_weight=3.0)
    l = torch.tensor([1e-6, 1.0, 2.0], requires_grad=True)
    w = loss_fn.class_weights(l, torch.ones(3, dtype=torch.bool))
    assert float(w.max().detach()) == pytest.approx(3.0)
    (grad,) = torch.autograd.grad(w[0], l)
    assert grad.abs().max() == 0


def test_single_present_class_gets_weight_one():
    loss_fn = InverseReweightLoss([5, 5, 5])
    logits = torch.randn(4, 3)
    loss = loss_fn(logits, torch.tensor([2, 2, 2, 2]))
    assert loss_fn.last_weights[2] == pytest.approx(1.0)
    assert loss.item() == pytest.approx(F.cross_entropy(logits, torch.tensor([2] * 4)).item(), rel=1e-6)


def test_macro_weights_follow_presence_counts():
    loss_fn = InverseReweightLoss([5, 5, 5], macro_gamma=1.0)
    loss_fn.update_macro_weights()
    assert torch.allclose(loss_fn.macro_weights, torch.ones(3))  # counts 0 -> m = 1
    for targets in ([0, 1], [0, 1], [0, 2], [0, 0]):
        loss_fn(torch.randn(2, 3), torch.tensor(targets))
    assert loss_fn.batch_presence.tolist() == [4.0, 2.0, 1.0]
    loss_fn.update_macro_weights()
    raw = torch.tensor([1 / 4, 1 / 2, 1.0])
    assert torch.allclose(loss_fn.macro_weights, raw / raw.mean())


def test_presence_counts_frozen_in_eval_mode():
    loss_fn = InverseReweightLoss([5, 5]).eval()
    loss_fn(torch.randn(3, 2), torch.tensor([0, 1, 1]))
    assert loss_fn.batch_presence.sum() == 0


def test_empty_batch_returns_zero_with_graph():
    z = torch.zeros(0, 3, requires_grad=True)
    loss = InverseReweightLoss([1, 2, 3])(z, torch.zeros(0, dtype=torch.long))
    loss.backward()
    assert loss.item() == 0.0


def test_half_precision_logits_are_computed_in_float32():
    logits = torch.randn(8, 3).half()
    loss = InverseReweightLoss([1, 2, 3])(logits, torch.tensor([0, 1, 2, 0, 1, 2, 0, 1]))
    assert loss.dtype == torch.float32 and torch.isfinite(loss)


def test_prior_types_are_mean_normalised():
    counts = [80, 15, 5]
    freq = np.array(counts) / 100
    for name, raw in [("uniform", np.ones(3)), ("inv_freq", 1 / freq), ("inv_sqrt_freq", 1 / np.sqrt(freq))]:
        assert np.allclose(prior_weights(counts, name).numpy(), raw / raw.mean(), atol=1e-6)


# -- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize("counts", [[5, 0, 3], [5, -1, 3]])
def test_class_counts_zero_or_negative_rejected(counts):
    with pytest.raises(ValueError, match="class_counts"):
        InverseReweightLoss(counts)


def test_targets_out_of_range_rejected():
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 3\)"):
        InverseReweightLoss([1, 2, 3])(torch.randn(2, 3), torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="targets"):
        InverseReweightLoss([1, 2, 3])(torch.randn(2, 3), torch.tensor([-1, 0]))


def test_float_targets_rejected():
    with pytest.raises(TypeError, match="targets must be an integer tensor"):
        InverseReweightLoss([1, 2])(torch.randn(2, 2), torch.tensor([0.0, 1.0]))


def test_shape_mismatch_rejected():
    loss_fn = InverseReweightLoss([1, 2, 3])
    with pytest.raises(ValueError, match="batch size"):
        loss_fn(torch.randn(3, 3), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="class_counts gives 3 classes"):
        loss_fn(torch.randn(2, 4), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="logits must have ndim"):
        loss_fn(torch.randn(6), torch.tensor([0, 1]))


def test_nan_logits_rejected():
    logits = torch.randn(2, 3)
    logits[0, 1] = float("nan")
    with pytest.raises(ValueError, match="logits contains NaN"):
        InverseReweightLoss([1, 2, 3])(logits, torch.tensor([0, 1]))


@pytest.mark.parametrize("kwargs, name", [({"alpha": -1.0}, "alpha"), ({"max_weight": 0.0}, "max_weight"),
                                          ({"macro_gamma": -0.5}, "macro_gamma"),
                                          ({"prior": "inverse"}, "prior")])
def test_bad_hyper_parameters_rejected(kwargs, name):
    with pytest.raises(ValueError, match=name):
        InverseReweightLoss([1, 2, 3], **kwargs)


def test_delayed_start_uses_plain_ce_then_reweights():
    loss_fn = InverseReweightLoss([9, 3, 1], switch_epoch=2, macro_switch_epoch=3)
    logits, targets = torch.randn(6, 3), torch.tensor([0, 0, 0, 0, 1, 2])
    loss_fn.set_epoch(1)
    assert not loss_fn.reweighting
    assert torch.isclose(loss_fn(logits, targets), F.cross_entropy(logits, targets))
    assert loss_fn.batch_presence.sum() == 0
    loss_fn.set_epoch(2)
    loss_fn(logits, targets)
    assert loss_fn.batch_presence.tolist() == [1.0, 1.0, 1.0]
    assert torch.equal(loss_fn.macro_weights, torch.ones(3))  # macro switch not reached
    loss_fn(logits, torch.tensor([0, 0, 0, 0, 0, 1]))
    loss_fn.set_epoch(3)
    raw = torch.tensor([1 / 2, 1 / 2, 1.0])
    assert torch.allclose(loss_fn.macro_weights, raw / raw.mean())


def test_macro_switch_before_switch_rejected():
    with pytest.raises(ValueError, match="macro_switch_epoch must be >= switch_epoch"):
        InverseReweightLoss([1, 2], switch_epoch=5, macro_switch_epoch=4)
