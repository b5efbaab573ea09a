"""The cosine classifier of the official ILR code and the small networks of the
CPU-scale reproduction (a 1-D CNN for MNIST-1D, an MLP for tabular features)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from icml26.core.validation import check_int, check_scalar_in

__all__ = ["CosineClassifier", "CNN1dNet", "MLPNet"]


class CosineClassifier(nn.Module):
    """Cosine ("NormedLinear") classifier: ``z_c = scale * cos(h, v_c)``.

    Parameters
    ----------
    in_features : int
        Feature dimension ``d``.
    n_classes : int
        Number of classes ``C``.
    scale : float, default 30.0
        Logit scale ``s`` (official ILR and LDAM-DRW value).

    Attributes
    ----------
    weight : nn.Parameter of shape (C, d)
        Class vectors ``v_c`` (normalised in the forward pass).

    References
    ----------
    Wang et al., ICML 2026 (official code uses ``NormedLinear`` from kaidic/LDAM-DRW).

    Examples
    --------
    >>> clf = CosineClassifier(4, 3)
    >>> clf(torch.randn(2, 4)).abs().max() <= 30.0
    tensor(True)
    """

    def __init__(self, in_features: int, n_classes: int, scale: float = 30.0):
        super().__init__()
        self.in_features = check_int(in_features, "in_features", min_value=1)
        self.n_classes = check_int(n_classes, "n_classes", min_value=2)
        self.scale = check_scalar_in(scale, "scale", low=0.0, low_inclusive=False)
        weight = torch.empty(self.n_classes, self.in_features).uniform_(-1.0, 1.0)
        self.weight = nn.Parameter(F.normalize(weight, dim=1))

    def forward(self, features: torch.Tensor) -> torch.Tensor:  # (batch, d) -> (batch, C)
        return self.scale * F.normalize(features, dim=1) @ F.normalize(self.weight, dim=1).T

    def normalized_weight(self) -> torch.Tensor:
        """The unit class vectors that define the logits, shape (C, d)."""
        return F.normalize(self.weight.detach(), dim=1)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, n_classes={self.n_classes}, scale={self.scale}"


class _FeatureClassifier(nn.Module):
    """A feature extractor followed by a cosine classifier; ``features(x)`` gives ``h``."""

    backbone: nn.Module
    classifier: CosineClassifier

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.backbone(x))


class CNN1dNet(_FeatureClassifier):
    """1-D CNN of the spec's MNIST-1D experiment with a cosine classifier.

    ``Conv(1→c, k5) → Conv(c→c, k3, s2) → Conv(c→c, k3, s2) → Linear(→feature_dim)``, ReLU
    after each layer ("same" padding, so a length-40 signal gives ``c × 10 = 320`` inputs to
    the linear layer), then :class:`CosineClassifier`.

    Parameters
    ----------
    n_classes : int
    length : int, default 40
        Signal length.
    channels : int, default 32
    feature_dim : int, default 64
    scale : float, default 30.0

    References
    ----------
    Greydanus & Kobak, "Scaling Down Deep Learning with MNIST-1D", ICML 2024 (the benchmark this
    network is sized for). Wang, Tong, Xie, Gao. "Rethinking Loss Reweighting for Imbalance
    Learning as an Inverse Problem: A Neural Collapse Point of View", ICML 2026,
    arXiv:2605.10047 (its MNIST-1D experiment).

    Examples
    --------
    >>> CNN1dNet(10)(torch.randn(3, 40)).shape
    torch.Size([3, 10])
    """

    def __init__(self, n_classes: int, length: int = 40, channels: int = 32,
                 feature_dim: int = 64, scale: float = 30.0):
        super().__init__()
        length = check_int(length, "length", min_value=4)
        channels = check_int(channels, "channels", min_value=1)
        feature_dim = check_int(feature_dim, "feature_dim", min_value=1)
        convs = nn.Sequential(
            nn.Conv1d(1, channels, 5, padding=2), nn.ReLU(),
            nn.Conv1d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv1d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
        )
        with torch.no_grad():
            flat = convs(torch.zeros(1, 1, length)).numel()
        self.length = length
        self.backbone = nn.Sequential(nn.Unflatten(1, (1, length)), convs, nn.Flatten(),
                                      nn.Linear(flat, feature_dim), nn.ReLU())
        self.classifier = CosineClassifier(feature_dim, n_classes, scale)


class MLPNet(_FeatureClassifier):
    """Two-layer ReLU MLP with a cosine classifier (for tabular / synthetic features).

    References
    ----------
    Wang, Tong, Xie, Gao. "Rethinking Loss Reweighting for Imbalance Learning as an Inverse
    Problem: A Neural Collapse Point of View", ICML 2026, arXiv:2605.10047 (the MLP is this
    reproduction's small network for synthetic / tabular features; the cosine head follows the
    paper's official code).

    Examples
    --------
    >>> MLPNet(5, in_features=8)(torch.randn(2, 8)).shape
    torch.Size([2, 5])
    """

    def __init__(self, n_classes: int, in_features: int, hidden: int = 128,
                 feature_dim: int = 64, scale: float = 30.0):
        super().__init__()
        in_features = check_int(in_features, "in_features", min_value=1)
        hidden = check_int(hidden, "hidden", min_value=1)
        feature_dim = check_int(feature_dim, "feature_dim", min_value=1)
        self.backbone = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(),
                                      nn.Linear(hidden, feature_dim), nn.ReLU())
        self.classifier = CosineClassifier(feature_dim, n_classes, scale)
