"""Fate-composition prediction: clone compositions at a late time as targets for early cells,
and a softmax regressor trained with the KL divergence (the LCL paper's downstream head)."""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import xlogy
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from icml26.core.device import resolve_device, seeded_rng, to_numpy
from icml26.core.validation import check_finite_array, check_int, check_scalar_in

from .lcl import _torch_threads

__all__ = ["clone_fate_compositions", "FateCompositionRegressor", "kl_composition",
           "check_compositions"]

PRED_FLOOR = 1e-12      # predicted probabilities are clamped here inside the log
SUM_TOL = 1e-6          # rows must sum to 1 within this ...
RENORM_TOL = 1e-3       # ... or are renormalised when within this


def check_compositions(Y, name: str = "Y") -> np.ndarray:
    """Rows >= 0 summing to 1 (renormalised when within 1e-3 of 1, otherwise an error)."""
    Y = check_finite_array(Y, name, ndim=2)
    if np.any(Y < 0):
        raise ValueError(f"{name} has {int((Y < 0).sum())} negative entries; compositions must be >= 0")
    sums = Y.sum(axis=1)
    off = np.abs(sums - 1.0)
    if np.any(off > RENORM_TOL):
        worst = int(np.argmax(off))
        raise ValueError(f"{name} rows must sum to 1; row {worst} sums to {sums[worst]:.6g}")
    if np.any(off > SUM_TOL):
        Y = Y / sums[:, None]
    return Y


def kl_composition(Y_true, Y_pred) -> float:
    """Mean over rows of KL(Y_true || Y_pred) (nats), the paper's fate-prediction metric.

    ``0 log 0 = 0`` (xlogy) and predictions are clamped at 1e-12.

    Examples
    --------
    >>> kl_composition([[1.0, 0.0]], [[0.5, 0.5]])  # log 2
    0.6931471805599453
    """
    Y_true = check_compositions(Y_true, "Y_true")
    Y_pred = check_compositions(Y_pred, "Y_pred")
    if Y_true.shape != Y_pred.shape:
        raise ValueError(f"Y_true and Y_pred must have the same shape, got {Y_true.shape} and {Y_pred.shape}")
    kl = xlogy(Y_true, Y_true) - Y_true * np.log(np.maximum(Y_pred, PRED_FLOOR))
    return float(kl.sum(axis=1).mean())


def clone_fate_compositions(clone_ids, cell_types, times, early, late, classes, smoothing: float = 1e-3,
                            min_late_cells: int = 0):
    """Targets for fate prediction: each early cell gets its clone's late cell-type composition.

    Parameters
    ----------
    clone_ids, cell_types, times : array-like (n_cells,)
    early, late : scalar
        The early (t0) and late (t1) time values.
    classes : sequence
        Terminal classes; late cells of other types are ignored.
    smoothing : float
        alpha: ``y_c = (counts_c + alpha) / sum(counts_c + alpha)``.
    min_late_cells : int
        Clones with fewer late cells of the classes are dropped (so are those with none).

    Returns
    -------
    early_index : ndarray of int
        Indices of the early cells that get a target.
    Y : ndarray (len(early_index), len(classes))

    Examples
    --------
    >>> idx, Y = clone_fate_compositions([0, 0, 0], ["p", "a", "b"], [0, 1, 1], 0, 1, ["a", "b"],
    ...                                  smoothing=0.0)
    >>> idx.tolist(), Y.tolist()
    ([0], [[0.5, 0.5]])
    """
    clone_ids = np.asarray(clone_ids, dtype=object).ravel()
    cell_types = np.asarray(cell_types, dtype=object).ravel()
    times = np.asarray(times, dtype=object).ravel()
    if not (clone_ids.size == cell_types.size == times.size):
        raise ValueError(f"clone_ids, cell_types and times must have the same length, got "
                         f"{clone_ids.size}, {cell_types.size} and {times.size}")
    check_scalar_in(smoothing, "smoothing", low=0.0)
    check_int(min_late_cells, "min_late_cells", min_value=0)
    classes = list(classes)
    if len(classes) < 2:
        raise ValueError(f"classes must hold at least 2 terminal classes, got {classes}")
    class_index = {c: k for k, c in enumerate(classes)}
    late_mask = (times == late) & np.isin(cell_types, classes)
    keys = clone_ids.astype(str)
    counts: dict = {}
    for key, ctype in zip(keys[late_mask], cell_types[late_mask]):
        counts.setdefault(key, np.zeros(len(classes)))[class_index[ctype]] += 1
    targets = {}
    for key, c in counts.items():
        if c.sum() >= max(1, min_late_cells):
            y = c + smoothing
            targets[key] = y / y.sum()
    early_index = np.flatnonzero((times == early) & np.isin(keys, list(targets)))
    if early_index.size == 0:
        raise ValueError(f"no early cells (time == {early!r}) of clones with >= {max(1, min_late_cells)} "
                         f"late cells (time == {late!r}) of classes {classes}")
    Y = np.stack([targets[k] for k in keys[early_index]])
    return early_index, Y


