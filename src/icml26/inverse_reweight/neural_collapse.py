"""Neural Collapse (NC1/NC2/NC3) geometry metrics and the loss imbalance coefficient.

Definitions follow Papyan, Han & Donoho (PNAS 2020) and Zhu et al. (NeurIPS 2021), with
the global mean taken as the mean of the class means (robust to class imbalance), as
used to read the NC claims of Wang et al., ICML 2026.
"""

from __future__ import annotations

import numpy as np

from icml26.core.validation import check_int, check_matrix, check_same_length, check_vector

__all__ = ["nc_metrics", "etf_distance", "per_class_mean_loss", "loss_imbalance_coefficient"]

PINV_RCOND = 1e-6


def _labels(labels, name: str = "labels") -> np.ndarray:
    arr = check_vector(labels, name, dtype=None)
    if not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
        raise TypeError(f"{name} must hold integer class indices, got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.equal(np.mod(arr.astype(float), 1), 0)):
            raise TypeError(f"{name} must hold integer class indices, got dtype {arr.dtype}")
        arr = arr.astype(np.int64)
    if arr.min() < 0:
        raise ValueError(f"{name} must be >= 0, got {arr.min()}")
    return arr


def etf_distance(rows: np.ndarray) -> float:
    """``‖ M Mᵀ/‖M Mᵀ‖_F − (I − 11ᵀ/C)/√(C−1) ‖_F``: distance of the Gram of ``rows`` to a
    simplex ETF's (0 for a simplex ETF up to scale and rotation).

    Examples
    --------
    >>> etf = np.eye(3) - 1 / 3
    >>> round(etf_distance(etf), 6)
    0.0
    """
    rows = check_matrix(rows, "rows")
    n = rows.shape[0]
    if n < 2:
        raise ValueError(f"rows must have at least 2 rows (classes), got {n}")
    gram = rows @ rows.T
    norm = np.linalg.norm(gram)
    if norm == 0:
        raise ValueError("rows are all zero; the ETF distance is undefined")
    etf = (np.eye(n) - np.ones((n, n)) / n) / np.sqrt(n - 1)
    return float(np.linalg.norm(gram / norm - etf))


def _equinorm(rows: np.ndarray) -> float:
    norms = np.linalg.norm(rows, axis=1)
    return float(norms.std() / norms.mean())


def _equiangular(rows: np.ndarray) -> float:
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    cos = unit @ unit.T
    return float(cos[~np.eye(len(rows), dtype=bool)].std())


def nc_metrics(features, labels, classifier_weight=None) -> dict:
    """Neural-Collapse metrics of penultimate ``features`` and the classifier.

    Parameters
    ----------
    features : array-like of shape (N, d)
        Penultimate features ``h_i`` (training set).
    labels : array-like of shape (N,)
        Integer class labels; metrics use the classes that occur (at least 2).
    classifier_weight : array-like of shape (C, d), optional
        Classifier rows ``v_c``, indexed by class label.

    Returns
    -------
    dict
        ``nc1 = tr(Σ_W Σ_B^†)/C``; ``nc2_means`` (ETF distance of centred means),
        ``equinorm_means``, ``equiangular_means``; with a classifier also
        ``nc2_classifier``, ``equinorm_classifier``, ``equiangular_classifier`` and
        ``nc3 = ‖V/‖V‖_F − M̄/‖M̄‖_F‖_F²``; plus ``n_classes``.

    Notes
    -----
    ``μ_c`` class means, ``μ_G = mean_c μ_c``, ``Σ_W = (1/N) Σ_i (h_i−μ_{y_i})(h_i−μ_{y_i})ᵀ``,
    ``Σ_B = (1/C) Σ_c (μ_c−μ_G)(μ_c−μ_G)ᵀ``; pseudo-inverse with ``rcond=1e-6``.
    ``equinorm`` = std/mean of row norms; ``equiangular`` = std of off-diagonal cosines.

    Examples
    --------
    >>> means = np.eye(3) - 1 / 3                       # a simplex ETF
    >>> out = nc_metrics(np.repeat(means, 4, axis=0), np.repeat([0, 1, 2], 4), means)
    >>> round(out["nc1"], 6), round(out["nc2_means"], 6), round(out["nc3"], 6)
    (0.0, 0.0, 0.0)
    """
    h = check_matrix(features, "features")
    y = _labels(labels)
    check_same_length(features=h, labels=y)
    classes = np.unique(y)
    n_classes = len(classes)
    if n_classes < 2:
        raise ValueError(f"labels must contain at least 2 classes, got {n_classes}")
    index = np.searchsorted(classes, y)
    counts = np.bincount(index, minlength=n_classes)
    means = np.zeros((n_classes, h.shape[1]))
    np.add.at(means, index, h)
    means /= counts[:, None]
    centred = means - means.mean(axis=0)
    within = h - means[index]
    sigma_w = within.T @ within / h.shape[0]
    sigma_b = centred.T @ centred / n_classes
    out = {
        "n_classes": int(n_classes),
        "nc1": float(np.trace(sigma_w @ np.linalg.pinv(sigma_b, rcond=PINV_RCOND)) / n_classes),
        "nc2_means": etf_distance(centred),
        "equinorm_means": _equinorm(centred),
        "equiangular_means": _equiangular(centred),
    }
    if classifier_weight is not None:
        weight = check_matrix(classifier_weight, "classifier_weight")
        if weight.shape[1] != h.shape[1]:
            raise ValueError(f"classifier_weight has {weight.shape[1]} columns but features "
                             f"have {h.shape[1]}")
        if weight.shape[0] <= classes.max():
            raise ValueError(f"classifier_weight has {weight.shape[0]} rows but labels go up "
                             f"to {classes.max()}")
        rows = weight[classes]
        out.update({
            "nc2_classifier": etf_distance(rows),
            "equinorm_classifier": _equinorm(rows),
            "equiangular_classifier": _equiangular(rows),
            "nc3": float(np.linalg.norm(rows / np.linalg.norm(rows)
                                        - centred / np.linalg.norm(centred)) ** 2),
        })
    return out


def per_class_mean_loss(per_sample_loss, labels, n_classes: int) -> np.ndarray:
    """Mean loss of each class, ``NaN`` for classes without samples.

    Examples
    --------
    >>> per_class_mean_loss([1.0, 3.0, 2.0], [0, 0, 1], 3)
    array([ 2.,  2., nan])
    """
    loss = check_vector(per_sample_loss, "per_sample_loss")
    y = _labels(labels)
    check_same_length(per_sample_loss=loss, labels=y)
    n_classes = check_int(n_classes, "n_classes", min_value=1)
    if y.max() >= n_classes:
        raise ValueError(f"labels must be < n_classes={n_classes}, got {y.max()}")
    counts = np.bincount(y, minlength=n_classes)
    sums = np.bincount(y, weights=loss, minlength=n_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def loss_imbalance_coefficient(per_sample_loss, labels, n_classes: int,
                               return_ratio: bool = False):
    """Loss imbalance coefficient (LIC): coefficient of variation of per-class mean loss.

    ``LIC = std_c(L̄_c) / mean_c(L̄_c)`` (population std) over the classes with samples.
    *Resolution (not from the paper)*: the paper's exact definition could not be
    retrieved; 0 means every class has the same mean loss (the NC ideal).

    Parameters
    ----------
    per_sample_loss : array-like of shape (N,)
        Unweighted per-sample losses (e.g. training CE in eval mode).
    labels : array-like of shape (N,)
    n_classes : int
    return_ratio : bool, default False
        Also return ``max_c L̄_c / min_c L̄_c``.

    Examples
    --------
    >>> loss_imbalance_coefficient([1.0, 3.0], [0, 1], 2)
    0.5
    """
    means = per_class_mean_loss(per_sample_loss, labels, n_classes)
    means = means[np.isfinite(means)]
    if means.mean() <= 0:
        raise ValueError("per_sample_loss has zero mean over classes; the LIC is undefined")
    lic = float(means.std() / means.mean())
    if not return_ratio:
        return lic
    ratio = float(means.max() / means.min()) if means.min() > 0 else float("inf")
    return lic, ratio
