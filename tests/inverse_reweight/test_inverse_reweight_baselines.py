"""Baselines: each loss against its direct formula, DRW switching, bad input."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26.inverse_reweight import (BalancedSoftmaxLoss, ClassBalancedLoss, DRWSchedule, FocalLoss,
                                     LDAMLoss, class_balanced_weights)

GEN = torch.Generator().manual_seed(0)
LOGITS = torch.randn(16, 4, generator=GEN, dtype=torch.float64)
TARGETS = torch.randint(4, (16,), generator=GEN)
COUNTS = [400, 100, 20, 5]


def test_class_balanced_weights_match_effective_number_formula():
    beta = 0.999
    raw = np.array([(1 - beta) / (1 - beta ** n) for n in COUNTS])
    expected = raw / raw.sum() * 4
    assert np.allclose(class_balanced_weights(COUNTS, beta).numpy(), expected, atol=1e-6)


def test_class_balanced_loss_is_weighted_mean_ce():
    w = class_balanced_weights(COUNTS, 0.9999).double()
    expected = (w[TARGETS] * F.cross_entropy(LOGITS, TARGETS, reduction="none")).mean()
    assert torch.isclose(ClassBalancedLoss(COUNTS)(LOGITS, TARGETS), expected)


def test_focal_gamma_zero_is_cross_entropy_and_gamma_down_weights_easy_samples():
    assert torch.isclose(FocalLoss(0.0)(LOGITS, TARGETS), F.cross_entropy(LOGITS, TARGETS))
    p = F.softmax(LOGITS, 1).gather(1, TARGETS[:, None]).squeeze(1)
    expected = ((1 - p) ** 2 * -torch.log(p)).mean()
    assert torch.isclose(FocalLoss(2.0)(LOGITS, TARGETS), expected)


def test_ldam_matches_official_formula_on_cosine_logits():
    scale = 30.0
    cos = torch.tanh(LOGITS)  # cosines in (-1, 1)
    margins = np.array(COUNTS, float) ** -0.25
    margins = torch.tensor(margins * 0.5 / margins.max())
    shifted = cos - F.one_hot(TARGETS, 4) * margins[TARGETS, None]
    expected = F.cross_entropy(scale * shifted, TARGETS)
    assert torch.isclose(LDAMLoss(COUNTS, scale=scale)(scale * cos, TARGETS), expected.to(torch.float64))


def test_ldam_with_drw_weight_is_weight_normalised():
    w = class_balanced_weights(COUNTS)
    loss_fn = LDAMLoss(COUNTS, scale=1.0, max_margin=0.0, weight=w)
    expected = F.cross_entropy(LOGITS.float(), TARGETS, weight=w)
    assert torch.isclose(loss_fn(LOGITS.float(), TARGETS), expected)


def test_balanced_softmax_adds_log_prior():
    prior = torch.tensor(COUNTS, dtype=torch.float64) / sum(COUNTS)
    expected = F.cross_entropy(LOGITS + torch.log(prior), TARGETS)
    assert torch.isclose(BalancedSoftmaxLoss(COUNTS)(LOGITS, TARGETS), expected.float().double(), atol=1e-6)


def test_balanced_softmax_equals_official_arb_form():
    counts = torch.tensor(COUNTS, dtype=torch.float64)
    coeff = counts[None, :] / counts[TARGETS][:, None]
    arb = (-LOGITS.gather(1, TARGETS[:, None]).squeeze(1) + torch.log((coeff * LOGITS.exp()).sum(1))).mean()
    assert torch.isclose(BalancedSoftmaxLoss(COUNTS)(LOGITS, TARGETS), arb, atol=1e-6)


def test_drw_schedule_switches_to_class_balanced_weights():
    drw = DRWSchedule(COUNTS, switch_epoch=3, beta=0.999)
    assert drw.weights(2) is None
    assert torch.allclose(drw.weights(3), class_balanced_weights(COUNTS, 0.999))


@pytest.mark.parametrize("make", [lambda c: ClassBalancedLoss(c), lambda c: LDAMLoss(c),
                                  lambda c: BalancedSoftmaxLoss(c), lambda c: DRWSchedule(c, 1)])
def test_baselines_reject_zero_counts(make):
    with pytest.raises(ValueError, match="class_counts"):
        make([10, 0, 3])


@pytest.mark.parametrize("loss_fn", [FocalLoss(), ClassBalancedLoss([3, 2, 1]), LDAMLoss([3, 2, 1]),
                                     BalancedSoftmaxLoss([3, 2, 1])])
def test_baselines_reject_out_of_range_targets_and_nan(loss_fn):
    with pytest.raises(ValueError, match="targets"):
        loss_fn(torch.randn(2, 3), torch.tensor([0, 5]))
    bad = torch.randn(2, 3)
    bad[1, 1] = float("inf")
    with pytest.raises(ValueError, match="logits"):
        loss_fn(bad, torch.tensor([0, 1]))


def test_bad_baseline_parameters_rejected():
    with pytest.raises(ValueError, match="beta"):
        class_balanced_weights(COUNTS, beta=1.0)
    with pytest.raises(ValueError, match="gamma"):
        FocalLoss(gamma=-1)
    with pytest.raises(ValueError, match="loss_type"):
        ClassBalancedLoss(COUNTS, loss_type="hinge")
    with pytest.raises(ValueError, match="weight must have shape"):
        LDAMLoss(COUNTS, weight=[1.0, 2.0])
