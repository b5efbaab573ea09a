"""Inverse loss reweighting (ILR): class weights inferred so every class has the same loss.

Reference
---------
Jinping Wang, Zixin Tong, Zhiwu Xie, Zhiqiang Gao. *Rethinking Loss Reweighting for
Imbalance Learning as an Inverse Problem: A Neural Collapse Point of View.* ICML 2026,
arXiv:2605.10047. Official code: github.com/tongzixin716716/Inverse-Loss-Reweighting.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml26.core.validation import check_choice, check_int, check_scalar_in, check_tensor, check_vector

__all__ = [
    "InverseReweightLoss",
    "inverse_weights",
    "prior_weights",
    "per_class_mean",
    "check_class_counts",
    "check_logits_targets",
    "upcast",
]

PRIORS = ("uniform", "inv_freq", "inv_sqrt_freq")


# -- validation shared by every loss of this package -----------------------------------

def check_class_counts(class_counts, name: str = "class_counts") -> np.ndarray:
    """Per-class training counts as a float array; every count must be > 0.

    Raises
    ------
    ValueError
        If a count is zero, negative or not finite, or fewer than two classes are given.
    """
    if isinstance(class_counts, torch.Tensor):
        class_counts = class_counts.detach().cpu().numpy()
    counts = check_vector(class_counts, name)
    if counts.shape[0] < 2:
        raise ValueError(f"{name} must give at least 2 classes, got {counts.shape[0]}")
    bad = np.flatnonzero(counts <= 0)
    if bad.size:
        raise ValueError(f"{name} must be > 0 for every class; class {int(bad[0])} has "
                         f"{counts[bad[0]]:g}")
    return counts


def check_logits_targets(logits, targets, n_classes: int | None = None,
                         check_finite: bool = True) -> None:
    """Check ``logits`` (batch, C) and integer ``targets`` (batch,) in ``[0, C)``.

    Raises
    ------
    TypeError
        If either is not a tensor, or ``targets`` is not an integer tensor.
    ValueError
        If shapes disagree, a target is out of range, ``C != n_classes``, or (with
        ``check_finite``) ``logits`` holds NaN or infinity.
    """
    check_tensor(logits, "logits", ndim=2, finite=check_finite, floating=True)
    check_tensor(targets, "targets", ndim=1, finite=False)
    if targets.is_floating_point() or targets.is_complex() or targets.dtype == torch.bool:
        raise TypeError(f"targets must be an integer tensor of class indices, got dtype {targets.dtype}")
    if logits.shape[0] != targets.shape[0]:
        raise ValueError(f"logits and targets disagree on the batch size: logits has shape "
                         f"{tuple(logits.shape)}, targets has shape {tuple(targets.shape)}")
    n_out = logits.shape[1]
    if n_classes is not None and n_out != n_classes:
        raise ValueError(f"logits has {n_out} columns but class_counts gives {n_classes} classes")
    if targets.numel() and (int(targets.min()) < 0 or int(targets.max()) >= n_out):
        raise ValueError(f"targets must lie in [0, {n_out}), got values in "
                         f"[{int(targets.min())}, {int(targets.max())}]")


def upcast(logits: torch.Tensor) -> torch.Tensor:
    """Half/bfloat16 logits to float32 (loss statistics are never computed in half)."""
    return logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits


def prior_weights(class_counts, prior="uniform") -> torch.Tensor:
    """The prior weight vector ``w0`` of ILR, divided by its mean.

    Parameters
    ----------
    class_counts : array-like of shape (C,)
        Training counts ``n_c`` (all > 0).
    prior : {"uniform", "inv_freq", "inv_sqrt_freq"} or array-like of shape (C,)
        ``uniform``: all ones; ``inv_freq``: ``1/pi_c``; ``inv_sqrt_freq``: ``1/sqrt(pi_c)``
        with ``pi_c = n_c / sum(n)``; an array: positive weights used as given.

    Returns
    -------
    torch.Tensor of shape (C,), float32, mean 1.

    Examples
    --------
    >>> prior_weights([90, 10], "inv_freq")
    tensor([0.2000, 1.8000])
    """
    counts = check_class_counts(class_counts)
    if isinstance(prior, str):
        check_choice(prior, "prior", PRIORS)
        freq = counts / counts.sum()
        raw = {"uniform": np.ones_like(freq), "inv_freq": 1.0 / freq,
               "inv_sqrt_freq": 1.0 / np.sqrt(freq)}[prior]
    else:
        raw = check_vector(prior, "prior")
        if raw.shape != counts.shape:
            raise ValueError(f"prior must have one weight per class ({counts.shape[0]}), "
                             f"got shape {raw.shape}")
        if np.any(raw <= 0):
            raise ValueError("prior weights must all be > 0")
    return torch.as_tensor(raw / raw.mean(), dtype=torch.float32)


def per_class_mean(values: torch.Tensor, targets: torch.Tensor, n_classes: int):
    """Mean of ``values`` per class (vectorised; no loop over classes).

    Returns
    -------
    means : torch.Tensor of shape (C,)
        Per-class means; 0 for classes absent from ``targets``.
    present : torch.Tensor of shape (C,), bool
        Which classes occur in ``targets``.
    """
    counts = torch.bincount(targets, minlength=n_classes)
    sums = values.new_zeros(n_classes).index_add(0, targets, values)
    present = counts > 0
    return sums / counts.clamp_min(1).to(values.dtype), present


def inverse_weights(class_losses: torch.Tensor, present: torch.Tensor, alpha: float = 0.0,
                    prior: torch.Tensor | None = None, eps: float = 1e-8) -> torch.Tensor:
    """Closed-form solution of the ILR inverse problem.

    Solves, for the classes present in the batch,

    ``w = argmin_w  sum_{c in P} (w_c l_c - l*)^2 + alpha * sum_{c in P} (w_c - w0_c)^2``

    with ``l* = mean_{c in P} l_c``: ``w_c = (l* l_c + alpha w0_c) / (l_c^2 + alpha + eps)``.
    Absent classes get ``w0_c``. Gradients flow through ``l_c`` and ``l*`` (as in the
    official code); detach the result to treat the weights as constants.

    Parameters
    ----------
    class_losses : torch.Tensor of shape (C,)
        Per-class mean losses ``l_c`` (values of absent classes are ignored).
    present : torch.Tensor of shape (C,), bool
        Classes present in the batch (``P``).
    alpha : float, default 0.0
        Tikhonov strength (>= 0). ``alpha = 0`` gives ``w_c = l*/l_c``.
    prior : torch.Tensor of shape (C,), optional
        Prior weights ``w0`` (default: all ones).
    eps : float, default 1e-8
        Denominator guard.

    Returns
    -------
    torch.Tensor of shape (C,)

    Notes
    -----
    The objective is separable in ``c``; setting its derivative
    ``2 l_c (w_c l_c - l*) + 2 alpha (w_c - w0_c)`` to zero gives the closed form
    (``eps`` aside). See Wang et al., ICML 2026, and the spec section 2.1.

    Examples
    --------
    >>> l = torch.tensor([1.0, 2.0, 4.0])
    >>> w = inverse_weights(l, torch.tensor([True, True, False]))
    >>> [round(float(v), 4) for v in w * l][:2]   # both present classes at l* = 1.5
    [1.5, 1.5]
    """
    check_tensor(class_losses, "class_losses", ndim=1)
    check_tensor(present, "present", ndim=1, finite=False)
    if present.dtype != torch.bool:
        raise TypeError(f"present must be a bool tensor, got dtype {present.dtype}")
    if present.shape != class_losses.shape:
        raise ValueError(f"present has shape {tuple(present.shape)} but class_losses has "
                         f"shape {tuple(class_losses.shape)}")
    alpha = check_scalar_in(alpha, "alpha", low=0.0)
    eps = check_scalar_in(eps, "eps", low=0.0)
    if prior is None:
        prior = torch.ones_like(class_losses)
    else:
        prior = torch.as_tensor(prior, dtype=class_losses.dtype, device=class_losses.device)
        if prior.shape != class_losses.shape:
            raise ValueError(f"prior has shape {tuple(prior.shape)} but class_losses has "
                             f"shape {tuple(class_losses.shape)}")
    n_present = present.sum()
    if int(n_present) == 0:
        return prior.clone()
    target = torch.where(present, class_losses, torch.zeros_like(class_losses)).sum() / n_present
    solved = (target * class_losses + alpha * prior) / (class_losses ** 2 + alpha + eps)
    return torch.where(present, solved, prior)


class InverseReweightLoss(nn.Module):
    """Inverse loss reweighting (ILR) toward equal per-class average loss.

    At every call, per-class mean cross-entropies ``l_c`` of the classes present in the
    batch are equalised by the closed-form weights of :func:`inverse_weights`,
    multiplied by the epoch-level *macro* (batch-presence) weights, clipped to
    ``[0, max_weight]``, and the loss is ``mean_i w_{y_i} ce_i``.

    Parameters
    ----------
    class_counts : array-like of shape (C,)
        Training counts per class (all > 0); used by the prior.
    alpha : float, default 0.0
        Tikhonov strength toward the prior (official default 0).
    prior : {"uniform", "inv_freq", "inv_sqrt_freq"} or array-like, default "uniform"
        Prior weights ``w0`` (mean-normalised).
    macro_gamma : float, default 1.0
        Exponent of the batch-presence macro weights ``m_c ∝ max(b_c, 1)^-gamma``.
    max_weight : float, default 10.0
        Upper clip of the weights.
    eps : float, default 1e-8
        Denominator guard of the closed form.
    detach_weights : bool, default False
        ``False`` (official code): gradients flow through the weights. With
        ``alpha = 0`` and no clipping the gradient then equals ``S_B`` times the gradient
        of the batch macro-average loss ``mean_{c in P} l_c`` (``S_B = mean_i m_{y_i}``).
        ``True``: weights are constants, so high-loss classes are *down*-weighted by
        ``l*/l_c``.
    check_finite : bool, default True
        Raise on NaN/inf logits instead of producing NaN weights.
    switch_epoch : int, default 0
        Delayed start (official ``ce_then_reweighting``): once :meth:`set_epoch` has been
        called, epochs before ``switch_epoch`` use plain mean cross-entropy. Until
        :meth:`set_epoch` is first called the loss always reweights.
    macro_switch_epoch : int, optional
        First epoch whose :meth:`set_epoch` refreshes the macro weights (default:
        ``switch_epoch``); must be >= ``switch_epoch`` (official assertion).

    Attributes
    ----------
    last_weights : torch.Tensor of shape (C,)
        Weights (after macro weights and clipping) used in the last call, detached.
    batch_presence : torch.Tensor of shape (C,)
        Cumulative number of training-mode calls in which each class was present (``b_c``).
    macro_weights : torch.Tensor of shape (C,)
        Current macro weights ``m_c`` (ones until :meth:`update_macro_weights`).
    epoch : int or None
        The epoch given to the last :meth:`set_epoch` call.

    Notes
    -----
    Paper notation → code: ``l_c`` → per-class mean CE, ``l*`` → their mean over present
    classes, ``w⁰`` → ``prior_weights``, ``α`` → ``alpha``. The presence counts are only
    incremented in training mode (``module.train()``), so evaluating the loss in eval mode
    does not change them. An empty batch returns ``logits.sum() * 0`` (keeps the graph).
    Half-precision logits are upcast to float32 before computing losses and weights.

    References
    ----------
    Wang, Tong, Xie, Gao. Rethinking Loss Reweighting for Imbalance Learning as an
    Inverse Problem: A Neural Collapse Point of View. ICML 2026 (arXiv:2605.10047).

    Examples
    --------
    >>> loss_fn = InverseReweightLoss([100, 10, 1])
    >>> logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.5]],
    ...                       requires_grad=True)
    >>> loss = loss_fn(logits, torch.tensor([0, 1, 2]))
    >>> loss.backward()
    >>> loss_fn.last_weights.shape
    torch.Size([3])
    """

    def __init__(self, class_counts, alpha: float = 0.0, prior="uniform", macro_gamma: float = 1.0,
                 max_weight: float = 10.0, eps: float = 1e-8, detach_weights: bool = False,
                 check_finite: bool = True, switch_epoch: int = 0,
                 macro_switch_epoch: int | None = None):
        super().__init__()
        self.switch_epoch = check_int(switch_epoch, "switch_epoch", min_value=0)
        self.macro_switch_epoch = self.switch_epoch if macro_switch_epoch is None else check_int(
            macro_switch_epoch, "macro_switch_epoch", min_value=0)
        if self.macro_switch_epoch < self.switch_epoch:
            raise ValueError(f"macro_switch_epoch must be >= switch_epoch ({self.switch_epoch}), "
                             f"got {self.macro_switch_epoch}")
        self.epoch = None
        counts = check_class_counts(class_counts)
        self.alpha = check_scalar_in(alpha, "alpha", low=0.0)
        self.macro_gamma = check_scalar_in(macro_gamma, "macro_gamma", low=0.0)
        self.max_weight = check_scalar_in(max_weight, "max_weight", low=0.0, low_inclusive=False)
        self.eps = check_scalar_in(eps, "eps", low=0.0)
        if not isinstance(detach_weights, (bool, np.bool_)):
            raise TypeError(f"detach_weights must be a bool, got {detach_weights!r}")
        self.detach_weights = bool(detach_weights)
        self.check_finite = bool(check_finite)
        self.prior = prior
        self.n_classes = int(counts.shape[0])
        self.register_buffer("class_counts", torch.as_tensor(counts, dtype=torch.float32))
        self.register_buffer("prior_weights", prior_weights(counts, prior))
        self.register_buffer("macro_weights", torch.ones(self.n_classes))
        self.register_buffer("batch_presence", torch.zeros(self.n_classes))
        self.register_buffer("last_weights", torch.ones(self.n_classes))

    def set_epoch(self, epoch: int) -> None:
        """Start ``epoch`` (0-based): plain CE before ``switch_epoch``; from
        ``macro_switch_epoch`` on, refresh the macro weights first (official loop)."""
        self.epoch = check_int(epoch, "epoch", min_value=0)
        if self.epoch >= self.macro_switch_epoch:
            self.update_macro_weights()

    @property
    def reweighting(self) -> bool:
        """Whether the next call reweights (False only before ``switch_epoch``)."""
        return self.epoch is None or self.epoch >= self.switch_epoch

    def update_macro_weights(self) -> None:
        """Recompute ``m_c = max(b_c,1)^-gamma / mean(...)`` (call at each epoch start
        once the macro switch epoch is reached, as the official code does)."""
        raw = self.batch_presence.clamp_min(1.0) ** (-self.macro_gamma)
        self.macro_weights.copy_(raw / raw.mean())

    def class_weights(self, class_losses: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """Weights for given per-class losses: closed form × macro weights, clipped."""
        w = inverse_weights(class_losses, present, self.alpha, self.prior_weights, self.eps)
        w = torch.clamp(w * self.macro_weights, 0.0, self.max_weight)
        return w.detach() if self.detach_weights else w

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Reweighted mean cross-entropy; ``logits`` (batch, C), ``targets`` (batch,)."""
        check_logits_targets(logits, targets, self.n_classes, self.check_finite)
        if logits.shape[0] == 0:
            return logits.sum() * 0.0
        if not self.reweighting:
            return F.cross_entropy(upcast(logits), targets)
        ce = F.cross_entropy(upcast(logits), targets, reduction="none")  # (batch,)
        return self.reweight(ce, targets)

    def reweight(self, per_sample_loss: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """ILR applied to any per-sample loss: ``mean_i w_{y_i} loss_i`` (O(batch + C)).

        ``forward`` calls it with the per-sample cross-entropy; pass another per-sample
        loss (e.g. focal) to reweight that instead. Inputs are not validated here.
        """
        class_losses, present = per_class_mean(per_sample_loss, targets, self.n_classes)
        if self.training:
            self.batch_presence += present.to(self.batch_presence.dtype)
        weights = self.class_weights(class_losses, present)
        self.last_weights.copy_(weights.detach())
        return (weights[targets] * per_sample_loss).mean()

    def extra_repr(self) -> str:
        return (f"n_classes={self.n_classes}, alpha={self.alpha}, prior={self.prior!r}, "
                f"macro_gamma={self.macro_gamma}, max_weight={self.max_weight}, "
                f"detach_weights={self.detach_weights}, switch_epoch={self.switch_epoch}, "
                f"macro_switch_epoch={self.macro_switch_epoch}")
