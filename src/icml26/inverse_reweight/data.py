"""Long-tailed data: an exponential-profile subsampler for any (X, y), MNIST-1D-LT built
offline with the ``mnist1d`` package, and a synthetic Gaussian long-tailed generator."""

from __future__ import annotations

import functools
import random

import numpy as np

from icml26.core.validation import (check_choice, check_int, check_random_state,
                                    check_same_length, check_scalar_in, check_vector)

__all__ = ["long_tail_counts", "make_long_tailed", "load_mnist1d", "load_mnist1d_lt",
           "make_gaussian_lt"]

MNIST1D_SEED = 42  # the seed of the standard MNIST-1D benchmark (mnist1d defaults)


def long_tail_counts(n_max: int, n_classes: int, imbalance_ratio: float,
                     profile: str = "exp") -> np.ndarray:
    """Per-class counts of a long-tailed profile, head class first.

    ``exp``: ``n_c = floor(n_max · ρ^(−c/(C−1)))`` (Cao et al. 2019, official ILR code);
    ``step``: the first half of the classes keep ``n_max``, the rest ``floor(n_max/ρ)``.

    Examples
    --------
    >>> long_tail_counts(1600, 10, 100).tolist()
    [1600, 959, 575, 344, 206, 123, 74, 44, 26, 16]
    """
    n_max = check_int(n_max, "n_max", min_value=1)
    n_classes = check_int(n_classes, "n_classes", min_value=2)
    rho = check_scalar_in(imbalance_ratio, "imbalance_ratio", low=1.0)
    check_choice(profile, "profile", ("exp", "step"))
    c = np.arange(n_classes)
    if profile == "exp":
        counts = np.floor(n_max * rho ** (-c / (n_classes - 1)) + 1e-9)
    else:
        counts = np.where(c < n_classes // 2, n_max, np.floor(n_max / rho + 1e-9))
    counts = counts.astype(np.int64)
    if counts.min() < 1:
        raise ValueError(f"imbalance_ratio={rho:g} leaves a class with 0 samples at "
                         f"n_max={n_max}; use a smaller ratio or more samples")
    return counts


def make_long_tailed(X, y, imbalance_ratio: float, profile: str = "exp", seed=0,
                     n_max: int | None = None):
    """Subsample ``(X, y)`` to a long-tailed class profile.

    Class ``c`` (in label order, so class 0 is the head) keeps ``n_c`` of its samples,
    drawn without replacement with ``seed``.

    Parameters
    ----------
    X : array-like of shape (N, ...)
    y : array-like of shape (N,)
        Integer labels ``0..C-1``.
    imbalance_ratio : float
        ``ρ = n_max / n_min`` (>= 1).
    profile : {"exp", "step"}, default "exp"
    seed : int or numpy Generator/RandomState, default 0
    n_max : int, optional
        Head count (default: the size of the smallest class, so every class can supply
        its quota).

    Returns
    -------
    X_lt, y_lt : arrays
        The subsample (original order preserved).
    counts : ndarray of shape (C,)

    Examples
    --------
    >>> X = np.arange(40.0).reshape(20, 2); y = np.repeat([0, 1], 10)
    >>> _, y_lt, counts = make_long_tailed(X, y, imbalance_ratio=5)
    >>> counts.tolist()
    [10, 2]
    """
    X = np.asarray(X)
    y = check_vector(y, "y", dtype=None)
    if not np.issubdtype(y.dtype, np.integer):
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    check_same_length(X=X, y=y)
    if y.min() < 0:
        raise ValueError(f"y must be >= 0, got {y.min()}")
    n_classes = int(y.max()) + 1
    available = np.bincount(y, minlength=n_classes)
    n_max = int(available.min()) if n_max is None else check_int(n_max, "n_max", min_value=1)
    counts = long_tail_counts(n_max, n_classes, imbalance_ratio, profile)
    short = np.flatnonzero(available < counts)
    if short.size:
        c = int(short[0])
        raise ValueError(f"class {c} has {available[c]} samples but the profile needs "
                         f"{counts[c]}; lower n_max")
    rng = check_random_state(seed)
    keep = np.concatenate([rng.choice(np.flatnonzero(y == c), counts[c], replace=False)
                           for c in range(n_classes)])
    keep.sort()
    return X[keep], y[keep], counts


@functools.lru_cache(maxsize=4)
def _mnist1d_cached(num_samples: int, dataset_seed: int):
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples = num_samples
    args.seed = dataset_seed
    # make_dataset seeds the global numpy/random generators; restore them afterwards.
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        data = make_dataset(args)
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
    out = (data["x"].astype(np.float32), data["y"].astype(np.int64),
           data["x_test"].astype(np.float32), data["y_test"].astype(np.int64))
    for arr in out:
        arr.setflags(write=False)
    return out


def load_mnist1d(num_samples: int = 20000, dataset_seed: int = MNIST1D_SEED):
    """The MNIST-1D benchmark generated locally by ``mnist1d.data.make_dataset``.

    No download: the signals are built from the package's hard-coded templates (80/20
    train/test split, 10 classes, length 40). Cached per process.

    Returns
    -------
    X_train, y_train, X_test, y_test : read-only arrays

    References
    ----------
    Greydanus & Kobak. Scaling down deep learning with MNIST-1D. ICML 2024.
    """
    num_samples = check_int(num_samples, "num_samples", min_value=100)
    dataset_seed = check_int(dataset_seed, "dataset_seed", min_value=0)
    return _mnist1d_cached(num_samples, dataset_seed)


def load_mnist1d_lt(imbalance_ratio: float, num_samples: int = 20000, seed=0,
                    profile: str = "exp", dataset_seed: int = MNIST1D_SEED):
    """Long-tailed MNIST-1D (offline): LT training set, balanced test set.

    The training split (≈ ``0.08 · num_samples`` per class) is subsampled to the profile
    with head count ``n_max`` = the smallest class size, using ``seed``.

    Returns
    -------
    X_train, y_train, X_test, y_test, counts

    Examples
    --------
    >>> X, y, Xt, yt, counts = load_mnist1d_lt(100, num_samples=2000)  # doctest: +SKIP
    """
    X, y, X_test, y_test = load_mnist1d(num_samples, dataset_seed)
    X_lt, y_lt, counts = make_long_tailed(X, y, imbalance_ratio, profile=profile, seed=seed)
    return X_lt, y_lt, np.array(X_test), np.array(y_test), counts


def make_gaussian_lt(n_classes: int = 10, n_features: int = 32, n_max: int = 500,
                     imbalance_ratio: float = 100.0, n_test_per_class: int = 200,
                     separation: float = 2.5, seed=0):
    """Synthetic long-tailed Gaussian classes with known Bayes classifier.

    Generative process: class means ``μ_c = separation · e_c`` projected to ``R^d`` by a
    random orthonormal map (a scaled, rotated simplex after centring); samples
    ``x ~ N(μ_c, I_d)``; training counts from the exponential profile, test set balanced.
    Under equal priors the Bayes-optimal balanced classifier is the nearest mean.

    Returns
    -------
    X_train, y_train, X_test, y_test, means

    Examples
    --------
    >>> X, y, Xt, yt, means = make_gaussian_lt(n_classes=3, n_features=4, n_max=20,
    ...                                        imbalance_ratio=10)
    >>> np.bincount(y).tolist(), means.shape
    ([20, 6, 2], (3, 4))
    """
    n_classes = check_int(n_classes, "n_classes", min_value=2)
    n_features = check_int(n_features, "n_features", min_value=n_classes)
    n_test = check_int(n_test_per_class, "n_test_per_class", min_value=1)
    separation = check_scalar_in(separation, "separation", low=0.0, low_inclusive=False)
    rng = check_random_state(seed)
    counts = long_tail_counts(n_max, n_classes, imbalance_ratio)
    basis, _ = np.linalg.qr(rng.standard_normal((n_features, n_classes)))
    means = separation * basis.T  # (C, d): orthogonal, equal-norm directions

    def draw(per_class):
        y = np.repeat(np.arange(n_classes), per_class)
        return (means[y] + rng.standard_normal((len(y), n_features))).astype(np.float32), y

    X, y = draw(counts)
    X_test, y_test = draw(np.full(n_classes, n_test))
    return X, y, X_test, y_test, means