class FateCompositionRegressor(RegressorMixin, BaseEstimator):
    """Predict a cell's clone fate composition from its embedding: softmax head trained with KL.

    The paper's head: a linear layer with softmax (``hidden=None``) or one hidden ReLU layer,
    trained on early cells with targets from :func:`clone_fate_compositions` by minimising
    the batch-mean KL(y || p) with AdamW and early stopping on a random validation share.

    Parameters
    ----------
    hidden : int or None
        Width of an optional hidden ReLU layer (the older variant used 10).
    lr, weight_decay : float
        AdamW settings (paper: 5e-3, 1e-4).
    batch_size : int
        Mini-batch size (256).
    max_epochs, patience : int
        At most 5,000 epochs; stop after ``patience`` epochs without a validation improvement of
        ``min_delta`` and restore the best weights.
    min_delta : float
    val_fraction : float in [0, 1)
        Share of the training cells held out for early stopping (0: train on all for
        ``max_epochs``).
    standardize : bool
        Centre and scale the input columns first (an option, not in the paper; off by default).
    n_threads : int
    random_state : int
    device : str or torch.device, default "cpu"
        Where the head trains and predicts (``"cuda"``, ``"cuda:N"``, ``"auto"``); arrays in
        and out stay numpy.

    Attributes
    ----------
    model_ : torch.nn.Module
    n_epochs_ : int
    n_features_in_ : int
    n_outputs_ : int

    References
    ----------
    "Leveraging Lineage Barcodes as Natural Augmentations for Contrastive Learning of Cell Fate in
    scRNA-seq Data", ICML 2026 (ICML author list not retrieved); preprint: Yang, Wang & Lin, "LCL:
    Contrastive Learning for Lineage Barcoded scRNA-seq Data", bioRxiv 2024
    (doi:10.1101/2024.10.28.620670). Its fate-composition head.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(200, 3))
    >>> Y = np.exp(np.c_[Z[:, 0], -Z[:, 0]]); Y /= Y.sum(1, keepdims=True)
    >>> head = FateCompositionRegressor(max_epochs=300, val_fraction=0.0).fit(Z, Y)
    >>> bool(head.score(Z, Y) > -0.05)
    True
    """

    def __init__(self, hidden=None, lr=5e-3, weight_decay=1e-4, batch_size=256, max_epochs=5000,
                 patience=150, min_delta=1e-5, val_fraction=0.2, standardize=False, n_threads=1,
                 random_state=0, device="cpu"):
        self.hidden = hidden
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.min_delta = min_delta
        self.val_fraction = val_fraction
        self.standardize = standardize
        self.n_threads = n_threads
        self.random_state = random_state
        self.device = device

    def _inputs(self, Z):
        Z = check_finite_array(Z, "Z", ndim=2)
        if hasattr(self, "n_features_in_") and Z.shape[1] != self.n_features_in_:
            raise ValueError(f"Z has {Z.shape[1]} features but the head was fitted on {self.n_features_in_}")
        x = torch.from_numpy(((Z - self.mean_) / self.scale_).astype(np.float32))
        return x if not hasattr(self, "model_") else x.to(next(self.model_.parameters()).device)

    def fit(self, Z, Y):
        """Fit on embeddings ``Z`` (n, d) and compositions ``Y`` (n, F)."""
        Z = check_finite_array(Z, "Z", ndim=2)
        Y = check_compositions(Y, "Y")
        if Z.shape[0] != Y.shape[0]:
            raise ValueError(f"Z has {Z.shape[0]} rows but Y has {Y.shape[0]}")
        if Y.shape[1] < 2:
            raise ValueError(f"Y must have at least 2 classes, got {Y.shape[1]}")
        check_scalar_in(self.val_fraction, "val_fraction", low=0.0, high=1.0, high_inclusive=False)
        check_int(self.max_epochs, "max_epochs", min_value=1)
        check_int(self.batch_size, "batch_size", min_value=1)
        check_int(self.patience, "patience", min_value=1)
        if self.hidden is not None:
            check_int(self.hidden, "hidden", min_value=1)
        for attr in ("n_features_in_",):
            self.__dict__.pop(attr, None)
        self.mean_ = Z.mean(axis=0) if self.standardize else np.zeros(Z.shape[1])
        scale = Z.std(axis=0) if self.standardize else np.ones(Z.shape[1])
        self.scale_ = np.where(scale > 0, scale, 1.0)
        device = resolve_device(self.device)
        self.__dict__.pop("model_", None)
        x_all = self._inputs(Z).to(device)
        y_all = torch.from_numpy(Y.astype(np.float32)).to(device)
        rng = np.random.default_rng(self.random_state)
        n = Z.shape[0]
        n_val = int(round(self.val_fraction * n)) if n > 1 else 0
        perm = rng.permutation(n)
        val, train = perm[:n_val], perm[n_val:]
        F = Y.shape[1]
        with _torch_threads(int(self.n_threads)), seeded_rng(int(self.random_state), device):
            d = Z.shape[1]
            layers = ([torch.nn.Linear(d, F)] if self.hidden is None else
                      [torch.nn.Linear(d, self.hidden), torch.nn.ReLU(), torch.nn.Linear(self.hidden, F)])
            model = torch.nn.Sequential(*layers).to(device)
            opt = torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            best, best_state, waited, epochs = math.inf, None, 0, 0
            gen = torch.Generator().manual_seed(int(self.random_state))
            x_tr, y_tr = x_all[train], y_all[train]
            for epoch in range(int(self.max_epochs)):
                epochs = epoch + 1
                order = torch.randperm(len(train), generator=gen)
                for start in range(0, len(train), int(self.batch_size)):
                    idx = order[start:start + int(self.batch_size)]
                    loss = _kl_loss(model(x_tr[idx]), y_tr[idx])
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                if n_val:
                    with torch.no_grad():
                        val_loss = float(_kl_loss(model(x_all[val]), y_all[val]))
                    if val_loss < best - self.min_delta:
                        best, waited = val_loss, 0
                        best_state = {k: v.clone() for k, v in model.state_dict().items()}
                    else:
                        waited += 1
                        if waited >= self.patience:
                            break
            if best_state is not None:
                model.load_state_dict(best_state)
        self.model_ = model.eval()
        self.device_ = device
        self.n_epochs_ = epochs
        self.n_features_in_ = Z.shape[1]
        self.n_outputs_ = F
        return self

    def predict(self, Z) -> np.ndarray:
        """Predicted compositions (n, F), rows summing to 1."""
        check_is_fitted(self, "model_")
        with torch.no_grad():
            p = to_numpy(torch.softmax(self.model_(self._inputs(Z)).double(), dim=1))
        return p / p.sum(axis=1, keepdims=True)

    def score(self, Z, Y, sample_weight=None) -> float:
        """``-kl_composition(Y, predict(Z))`` (higher is better, as scikit-learn expects)."""
        return -kl_composition(Y, self.predict(Z))


def _kl_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Batch-mean KL(y || softmax(logits)), with 0 log 0 = 0."""
    log_p = torch.log_softmax(logits, dim=1)
    return (torch.xlogy(y, y) - y * log_p).sum(dim=1).mean()
