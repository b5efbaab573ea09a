"""Learning-rate schedules: the official ILR "MiLe" (Mittag-Leffler) schedule and the
warm-up + cosine schedule used by the CPU-scale reproduction."""

from __future__ import annotations

import math

import numpy as np
from torch.optim.lr_scheduler import LambdaLR, LRScheduler

from icml26.core.validation import check_int

from .reweighting import check_class_counts

__all__ = ["MittagLefflerLR", "mittag_leffler", "mittag_leffler_order", "warmup_cosine_lr"]

SERIES_TERMS = 32  # the official code sums k = 0..31
STEP_GUARD = 1e-6  # official constants, (1 - 1e-6) and + 1e-6


def mittag_leffler(z: float, a: float) -> float:
    """``E_a(-z)``: the official truncated series for ``z < 1``, its asymptote
    ``1 / (z Γ(1-a))`` otherwise, clipped at 0.

    Examples
    --------
    >>> round(mittag_leffler(1.0 - 1e-9, 1.0), 4)   # E_1(-1) = exp(-1)
    0.3679
    """
    if z < 1.0:
        value = sum((-z) ** k / math.gamma(a * k + 1.0) for k in range(SERIES_TERMS))
    else:
        value = 1.0 / (z * math.gamma(1.0 - a))
    return max(value, 0.0)


def mittag_leffler_order(class_counts) -> float:
    """``a = 0.25 + 0.75 H(pi) / log C`` from the class distribution (official code).

    Examples
    --------
    >>> round(mittag_leffler_order([50, 50]), 3)
    1.0
    """
    counts = check_class_counts(class_counts)
    freq = counts / counts.sum()
    entropy = float(-(freq * np.log(freq)).sum())
    return 0.25 + 0.75 * entropy / math.log(len(counts))


class MittagLefflerLR(LRScheduler):
    """The official ILR "MiLe" schedule, stepped once per optimiser step.

    Warm-up ``lr = base (t+1)/W``; then, with ``t' = t - W``, ``T' = total - W`` and
    ``K = switch_step - W``: ``lr = base E_a(-(1-1e-6) t'/K)`` before the switch (falls
    from 1 to ≈0.38·base) and ``lr = base / ((1 + s/(1-s+1e-6)) Γ(1-a))`` after it, with
    ``s = (t'-K)/(T'-K)``. The order ``a`` comes from the class entropy (see
    :func:`mittag_leffler_order`).

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
    class_counts : array-like of shape (C,)
        Training counts; perfectly balanced counts give ``a = 1`` where ``Γ(1-a)`` is
        undefined, which raises ``ValueError`` (use :func:`warmup_cosine_lr` then).
    total_steps : int
        Total optimiser steps (epochs × iterations per epoch).
    warmup_steps : int
        Linear warm-up steps ``W`` (official: 10 epochs).
    switch_step : int
        Step of the loss switch (official: 160 epochs × iterations).

    References
    ----------
    Wang et al., ICML 2026, official code (``train.py``).

    Examples
    --------
    >>> import torch
    >>> opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = MittagLefflerLR(opt, [100, 10, 1], total_steps=100, warmup_steps=10,
    ...                         switch_step=80)
    >>> opt.param_groups[0]["lr"]
    0.1
    """

    def __init__(self, optimizer, class_counts, total_steps: int, warmup_steps: int,
                 switch_step: int, last_epoch: int = -1):
        self.total_steps = check_int(total_steps, "total_steps", min_value=2)
        self.warmup_steps = check_int(warmup_steps, "warmup_steps", min_value=1)
        self.switch_step = check_int(switch_step, "switch_step", min_value=self.warmup_steps + 1,
                                     max_value=self.total_steps - 1)
        self.order = mittag_leffler_order(class_counts)
        if self.order >= 1.0 - 1e-9:
            raise ValueError("class_counts are perfectly balanced (Mittag-Leffler order a = 1, "
                             "Γ(1 - a) undefined); use warmup_cosine_lr for balanced data")
        self._gamma_tail = math.gamma(1.0 - self.order)
        super().__init__(optimizer, last_epoch)

    def factor(self, step: int) -> float:
        """The multiplier of the base learning rate at optimiser step ``step``."""
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        t = step - self.warmup_steps
        horizon = self.total_steps - self.warmup_steps
        switch = self.switch_step - self.warmup_steps
        if t < switch:
            return mittag_leffler((1.0 - STEP_GUARD) * t / switch, self.order)
        s = min((t - switch) / (horizon - switch), 1.0 - STEP_GUARD)
        return 1.0 / ((1.0 + s / (1.0 - s + STEP_GUARD)) * self._gamma_tail)

    def get_lr(self):
        f = self.factor(self.last_epoch)
        return [base * f for base in self.base_lrs]


def warmup_cosine_lr(optimizer, total_steps: int, warmup_steps: int) -> LambdaLR:
    """Linear warm-up for ``warmup_steps`` then cosine decay to 0 at ``total_steps``.

    Examples
    --------
    >>> import torch
    >>> opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    >>> _ = warmup_cosine_lr(opt, total_steps=10, warmup_steps=2)
    >>> opt.param_groups[0]["lr"]
    0.5
    """
    total_steps = check_int(total_steps, "total_steps", min_value=1)
    warmup_steps = check_int(warmup_steps, "warmup_steps", min_value=0, max_value=total_steps)

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(total_steps - warmup_steps, 1)
        return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))

    return LambdaLR(optimizer, factor)
