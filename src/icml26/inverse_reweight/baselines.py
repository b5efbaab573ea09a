"""Long-tailed baselines with the ILR call signature ``loss(logits, targets) -> scalar``.

Written here because no maintained library provides them as torch modules (the PyPI
``balanced-loss``/``cbloss`` packages are small and unmaintained; torchvision's focal loss
is sigmoid-only). Each follows the reference implementation named in its docstring.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml26.core.validation import check_int, check_scalar_in

from .reweighting import check_class_counts, check_logits_targets, upcast

__all__ = [
    "class_balanced_weights",
    "ClassBalancedLoss",
    "FocalLoss",
    "LDAMLoss",
    "BalancedSoftmaxLoss",
    "DRWSchedule",
]


def class_balanced_weights(class_counts, beta: float = 0.9999) -> torch.Tensor:
    """Effective-number weights ``(1-beta)/(1-beta^n_c)``, scaled to sum to ``C``.

    References
    ----------
    Cui, Jia, Lin, Song, Belongie. Class-Balanced Loss Based on Effective Number of
    Samples. CVPR 2019.

    Examples
    --------
    >>> class_balanced_weights([100, 1], beta=0.9)
    tensor([0.1818, 1.8182])
    """
    counts = check_class_counts(class_counts)
    beta = check_scalar_in(beta, "beta", low=0.0, high=1.0, high_inclusive=False)
    raw = (1.0 - beta) / (1.0 - np.power(beta, counts))
    return torch.as_tensor(raw / raw.sum() * len(counts), dtype=torch.float32)


def _focal_term(ce: torch.Tensor, gamma: float) -> torch.Tensor:
    # (1 - p_t)^gamma with p_t = exp(-ce); gamma = 0 gives ones.
    return (1.0 - torch.exp(-ce)).clamp_min(0.0) ** gamma if gamma > 0 else torch.ones_like(ce)


class FocalLoss(nn.Module):
    """Softmax focal loss ``mean_i (1 - p_{y_i})^gamma * ce_i``.

    Parameters
    ----------
    gamma : float, default 1.0
        Focusing exponent (0 gives cross-entropy).
    check_finite : bool, default True
        Raise on NaN/inf logits.

    References
    ----------
    Lin, Goyal, Girshick, He, Dollár. Focal Loss for Dense Object Detection. ICCV 2017
    (softmax form as in kaidic/LDAM-DRW).

    Examples
    --------
    >>> FocalLoss(gamma=0.0)(torch.zeros(2, 3), torch.tensor([0, 1])).item()  # = log 3
    1.0986...
    """

    def __init__(self, gamma: float = 1.0, check_finite: bool = True):
        super().__init__()
        self.gamma = check_scalar_in(gamma, "gamma", low=0.0)
        self.check_finite = bool(check_finite)

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        check_logits_targets(logits, targets, None, self.check_finite)
        ce = F.cross_entropy(upcast(logits), targets, reduction="none")
        return (_focal_term(ce, self.gamma) * ce).mean()


class ClassBalancedLoss(nn.Module):
    """Class-balanced (effective-number) loss: ``mean_i w_{y_i} * loss_i``.

    Parameters
    ----------
    class_counts : array-like of shape (C,)
        Training counts (all > 0).
    beta : float, default 0.9999
        Effective-number hyper-parameter.
    loss_type : {"ce", "focal"}, default "ce"
        Base loss.
    gamma : float, default 1.0
        Focal exponent when ``loss_type="focal"``.

    References
    ----------
    Cui et al. Class-Balanced Loss Based on Effective Number of Samples. CVPR 2019.

    Examples
    --------
    >>> loss = ClassBalancedLoss([100, 1])(torch.zeros(2, 2), torch.tensor([0, 1]))
    >>> round(loss.item(), 4)  # mean of the two weights (sum 2) times log 2
    0.6931
    """

    def __init__(self, class_counts, beta: float = 0.9999, loss_type: str = "ce",
                 gamma: float = 1.0, check_finite: bool = True):
        super().__init__()
        if loss_type not in ("ce", "focal"):
            raise ValueError(f"loss_type must be 'ce' or 'focal', got {loss_type!r}")
        self.beta, self.loss_type = beta, loss_type
        self.gamma = check_scalar_in(gamma, "gamma", low=0.0)
        self.check_finite = bool(check_finite)
        self.register_buffer("weight", class_balanced_weights(class_counts, beta))

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        check_logits_targets(logits, targets, self.weight.numel(), self.check_finite)
        ce = F.cross_entropy(upcast(logits), targets, reduction="none")
        if self.loss_type == "focal":
            ce = _focal_term(ce, self.gamma) * ce
        return (self.weight[targets] * ce).mean()


class LDAMLoss(nn.Module):
    """Label-distribution-aware margin loss (optionally with DRW class weights).

    ``loss = CE(z - scale * Delta_y * onehot(y), y; weight)`` with
    ``Delta_c ∝ n_c^(-1/4)``, rescaled so ``max_c Delta_c = max_margin``.

    Parameters
    ----------
    class_counts : array-like of shape (C,)
        Training counts (all > 0).
    max_margin : float, default 0.5
        Largest margin, in cosine units.
    scale : float, default 30.0
        The logits are expected as ``scale * cos`` (the output of
        :class:`~icml26.inverse_reweight.CosineClassifier`), so the margin in logit units is
        ``scale * Delta``; this equals the official ``CE(s * (cos - Delta))``.
    weight : torch.Tensor of shape (C,), optional
        Per-class weights (set by :class:`DRWSchedule` after the switch epoch); the loss is
        then the weight-normalised mean, as ``torch.nn.CrossEntropyLoss(weight=...)``.

    References
    ----------
    Cao, Wei, Gaidon, Arechiga, Ma. Learning Imbalanced Datasets with
    Label-Distribution-Aware Margin Loss. NeurIPS 2019 (github.com/kaidic/LDAM-DRW).

    Examples
    --------
    >>> loss_fn = LDAMLoss([100, 1], max_margin=0.5, scale=1.0)
    >>> loss_fn.margins
    tensor([0.1581, 0.5000])
    """

    def __init__(self, class_counts, max_margin: float = 0.5, scale: float = 30.0,
                 weight=None, check_finite: bool = True):
        super().__init__()
        counts = check_class_counts(class_counts)
        self.max_margin = check_scalar_in(max_margin, "max_margin", low=0.0)
        self.scale = check_scalar_in(scale, "scale", low=0.0, low_inclusive=False)
        self.check_finite = bool(check_finite)
        raw = counts ** -0.25
        self.register_buffer("margins", torch.as_tensor(raw * (self.max_margin / raw.max()),
                                                        dtype=torch.float32))
        self.register_buffer("weight", None)      # a buffer: `.to(device)` moves it
        self.set_weight(weight)

    def set_weight(self, weight) -> None:
        """Set (or clear with ``None``) the per-class weights (kept on the loss's device)."""
        if weight is not None:
            weight = torch.as_tensor(weight, dtype=torch.float32, device=self.margins.device)
            if weight.shape != self.margins.shape:
                raise ValueError(f"weight must have shape {tuple(self.margins.shape)}, "
                                 f"got {tuple(weight.shape)}")
        self.weight = weight

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        check_logits_targets(logits, targets, self.margins.numel(), self.check_finite)
        margin = F.one_hot(targets, self.margins.numel()).float() * self.margins[targets, None]
        return F.cross_entropy(upcast(logits) - self.scale * margin, targets, weight=self.weight)


class BalancedSoftmaxLoss(nn.Module):
    """Balanced Softmax / logit-adjusted loss ``CE(z + tau * log pi, y)``.

    Predict with the raw logits (no adjustment at test time).

    Parameters
    ----------
    class_counts : array-like of shape (C,)
        Training counts (all > 0); ``pi = n / sum(n)``.
    tau : float, default 1.0
        Adjustment strength (1 = Balanced Softmax).

    References
    ----------
    Ren et al. Balanced Meta-Softmax for Long-Tailed Visual Recognition. NeurIPS 2020;
    Menon et al. Long-tail learning via logit adjustment. ICLR 2021.

    Examples
    --------
    >>> round(BalancedSoftmaxLoss([1, 1])(torch.zeros(1, 2), torch.tensor([0])).item(), 4)
    0.6931
    """

    def __init__(self, class_counts, tau: float = 1.0, check_finite: bool = True):
        super().__init__()
        counts = check_class_counts(class_counts)
        self.tau = check_scalar_in(tau, "tau", low=0.0)
        self.check_finite = bool(check_finite)
        self.register_buffer("log_prior", torch.as_tensor(np.log(counts / counts.sum()),
                                                          dtype=torch.float32))

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        check_logits_targets(logits, targets, self.log_prior.numel(), self.check_finite)
        return F.cross_entropy(upcast(logits) + self.tau * self.log_prior, targets)


class DRWSchedule:
    """Deferred re-weighting: no weights before ``switch_epoch``, class-balanced after.

    Parameters
    ----------
    class_counts : array-like of shape (C,)
        Training counts (all > 0).
    switch_epoch : int
        First epoch (0-based) that uses the class-balanced weights.
    beta : float, default 0.9999
        Effective-number hyper-parameter of the weights.

    References
    ----------
    Cao et al. NeurIPS 2019 (LDAM-DRW).

    Examples
    --------
    >>> drw = DRWSchedule([100, 1], switch_epoch=2)
    >>> drw.weights(1) is None, drw.weights(2).shape
    (True, torch.Size([2]))
    """

    def __init__(self, class_counts, switch_epoch: int, beta: float = 0.9999):
        self.switch_epoch = check_int(switch_epoch, "switch_epoch", min_value=0)
        self.beta = beta
        self.class_weights = class_balanced_weights(class_counts, beta)

    def weights(self, epoch: int) -> torch.Tensor | None:
        """The class weights for ``epoch`` (``None`` means unweighted)."""
        check_int(epoch, "epoch", min_value=0)
        return None if epoch < self.switch_epoch else self.class_weights.clone()

    def __repr__(self) -> str:
        return f"DRWSchedule(switch_epoch={self.switch_epoch}, beta={self.beta})"

