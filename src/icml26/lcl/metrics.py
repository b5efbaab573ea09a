"""Lineage metrics of an embedding: kNN clone recovery, unseen-lineage purity, clone separation
(Calinski-Harabasz) and cell-cycle leakage."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.metrics import calinski_harabasz_score, r2_score
from sklearn.model_selection import KFold, cross_val_predict
from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors

from icml26.core.validation import check_finite_array, check_int

from .fate import kl_composition

__all__ = ["kl_composition", "knn_clone_accuracy", "knn_clone_containment", "knn_lineage_purity",
           "cycle_r2", "clone_calinski_harabasz"]


def _embedding(Z, name):
    return check_finite_array(Z, name, ndim=2)


def _labels(y, n, name):
    y = np.asarray(y, dtype=object).ravel().astype(str)
    if y.size != n:
        raise ValueError(f"{name} must have {n} labels (one per row), got {y.size}")
    return y


def _train_test(Ztr, ytr, Zte, yte, k):
    Ztr, Zte = _embedding(Ztr, "Ztr"), _embedding(Zte, "Zte")
    if Ztr.shape[1] != Zte.shape[1]:
        raise ValueError(f"Ztr and Zte must have the same width, got {Ztr.shape[1]} and {Zte.shape[1]}")
    ytr, yte = _labels(ytr, Ztr.shape[0], "ytr"), _labels(yte, Zte.shape[0], "yte")
    k = check_int(k, "k", min_value=1, max_value=Ztr.shape[0])
    return Ztr, ytr, Zte, yte, k


def knn_clone_accuracy(Ztr, ytr, Zte, yte, k: int = 30, adjusted: bool = False) -> float:
    """Share of test cells whose clone the k-NN vote over training cells recovers.

    Parameters
    ----------
    Ztr, ytr : embeddings and clone labels of the training cells
    Zte, yte : embeddings and clone labels of held-out cells of the same clones
    k : int
        Neighbours (the paper: 30).
    adjusted : bool
        Predict ``argmax_c (local frequency of c - global frequency of c)`` instead of the
        plain vote, which favours large clones less.

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> knn_clone_accuracy(Z, ["a", "a", "b", "b"], np.array([[0.05], [5.05]]), ["a", "b"], k=2)
    1.0
    """
    Ztr, ytr, Zte, yte, k = _train_test(Ztr, ytr, Zte, yte, k)
    knn = KNeighborsClassifier(n_neighbors=k).fit(Ztr, ytr)
    if not adjusted:
        return float(np.mean(knn.predict(Zte) == yte))
    local = knn.predict_proba(Zte)
    classes = knn.classes_
    global_freq = np.array([np.mean(ytr == c) for c in classes])
    return float(np.mean(classes[np.argmax(local - global_freq, axis=1)] == yte))


def knn_clone_containment(Ztr, ytr, Zte, yte, k: int = 30) -> tuple[float, float]:
    """Share of test cells whose clone appears among their k training neighbours, and the mean
    rank (1 = nearest) of its first appearance among those found."""
    Ztr, ytr, Zte, yte, k = _train_test(Ztr, ytr, Zte, yte, k)
    _, idx = NearestNeighbors(n_neighbors=k).fit(Ztr).kneighbors(Zte)
    hits = ytr[idx] == yte[:, None]
    found = hits.any(axis=1)
    ranks = np.argmax(hits, axis=1) + 1
    return float(found.mean()), float(ranks[found].mean()) if found.any() else float("nan")


def knn_lineage_purity(Z, clones, k: int = 5) -> float:
    """Unseen-lineage purity: mean share of each cell's k nearest cells (itself included) that
    share its clone, computed among the given cells only.

    Examples
    --------
    >>> import numpy as np
    >>> knn_lineage_purity(np.array([[0.0], [0.1], [9.0], [9.1]]), [1, 1, 2, 2], k=2)
    1.0
    """
    Z = _embedding(Z, "Z")
    clones = _labels(clones, Z.shape[0], "clones")
    k = check_int(k, "k", min_value=1, max_value=Z.shape[0])
    _, idx = NearestNeighbors(n_neighbors=k).fit(Z).kneighbors(Z)
    return float(np.mean(clones[idx] == clones[:, None]))


def clone_calinski_harabasz(Z, clones) -> float:
    """Calinski-Harabasz index of the embedding against the clone labels (higher: clones
    better separated)."""
    Z = _embedding(Z, "Z")
    return float(calinski_harabasz_score(Z, _labels(clones, Z.shape[0], "clones")))


def cycle_r2(Z, phase, cv: int = 5, seed: int = 0) -> float:
    """How much cell-cycle phase a linear read-out recovers from an embedding.

    R^2 of (cos phi, sin phi) predicted from Z by linear regression, averaged over the two
    targets, out of fold (``cv``-fold cross-validation).

    Resolution (not from the paper): the out-of-fold R^2 is used because the in-sample R^2 of a
    d-dimensional regression on n cells is inflated by about d / n even for an embedding
    without any cycle signal.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> phi = rng.uniform(0, 2 * np.pi, 300)
    >>> cycle_r2(np.c_[np.cos(phi), np.sin(phi)], phi) > 0.99
    True
    """
    Z = _embedding(Z, "Z")
    phase = check_finite_array(phase, "phase", ndim=1)
    if phase.size != Z.shape[0]:
        raise ValueError(f"phase must have {Z.shape[0]} values (one per row of Z), got {phase.size}")
    check_int(cv, "cv", min_value=2, max_value=Z.shape[0])
    targets = np.column_stack([np.cos(phase), np.sin(phase)])
    folds = KFold(n_splits=cv, shuffle=True, random_state=seed)
    pred = cross_val_predict(LinearRegression(), Z, targets, cv=folds)
    return float(r2_score(targets, pred, multioutput="uniform_average"))
