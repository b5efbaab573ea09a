"""A small scikit-learn-style trainer for long-tailed classification with ILR or a baseline.

It reproduces the official ILR training loop at CPU scale: SGD with momentum, a
per-step learning-rate schedule, a cosine classifier for every loss, and the deferred
switch (``ce_then_reweighting``) at ``switch_frac · epochs``.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import balanced_accuracy_score
from sklearn.utils.validation import check_is_fitted

from icml26.core.device import resolve_device, seeded_rng, to_numpy
from icml26.core.validation import (check_choice, check_int, check_matrix, check_random_state,
                                    check_same_length, check_scalar_in, check_vector)

from .baselines import BalancedSoftmaxLoss, ClassBalancedLoss, DRWSchedule, FocalLoss, LDAMLoss
from .networks import CNN1dNet, MLPNet
from .reweighting import InverseReweightLoss, upcast
from .schedule import MittagLefflerLR, warmup_cosine_lr

__all__ = ["LongTailTrainer", "METHODS"]

METHODS = ("ce", "focal", "cb", "ce_drw", "ldam_drw", "bsm", "ilr")
LOSS_MODES = ("ce_then_reweighting", "all_reweighting")
EVAL_BATCH = 4096


class _CrossEntropy(torch.nn.Module):
    """Plain (optionally class-weighted) cross-entropy with the shared signature."""

    def __init__(self, weight=None):
        super().__init__()
        self.register_buffer("weight", weight)

    def forward(self, logits, targets):
        return F.cross_entropy(upcast(logits), targets, weight=self.weight)


class LongTailTrainer(ClassifierMixin, BaseEstimator):
    """Train a network with a cosine classifier on long-tailed data, with ILR or a baseline.

    Parameters
    ----------
    method : {"ilr", "ce", "focal", "cb", "ce_drw", "ldam_drw", "bsm"}, default "ilr"
        ``ilr``: :class:`InverseReweightLoss` (plain CE before ``switch_frac·epochs`` in the
        official ``ce_then_reweighting`` mode); ``ce``; ``focal``; ``cb`` (class-balanced CE);
        ``ce_drw`` (CE, then class-balanced weights); ``ldam_drw``; ``bsm`` (Balanced Softmax).
    epochs : int, default 40
    batch_size : int, default 128
    lr : float, default 0.1
        Base learning rate (SGD, momentum, weight decay below).
    momentum : float, default 0.9
    weight_decay : float, default 5e-4
    warmup_frac : float, default 0.05
        Fraction of steps in linear warm-up.
    switch_frac : float, default 0.8
        Switch epoch (loss switch of ILR/DRW) as a fraction of ``epochs``.
    schedule : {"cosine", "mile"}, default "cosine"
        ``cosine``: warm-up + cosine; ``mile``: the official :class:`MittagLefflerLR`.
    network : {"cnn1d", "mlp"}, default "cnn1d"
        :class:`CNN1dNet` for signals (N, L) or :class:`MLPNet` for features (N, d).
    feature_dim : int, default 64
    scale : float, default 30.0
        Cosine-classifier scale ``s`` (also LDAM's margin scale).
    loss_params : dict, optional
        Extra arguments of the method's loss. For ``ilr``: those of
        :class:`InverseReweightLoss` plus ``loss_mode`` (``"ce_then_reweighting"`` or
        ``"all_reweighting"``) and ``macro_switch_epoch`` (default: the switch epoch; in
        ``ce_then_reweighting`` mode it must be >= the switch epoch). For ``ce_drw``/``ldam_drw``: ``beta`` (and LDAM's ``max_margin``).
    random_state : int or RandomState, default 0
        Seeds initialisation and batch order (drawn on the CPU, so every device sees the same
        initial weights and batches).
    device : str or torch.device, default "cpu"
        Where the network and the loss train and predict (``"cuda"``, ``"cuda:N"``, ``"auto"``);
        inputs and outputs stay numpy.

    Attributes
    ----------
    model_ : torch.nn.Module
    classes_ : ndarray of shape (C,)
    class_counts_ : ndarray of shape (C,)
    switch_epoch_ : int
    loss_ : torch.nn.Module
        The method's loss after training (for ILR: its last weights and presence counts).
    history_ : list of float
        Mean training loss per epoch.
    device_ : torch.device
        The resolved ``device`` (where ``model_`` and ``loss_`` live).

    References
    ----------
    Wang, Tong, Xie, Gao. ICML 2026 (arXiv:2605.10047), official training script.

    Examples
    --------
    >>> from icml26.inverse_reweight.data import make_gaussian_lt
    >>> X, y, Xt, yt, _ = make_gaussian_lt(n_classes=3, n_features=8, n_max=60,
    ...                                    imbalance_ratio=10, seed=0)
    >>> clf = LongTailTrainer("ilr", epochs=5, network="mlp", batch_size=32).fit(X, y)
    >>> 0.0 <= clf.score(Xt, yt) <= 1.0
    True
    """

    def __init__(self, method="ilr", epochs=40, batch_size=128, lr=0.1, momentum=0.9,
                 weight_decay=5e-4, warmup_frac=0.05, switch_frac=0.8, schedule="cosine",
                 network="cnn1d", feature_dim=64, scale=30.0, loss_params=None, random_state=0,
                 device="cpu"):
        self.method = method
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.warmup_frac = warmup_frac
        self.switch_frac = switch_frac
        self.schedule = schedule
        self.network = network
        self.feature_dim = feature_dim
        self.scale = scale
        self.loss_params = loss_params
        self.random_state = random_state
        self.device = device

    # -- setup --------------------------------------------------------------------------
    def _build_network(self, n_features: int, n_classes: int):
        if self.network == "cnn1d":
            return CNN1dNet(n_classes, length=n_features, feature_dim=self.feature_dim,
                            scale=self.scale)
        return MLPNet(n_classes, in_features=n_features, feature_dim=self.feature_dim,
                      scale=self.scale)

    def _build_losses(self, counts: np.ndarray):
        params = dict(self.loss_params or {})
        self._drw = None
        if self.method in ("ce_drw", "ldam_drw"):
            self._drw = DRWSchedule(counts, self.switch_epoch_, beta=params.pop("beta", 0.9999))
        if self.method == "ilr":
            mode = check_choice(params.pop("loss_mode", "ce_then_reweighting"), "loss_mode",
                                LOSS_MODES)
            switch = self.switch_epoch_ if mode == "ce_then_reweighting" else 0
            macro = params.pop("macro_switch_epoch", self.switch_epoch_)
            return InverseReweightLoss(counts, switch_epoch=switch, macro_switch_epoch=macro,
                                       **params)
        if self.method == "ldam_drw":
            return LDAMLoss(counts, scale=self.scale, **params)
        if self.method == "focal":
            return FocalLoss(**params)
        if self.method == "cb":
            return ClassBalancedLoss(counts, **params)
        if self.method == "bsm":
            return BalancedSoftmaxLoss(counts, **params)
        if params:
            raise ValueError(f"loss_params {sorted(params)} are not used by method {self.method!r}")
        return _CrossEntropy()

    def _loss_for_epoch(self, epoch: int):
        if self.method == "ilr":
            self.loss_.set_epoch(epoch)
        if self.method == "ce_drw":
            return _CrossEntropy(self._drw.weights(epoch)).to(self.device_)
        if self.method == "ldam_drw":
            self.loss_.set_weight(self._drw.weights(epoch))
        return self.loss_

    def _check_params(self):
        check_choice(self.method, "method", METHODS)
        check_choice(self.schedule, "schedule", ("cosine", "mile"))
        check_choice(self.network, "network", ("cnn1d", "mlp"))
        check_int(self.epochs, "epochs", min_value=1)
        check_int(self.batch_size, "batch_size", min_value=1)
        check_scalar_in(self.lr, "lr", low=0.0, low_inclusive=False)
        check_scalar_in(self.warmup_frac, "warmup_frac", low=0.0, high=1.0, high_inclusive=False)
        check_scalar_in(self.switch_frac, "switch_frac", low=0.0, high=1.0)
        if self.loss_params is not None and not isinstance(self.loss_params, dict):
            raise TypeError(f"loss_params must be a dict or None, got {type(self.loss_params).__name__}")

    # -- training -----------------------------------------------------------------------
    def fit(self, X, y):
        """Train on ``X`` (N, L) and integer-like labels ``y`` (N,); returns ``self``."""
        self._check_params()
        self.device_ = resolve_device(self.device)
        X = check_matrix(X, "X", dtype=np.float32)
        y = check_vector(y, "y", dtype=None)
        check_same_length(X=X, y=y)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y must contain at least 2 classes, got {len(self.classes_)}")
        self.class_counts_ = np.bincount(y_index)
        self.n_features_in_ = X.shape[1]
        self.switch_epoch_ = int(round(self.switch_frac * self.epochs))
        seed = int(check_random_state(self.random_state).randint(0, 2**31 - 1))
        with seeded_rng(seed):
            self.model_ = self._build_network(X.shape[1], len(self.classes_)).to(self.device_)
        self.loss_ = self._build_losses(self.class_counts_).to(self.device_)

        inputs = torch.from_numpy(X).to(self.device_)
        targets = torch.from_numpy(y_index.astype(np.int64)).to(self.device_)
        iters = int(np.ceil(len(targets) / self.batch_size))
        total = iters * self.epochs
        warmup = int(round(self.warmup_frac * total))
        optimizer = torch.optim.SGD(self.model_.parameters(), lr=self.lr, momentum=self.momentum,
                                    weight_decay=self.weight_decay)
        if self.schedule == "mile":
            scheduler = MittagLefflerLR(optimizer, self.class_counts_, total, max(warmup, 1),
                                        self.switch_epoch_ * iters)
        else:
            scheduler = warmup_cosine_lr(optimizer, total, warmup)
        generator = torch.Generator().manual_seed(seed)
        self.history_ = []
        for epoch in range(self.epochs):
            self.model_.train()
            loss_fn = self._loss_for_epoch(epoch)
            order = torch.randperm(len(targets), generator=generator)
            running = 0.0
            for start in range(0, len(targets), self.batch_size):
                idx = order[start:start + self.batch_size]
                loss = loss_fn(self.model_(inputs[idx]), targets[idx])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                scheduler.step()
                running += float(loss.detach()) * len(idx)
            self.history_.append(running / len(targets))
            if not np.isfinite(self.history_[-1]):
                raise FloatingPointError(f"training loss became non-finite at epoch {epoch}; "
                                         f"lower lr (got {self.lr})")
        self.model_.eval()
        return self

    # -- inference ----------------------------------------------------------------------
    def _batched(self, X, fn):
        check_is_fitted(self, "model_")
        X = check_matrix(X, "X", dtype=np.float32)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but the model was fitted with "
                             f"{self.n_features_in_}")
        self.model_.eval()
        device = next(self.model_.parameters()).device          # where the model lives now
        with torch.no_grad():
            parts = [fn(torch.from_numpy(X[i:i + EVAL_BATCH]).to(device))
                     for i in range(0, len(X), EVAL_BATCH)]
        return to_numpy(torch.cat(parts))

    def decision_function(self, X) -> np.ndarray:
        """Logits ``s · cos(h, v_c)``, shape (N, C)."""
        return self._batched(X, self.model_)

    def transform(self, X) -> np.ndarray:
        """Penultimate features ``h`` (N, feature_dim)."""
        return self._batched(X, self.model_.features)

    def predict(self, X) -> np.ndarray:
        return self.classes_[self.decision_function(X).argmax(axis=1)]

    def per_sample_loss(self, X, y) -> np.ndarray:
        """Unweighted cross-entropy of each sample (eval mode), computed in float64 so that a
        perfectly fitted class does not round to a loss of exactly 0."""
        logits = torch.from_numpy(self.decision_function(X).astype(np.float64))
        y = check_vector(y, "y", dtype=None)
        check_same_length(X=logits, y=y)
        index = np.searchsorted(self.classes_, y).clip(max=len(self.classes_) - 1)
        if np.any(self.classes_[index] != y):
            raise ValueError("y contains labels not seen in fit")
        return F.cross_entropy(logits, torch.from_numpy(index.astype(np.int64)),
                               reduction="none").numpy()

    def score(self, X, y, sample_weight=None) -> float:
        """Balanced accuracy (= top-1 on a balanced test set)."""
        return float(balanced_accuracy_score(y, self.predict(X), sample_weight=sample_weight))
