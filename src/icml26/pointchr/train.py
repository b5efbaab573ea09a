"""Training and evaluation of the point classifiers, and a scikit-learn-style wrapper.

The recipe follows PointNet-style classification training: Adam (lr 1e-3, weight decay 1e-4),
batch 32, cosine learning-rate schedule, cross-entropy (optional label smoothing); no extra loss
for CHR (the abstract implies none). Curvature is precomputed once per cloud and passed in.

References
----------
PointCHR: curvature-aware hyperbolic rectification for point cloud analysis (ICML 2026).
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted
from torch.nn import functional as F

from icml26.core.device import deterministic_cuda_env, resolve_device, seeded_rng, to_numpy
from icml26.core.validation import (check_choice, check_finite_array, check_int, check_scalar_in,
                                    check_vector)

from .baselines import DGCNNLite, HyCoReLite, PointNet2Lite, PointNetLite, shuffle_within_clouds
from .chr import GATE_QUANTILES, SPEC_GATE, quantile_gate
from .curvature import check_points, surface_variation

__all__ = ["build_model", "train_classifier", "predict_logits", "PointCHRClassifier", "VARIANTS",
           "GATE_RULES", "gate_init", "deterministic_torch"]

GATE_RULES = ("quantile", "spec")


@contextlib.contextmanager
def deterministic_torch(threads: int = 1):
    """Run a block with a fixed torch thread count and deterministic algorithms, then restore both.

    Float sums are split differently over different thread counts, and training amplifies those
    last-bit differences into points of accuracy; a fixed count makes a seed's numbers the same
    whatever the machine, the number of jobs or the caller's thread setting. On CUDA,
    ``CUBLAS_WORKSPACE_CONFIG`` is set (unless set) so deterministic cuBLAS calls can run.
    """
    threads = check_int(threads, "threads", min_value=1)
    deterministic_cuda_env()     # cuBLAS needs a fixed workspace for deterministic CUDA matmuls
    old_threads, old_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    old_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det, warn_only=old_warn)


def gate_init(rule: str, curvature=None, quantiles: tuple = GATE_QUANTILES) -> dict:
    """CHR gate initialisation (``a_init``, ``b_init``) for a gate rule.

    ``"quantile"``: :func:`~icml26.pointchr.chr.quantile_gate` on the training curvature (label-free;
    the gate rises from 0.1 to 0.9 between the ``quantiles`` of the training κ); ``"spec"``: the
    spec's literal ``a = 10, b = 0.2``.
    """
    check_choice(rule, "gate_rule", GATE_RULES)
    if rule == "spec":
        return dict(SPEC_GATE)
    if curvature is None:
        raise ValueError("gate_rule='quantile' needs the training curvature")
    gate = quantile_gate(curvature, *quantiles)
    return {"a_init": gate["a_init"], "b_init": gate["b_init"]}

VARIANTS = ("base", "curv", "chr", "chr_shuffled", "chr_curv", "hycore")
BACKBONES = ("pointnet", "dgcnn", "pointnet2")


def build_model(variant: str, num_classes: int, backbone: str = "pointnet", k: int = 16,
                hyp_dim: int | None = None, chr_stage: str = "pool", **chr_kwargs) -> torch.nn.Module:
    """The classifier for a comparison variant.

    ``base``: the backbone; ``curv``: + κ as a 4th input channel; ``chr``: + CHR;
    ``chr_shuffled``: + CHR (the caller feeds κ permuted within each cloud); ``chr_curv``: + κ as
    a 4th input channel + CHR (the paper's component on top of the feature it uses); ``hycore``:
    HyCoRe-lite (backbone ignored; PointNet-lite encoder).
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(backbone, "backbone", BACKBONES)
    if variant == "hycore":
        return HyCoReLite(num_classes, hyp_dim=64 if hyp_dim is None else hyp_dim)
    if backbone == "pointnet2":
        if variant not in ("base", "chr"):
            raise ValueError(f"backbone 'pointnet2' supports variant 'base' or 'chr', got {variant!r}")
        return PointNet2Lite(num_classes, use_chr=variant == "chr", hyp_dim=hyp_dim, k=k, **chr_kwargs)
    cls = PointNetLite if backbone == "pointnet" else DGCNNLite
    return cls(num_classes, use_chr=variant in ("chr", "chr_shuffled", "chr_curv"), chr_stage=chr_stage,
               curvature_feature=variant in ("curv", "chr_curv"), hyp_dim=hyp_dim, k=k, **chr_kwargs)


def _batches(n: int, batch_size: int, generator: torch.Generator | None):
    order = torch.randperm(n, generator=generator) if generator is not None else torch.arange(n)
    for start in range(0, n, batch_size):
        idx = order[start:start + batch_size]
        if generator is not None and len(idx) < 2:   # BatchNorm needs two samples in training
            continue
        yield idx


def train_classifier(model: torch.nn.Module, points: torch.Tensor, labels: torch.Tensor,
                     curvature: torch.Tensor | None = None, *, epochs: int = 20,
                     batch_size: int = 32, lr: float = 1e-3, weight_decay: float = 1e-4,
                     label_smoothing: float = 0.0, seed: int = 0,
                     history: list | None = None) -> torch.nn.Module:
    """Train ``model`` in place on clouds ``points`` (M, N, 3) with integer ``labels`` (M,).

    ``curvature`` (M, N) is the precomputed κ (required by models that use it). Deterministic
    given ``seed`` and the torch thread count (the initialisation is the caller's: seed torch
    before building the model; :func:`deterministic_torch` fixes the threads). ``history``, if
    given, receives the mean training loss of every epoch (the training curve).
    """
    epochs = check_int(epochs, "epochs", min_value=1)
    batch_size = check_int(batch_size, "batch_size", min_value=2)
    check_scalar_in(lr, "lr", low=0.0, low_inclusive=False)
    check_scalar_in(weight_decay, "weight_decay", low=0.0)
    check_scalar_in(label_smoothing, "label_smoothing", low=0.0, high=1.0, high_inclusive=False)
    gen = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * max(1, -(-len(points) // batch_size))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    model.train()
    for _ in range(epochs):
        total, count = 0.0, 0
        for idx in _batches(len(points), batch_size, gen):
            kappa = None if curvature is None else curvature[idx]
            logits = model(points[idx], kappa)
            loss = F.cross_entropy(logits, labels[idx], label_smoothing=label_smoothing)
            if isinstance(model, HyCoReLite):
                loss = loss + model.regulariser(points[idx], gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total, count = total + float(loss.detach()) * len(idx), count + len(idx)
        if history is not None:
            history.append(total / max(count, 1))
    model.eval()
    return model


@torch.no_grad()
def predict_logits(model: torch.nn.Module, points: torch.Tensor,
                   curvature: torch.Tensor | None = None, batch_size: int = 200,
                   return_chr: bool = False):
    """Logits (M, C) in eval mode; with ``return_chr`` also the concatenated CHR radii and weights."""
    model.eval()
    outs, radii, weights = [], [], []
    for idx in _batches(len(points), batch_size, None):
        kappa = None if curvature is None else curvature[idx]
        logits, info = model(points[idx], kappa, return_chr=True)
        outs.append(logits)
        if info is not None:
            radii.append(info["radius"])
            weights.append(info["weight"])
    logits = torch.cat(outs)
    if not return_chr:
        return logits
    extra = {"radius": torch.cat(radii), "weight": torch.cat(weights)} if radii else None
    return logits, extra


class PointCHRClassifier(ClassifierMixin, BaseEstimator):
    """Point-cloud classifier (PointNet-lite or DGCNN-lite backbone, optionally with CHR), sklearn-style.

    Parameters
    ----------
    variant : {"chr", "base", "curv", "chr_shuffled", "hycore"}
        ``chr`` (default) inserts the CHR module; the others are the paper-comparison controls.
    backbone : {"pointnet", "dgcnn", "pointnet2"}
        ``pointnet2`` computes κ on its own centroids (variants ``base`` and ``chr`` only).
    epochs, batch_size, lr, weight_decay : training recipe
    k : int
        Curvature neighbourhood size.
    hyp_dim : int, optional
        CHR projection width (``None``: no projection, CHR on the backbone's 128-d features).
    chr_stage : {"pool", "embed", "all"}
    gate_rule : {"quantile", "spec"}
        CHR gate initialisation: ``quantile`` (default) sets the gate to rise from 0.1 to 0.9
        between the 0.6 and 0.8 quantiles of the training points' κ (label-free, see
        :func:`~icml26.pointchr.chr.quantile_gate`); ``spec`` is the spec's literal ``a = 10,
        b = 0.2``. Both stay learnable.
    random_state : int
        Seed of the initialisation, batch order and the κ shuffle (torch's global generator is
        seeded only inside ``fit`` and restored afterwards).
    device : str or torch.device
        Where the network trains and predicts: ``"cpu"`` (default), ``"cuda"``, ``"cuda:N"`` or
        ``"auto"``. Inputs and outputs stay numpy. The batch order and the κ shuffle are drawn
        on the CPU (the same on every device); dropout masks are drawn on ``device``.

    Attributes
    ----------
    classes_ : ndarray
    model_ : torch.nn.Module
        The trained network (float32, on ``device_``).
    device_ : torch.device
        The resolved ``device``.

    Notes
    -----
    ``X`` is a 3-D array of clouds ``(n_clouds, n_points, 3)``, so scikit-learn's
    ``check_estimator`` (2-D ``X``) does not apply; ``get_params``/``set_params``/``clone`` do.

    References
    ----------
    PointCHR: curvature-aware hyperbolic rectification for point cloud analysis (ICML 2026).

    Examples
    --------
    >>> from icml26.pointchr import make_fine_detail_dataset
    >>> X, y, _, _ = make_fine_detail_dataset(n_per_class=4, n_points=64, families=("rounded_cube",))
    >>> clf = PointCHRClassifier(epochs=1, k=8).fit(X, y)
    >>> clf.predict(X).shape
    (16,)
    """

    def __init__(self, variant: str = "chr", backbone: str = "pointnet", epochs: int = 20,
                 batch_size: int = 32, lr: float = 1e-3, weight_decay: float = 1e-4, k: int = 16,
                 hyp_dim: int | None = None, chr_stage: str = "pool", gate_rule: str = "quantile",
                 random_state: int = 0, device="cpu"):
        self.variant = variant
        self.backbone = backbone
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.k = k
        self.hyp_dim = hyp_dim
        self.chr_stage = chr_stage
        self.gate_rule = gate_rule
        self.random_state = random_state
        self.device = device

    def _points(self, X, device=None) -> torch.Tensor:
        arr = check_finite_array(X, "X", dtype=np.float32, ndim=3)
        pts = torch.from_numpy(np.ascontiguousarray(arr))
        check_points(pts, "X", k=self.k)
        return pts if device is None else pts.to(device)

    def _curvature(self, pts: torch.Tensor) -> torch.Tensor | None:
        if self.variant in ("base", "hycore"):
            return None
        kappa = surface_variation(pts, self.k)
        if self.variant == "chr_shuffled":
            kappa = shuffle_within_clouds(kappa, check_int(self.random_state, "random_state"))
        return kappa

    def fit(self, X, y):
        """Train on clouds ``X`` (n_clouds, n_points, 3) and labels ``y``; returns self."""
        check_choice(self.variant, "variant", VARIANTS)
        check_choice(self.gate_rule, "gate_rule", GATE_RULES)
        device = resolve_device(self.device)
        pts = self._points(X, device)
        y = check_vector(y, "y", dtype=None)
        if len(y) != len(pts):
            raise ValueError(f"y has {len(y)} labels; expected one per cloud in X ({len(pts)})")
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y has one class (X, y: {len(y)} cloud(s)); expected at least two classes")
        kappa = self._curvature(pts)
        gate = gate_init(self.gate_rule, kappa) if self.variant in ("chr", "chr_shuffled") else {}
        seed = check_int(self.random_state, "random_state", min_value=0)
        with seeded_rng(seed, device):
            self.model_ = build_model(self.variant, len(self.classes_), self.backbone, self.k,
                                      self.hyp_dim, self.chr_stage, **gate).to(device)
            train_classifier(self.model_, pts, torch.from_numpy(codes).long().to(device), kappa,
                             epochs=self.epochs, batch_size=self.batch_size, lr=self.lr,
                             weight_decay=self.weight_decay, seed=self.random_state)
        self.device_ = device
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (n_clouds, n_classes)."""
        check_is_fitted(self, "model_")
        pts = self._points(X, self.device_)
        return to_numpy(torch.softmax(predict_logits(self.model_, pts, self._curvature(pts)), -1))

    def predict(self, X) -> np.ndarray:
        """Predicted labels (n_clouds,)."""
        return self.classes_[self.predict_proba(X).argmax(axis=1)]
