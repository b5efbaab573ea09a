"""The encoders of Experiment B: stand-ins for frozen foundation models and physics-aligned controls.

Vision-foundation-model weights need a model hub (unavailable offline), so the image-level
paradox is reproduced with encoders trainable on a CPU (spec §6, Exp B):

* :class:`PixelPCA` (E1) — PCA of the raw pixels, fitted on unlabelled frames;
* :class:`RandomConvEncoder` (E2) — a frozen, randomly initialised ConvNet (generic features);
* :class:`ConvAutoencoder` (E3) — pixel-MSE reconstruction, the masked-autoencoder analogue;
* :class:`SupervisedCNN` (E4) — trained end-to-end on the centre crop to predict ``P_c``
  (the paper's pixel-supervised baseline);
* :class:`EyeFeatures` (E5) — Dvorak-style hand features (eye warmth, cold ring, cold area).

Neural encoders take BT images (K) and normalise them like TC-Bench stage 09:
``(x − 140) / (375 − 140)`` clamped to [0, 1] (no ImageNet statistics).

References
----------
Yao et al., *The Perception–Physics Paradox: Probing Scientific Alignment with TC-Bench*,
ICML 2026, §5 and App. E.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import PCA
from sklearn.utils.validation import check_is_fitted
from torch import nn

from ..core.device import to_numpy
from ..core.validation import check_finite_array, check_int, check_same_length, renamed_seed
from .data import BT_MAX, BT_MIN

__all__ = ["normalize_bt", "PixelPCA", "RandomConvEncoder", "ConvAutoencoder", "SupervisedCNN",
           "EyeFeatures", "encode"]

COLD_CLOUD_K = 220.0       # "cold" pixels for the cold-area fraction (K)
BATCH = 256                # inference batch


def _images(images, name: str = "images") -> np.ndarray:
    arr = check_finite_array(images, name, dtype=np.float32, ndim=3)
    return arr


def normalize_bt(images) -> torch.Tensor:
    """``(x − 140)/(375 − 140)`` clamped to [0, 1], as a ``(n, 1, H, W)`` float tensor."""
    x = torch.as_tensor(np.asarray(images, dtype=np.float32))
    return ((x - BT_MIN) / (BT_MAX - BT_MIN)).clamp(0.0, 1.0).unsqueeze(1)


@torch.no_grad()
def encode(module: nn.Module, images, method: str = "encode", batch_size: int = BATCH
           ) -> np.ndarray:
    """Run ``module.<method>`` over BT images in batches (eval mode, no grad) → numpy features,
    on the module's device."""
    x = normalize_bt(_images(images))
    device = next(module.parameters()).device
    was_training = module.training
    module.eval()
    fn = getattr(module, method)
    out = torch.cat([fn(x[i:i + batch_size].to(device)) for i in range(0, len(x), batch_size)])
    module.train(was_training)
    return to_numpy(out).astype(np.float64)


def _seeded_init(module: nn.Module, seed: int) -> None:
    """Re-initialise conv/linear layers with a private generator (no global RNG)."""
    gen = torch.Generator().manual_seed(seed)
    for layer in module.modules():
        if isinstance(layer, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
            nn.init.kaiming_uniform_(layer.weight, a=5 ** 0.5, generator=gen)
            if layer.bias is not None:
                bound = 1.0 / max(1, layer.weight[0].numel()) ** 0.5
                nn.init.uniform_(layer.bias, -bound, bound, generator=gen)


class PixelPCA(TransformerMixin, BaseEstimator):
    """E1: principal components of raw BT pixels (fitted on unlabelled frames).

    Parameters
    ----------
    n_components : int, default 64
    random_state : int, default 0
        Seed of the randomized SVD.
    seed : int, optional
        Deprecated alias of ``random_state``.

    Examples
    --------
    >>> X = np.random.default_rng(0).uniform(200, 300, (50, 16, 16))
    >>> PixelPCA(n_components=4).fit_transform(X).shape
    (50, 4)
    """

    def __init__(self, n_components: int = 64, random_state: int = 0, seed: int | None = None):
        self.n_components = n_components
        self.random_state = random_state
        self.seed = seed

    def fit(self, images, y=None):
        X = _images(images).reshape(len(images), -1)
        check_int(self.n_components, "n_components", min_value=1, max_value=min(X.shape))
        rs = renamed_seed(self.random_state, self.seed, "PixelPCA", stacklevel=2)
        self.pca_ = PCA(self.n_components, svd_solver="randomized", random_state=rs).fit(X)
        return self

    def transform(self, images):
        check_is_fitted(self, "pca_")
        X = _images(images)
        return self.pca_.transform(X.reshape(len(X), -1))


class RandomConvEncoder(nn.Module):
    """E2: frozen random ConvNet — conv 5×5/32 s2 → 3×3/64 s2 → 3×3/128 s2 (ReLU), global average pool.

    Parameters
    ----------
    random_state : int, default 0
        Seed of the (frozen) random weights.
    seed : int, optional
        Deprecated alias of ``random_state``.
    """

    def __init__(self, random_state: int = 0, seed: int | None = None):
        super().__init__()
        self.random_state = renamed_seed(random_state, seed, "RandomConvEncoder")
        self.net = nn.Sequential(
            nn.Conv2d(1, 32, 5, stride=2, padding=2), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.ReLU())
        _seeded_init(self, self.random_state)
        self.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:   # (b, 1, H, W) -> (b, 128)
        return self.net(x).mean(dim=(2, 3))

    encode = forward

    def fit(self, images=None, y=None) -> "RandomConvEncoder":
        """Frozen: nothing to learn (kept for a uniform ``fit``/``transform`` API)."""
        return self

    def transform(self, images) -> np.ndarray:
        return encode(self, images)


def _train(module: nn.Module, loss_fn, tensors, epochs: int, lr: float, batch_size: int,
           seed: int) -> list[float]:
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    device = next(module.parameters()).device          # batches go where the module lives
    n = len(tensors[0])
    history = []
    module.train()
    for _ in range(epochs):
        order = torch.randperm(n, generator=gen)
        total = 0.0
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            loss = loss_fn(*(t[idx].to(device) for t in tensors))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        history.append(total / n)
    module.eval()
    return history


class ConvAutoencoder(nn.Module):
    """E3: convolutional autoencoder with a ``bottleneck``-d code, trained on pixel MSE.

    Encoder: conv 4×4 s2 (``width``) → (2·width) → (2·width) → linear ``bottleneck``; the
    decoder mirrors it with transposed convolutions.  Image side must be a multiple of 8.
    (The spec fixes only the 64-d bottleneck, pixel MSE and 5 epochs; the widths are chosen
    to fit the CPU budget.)

    Parameters
    ----------
    image_size : int, default 64
    bottleneck : int, default 64
    width : int, default 8
    random_state : int, default 0
        Seed of the initial weights and of the batch order.
    seed : int, optional
        Deprecated alias of ``random_state``.
    """

    def __init__(self, image_size: int = 64, bottleneck: int = 64, width: int = 8,
                 random_state: int = 0, seed: int | None = None):
        super().__init__()
        check_int(image_size, "image_size", min_value=8)
        if image_size % 8:
            raise ValueError(f"image_size must be a multiple of 8, got {image_size}")
        side = image_size // 8
        self.random_state = renamed_seed(random_state, seed, "ConvAutoencoder")
        w1, w2 = check_int(width, "width", min_value=1), 2 * width
        self.encoder = nn.Sequential(
            nn.Conv2d(1, w1, 4, 2, 1), nn.ReLU(), nn.Conv2d(w1, w2, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(w2, w2, 4, 2, 1), nn.ReLU(), nn.Flatten(),
            nn.Linear(w2 * side * side, bottleneck))
        self.decoder = nn.Sequential(
            nn.Linear(bottleneck, w2 * side * side), nn.ReLU(), nn.Unflatten(1, (w2, side, side)),
            nn.ConvTranspose2d(w2, w2, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(w2, w1, 4, 2, 1),
            nn.ReLU(), nn.ConvTranspose2d(w1, 1, 4, 2, 1))
        _seeded_init(self, self.random_state)

    def encode(self, x: torch.Tensor) -> torch.Tensor:    # (b, 1, H, W) -> (b, bottleneck)
        return self.encoder(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:   # reconstruction, same shape as x
        return self.decoder(self.encoder(x))

    def fit(self, images, y=None, epochs: int = 5, lr: float = 1e-3,
            batch_size: int = 128) -> "ConvAutoencoder":
        """Train on pixel MSE; stores ``loss_history_``."""
        x = normalize_bt(_images(images))
        self.loss_history_ = _train(self, lambda b: nn.functional.mse_loss(self(b), b), (x,),
                                    epochs, lr, batch_size, self.random_state)
        return self

    def transform(self, images) -> np.ndarray:
        return encode(self, images)


class SupervisedCNN(nn.Module):
    """E4: pixel-supervised CNN on the centre crop; its 32-d penultimate layer is the feature.

    Centre ``crop``×``crop`` → conv 3×3 (16) → conv 3×3 s2 (32) → conv 3×3 s2 (32), ReLU,
    global max-pool → MLP 32 → linear output (standardized target).  Adam, MSE.

    Parameters
    ----------
    crop : int, default 32
    hidden : int, default 32
    random_state : int, default 0
        Seed of the initial weights and of the batch order.
    seed : int, optional
        Deprecated alias of ``random_state``.
    """

    def __init__(self, crop: int = 32, hidden: int = 32, random_state: int = 0,
                 seed: int | None = None):
        super().__init__()
        self.crop = check_int(crop, "crop", min_value=4)
        self.random_state = renamed_seed(random_state, seed, "SupervisedCNN")
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU())
        self.mlp = nn.Sequential(nn.Linear(32, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 1)
        _seeded_init(self, self.random_state)

    def _centre(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        if h < self.crop or w < self.crop:
            raise ValueError(f"images are {h}×{w}; crop={self.crop} needs larger frames")
        top, left = (h - self.crop) // 2, (w - self.crop) // 2
        return x[..., top:top + self.crop, left:left + self.crop]

    def encode(self, x: torch.Tensor) -> torch.Tensor:    # (b, 1, H, W) -> (b, hidden)
        return self.mlp(self.features(self._centre(x)).amax(dim=(2, 3)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:   # (b, 1, H, W) -> (b,)
        return self.head(self.encode(x)).squeeze(-1)

    def fit(self, images, y, epochs: int = 10, lr: float = 2e-3,
            batch_size: int = 64) -> "SupervisedCNN":
        """Train on ``y`` (standardized internally); stores ``loss_history_``."""
        images = _images(images)
        y = check_finite_array(y, "y", ndim=1)
        check_same_length(images=images, y=y)
        scale = y.std() if y.std() > 0 else 1.0
        target = torch.as_tensor((y - y.mean()) / scale, dtype=torch.float32)
        x = normalize_bt(images)
        self.loss_history_ = _train(self, lambda b, t: nn.functional.mse_loss(self(b), t),
                                    (x, target), epochs, lr, batch_size, self.random_state)
        return self

    def transform(self, images) -> np.ndarray:
        return encode(self, images)


class EyeFeatures(TransformerMixin, BaseEstimator):
    """E5 (physics oracle): Dvorak-style hand features of an IR frame.

    Features: max BT within ``eye_radius`` px of the image centre (eye warmth), mean and
    min BT in the ``ring`` (px) annulus (cloud-top temperature), fraction of pixels below
    220 K (cold area) and mean BT (environment).

    Examples
    --------
    >>> EyeFeatures().fit_transform(np.full((2, 40, 40), 250.0)).shape
    (2, 5)
    """

    def __init__(self, eye_radius: float = 6.0, ring: tuple = (8.0, 16.0)):
        self.eye_radius = eye_radius
        self.ring = ring

    def fit(self, images, y=None):
        self.n_features_out_ = 5
        return self

    def transform(self, images) -> np.ndarray:
        X = _images(images)
        h, w = X.shape[1:]
        yy, xx = np.mgrid[0:h, 0:w]
        r = np.hypot(yy - (h - 1) / 2, xx - (w - 1) / 2)
        eye = r <= self.eye_radius
        ring = (r >= self.ring[0]) & (r <= self.ring[1])
        if not eye.any() or not ring.any():
            raise ValueError(f"eye_radius={self.eye_radius} / ring={self.ring} select no pixels "
                             f"in {h}×{w} frames")
        flat = X.reshape(len(X), -1)
        return np.stack([
            flat[:, eye.ravel()].max(axis=1), flat[:, ring.ravel()].mean(axis=1),
            flat[:, ring.ravel()].min(axis=1), (flat < COLD_CLOUD_K).mean(axis=1),
            flat.mean(axis=1)], axis=1).astype(np.float64)
