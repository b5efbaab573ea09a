"""Model-X Gaussian knockoffs and the derandomised (PFER-type) knockoff selection of SGShift-K.

The default S-matrix is the equicorrelated one, computed here in numpy (no cvxpy); the
``"mvr"``, ``"sdp"`` and ``"maxent"`` S-matrices come from :mod:`knockpy` when installed.
Sampling is always done here with a passed ``numpy.random.Generator`` so that runs are
deterministic given a seed (knockpy's own sampler draws from the global numpy state).

References
----------
Candès, Fan, Janson & Lv (2018), "Panning for gold: model-X knockoffs", JRSS-B.
Ren, Wei & Candès (2023), "Derandomizing knockoffs", JASA.
Lyu, Turcan & Wilder, "Explaining Concept Shift with Interpretable Feature Attribution",
arXiv 2505.20634.

Examples
--------
>>> import numpy as np
>>> from icml26.sgshift.knockoffs import GaussianKnockoffSampler
>>> X = np.random.default_rng(0).normal(size=(300, 4))
>>> sampler = GaussianKnockoffSampler().fit(X)
>>> sampler.sample(X, np.random.default_rng(1)).shape
(300, 4)
"""

from __future__ import annotations

import numpy as np
from sklearn.covariance import LedoitWolf

from ..core.validation import check_choice, check_int, check_matrix

__all__ = ["KNOCKOFF_METHODS", "equicorrelated_s", "GaussianKnockoffSampler",
           "knockoff_w", "derandomized_selection_set"]

KNOCKOFF_METHODS = ("equicorrelated", "mvr", "sdp", "maxent")
_JITTER = 1e-6  # keeps the knockoff conditional covariance positive definite


def equicorrelated_s(corr: np.ndarray) -> np.ndarray:
    """Equicorrelated S for a correlation matrix: s_j = min(2 lambda_min, 1) - jitter."""
    lam_min = float(np.linalg.eigvalsh(corr).min())
    s = max(min(2.0 * lam_min, 1.0) - _JITTER, 0.0)
    return np.full(corr.shape[0], s)


def _psd_sqrt(matrix: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh((matrix + matrix.T) / 2)
    return vecs * np.sqrt(np.clip(vals, 0.0, None))


class GaussianKnockoffSampler:
    """Second-order Gaussian model-X knockoffs with a Ledoit–Wolf covariance.

    Parameters
    ----------
    method : {"equicorrelated", "mvr", "sdp", "maxent"}
        S-matrix construction. ``"equicorrelated"`` is computed in numpy; the others
        call ``knockpy.smatrix.compute_smatrix`` (optional dependency, pulls cvxpy).

    Attributes
    ----------
    mean_ : ndarray (p,)
    covariance_ : ndarray (p, p)
        Ledoit–Wolf estimate; if its smallest eigenvalue is below 1e-6 a jitter is added.
    s_ : ndarray (p,)
        Diagonal of S on the covariance scale.

    Notes
    -----
    X̃ | X ~ N(X - (X - mu) Sigma^{-1} S, 2S - S Sigma^{-1} S). Gaussian knockoffs are
    exact only for Gaussian X; for binary or discrete features they are approximate.

    References
    ----------
    Candès, Fan, Janson & Lv, "Panning for Gold: 'Model-X' Knockoffs for High Dimensional
    Controlled Variable Selection", JRSS-B 80(3), 2018; Ledoit & Wolf, "A well-conditioned
    estimator for large-dimensional covariance matrices", Journal of Multivariate Analysis 88,
    2004. Used by Lyu, Turcan & Wilder, "Explaining Concept Shift with Interpretable Feature
    Attribution", arXiv:2505.20634.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 4))
    >>> sampler = GaussianKnockoffSampler(method="equicorrelated").fit(X)
    >>> X_tilde = sampler.sample(X, np.random.default_rng(1))
    >>> X_tilde.shape, sampler.s_.shape
    ((200, 4), (4,))
    """

    def __init__(self, method: str = "equicorrelated"):
        self.method = method

    def fit(self, X) -> "GaussianKnockoffSampler":
        check_choice(self.method, "knockoff_method", KNOCKOFF_METHODS)
        X = check_matrix(X, "X", min_samples=3)
        self.mean_ = X.mean(axis=0)
        cov = LedoitWolf().fit(X).covariance_
        if np.linalg.eigvalsh(cov).min() < _JITTER:
            cov = cov + _JITTER * np.eye(cov.shape[0])
        self.covariance_ = cov
        sd = np.sqrt(np.diag(cov))
        corr = cov / np.outer(sd, sd)
        if self.method == "equicorrelated":
            s_corr = equicorrelated_s(corr)
        else:
            try:
                from knockpy.smatrix import compute_smatrix
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise ImportError(f"knockoff_method={self.method!r} needs knockpy "
                                  "(pip install 'icml26[sgshift]')") from exc
            s_corr = np.diag(compute_smatrix(corr, method=self.method))
        S = np.diag(s_corr * sd * sd)
        sigma_inv_s = np.linalg.solve(cov, S)
        self.s_ = np.diag(S).copy()
        self._shrink = np.eye(cov.shape[0]) - sigma_inv_s       # X̃ mean = mu + (X-mu)(I - Σ⁻¹S)
        self._cond_sqrt = _psd_sqrt(2 * S - S @ sigma_inv_s)
        return self

    def sample(self, X, rng: np.random.Generator) -> np.ndarray:
        """One knockoff copy of ``X`` (n, p)."""
        X = np.asarray(X, dtype=float)
        centred = X - self.mean_
        noise = rng.standard_normal(X.shape) @ self._cond_sqrt.T
        return self.mean_ + centred @ self._shrink + noise


def knockoff_w(z: np.ndarray) -> np.ndarray:
    """Lasso-coefficient-difference statistic W_j = |Z_j| - |Z_{j+p}| for Z of length 2p."""
    z = np.asarray(z, dtype=float)
    if z.ndim != 1 or z.size % 2:
        raise ValueError(f"z must be 1-D with an even length 2p, got shape {z.shape}")
    p = z.size // 2
    return np.abs(z[:p]) - np.abs(z[p:])


def derandomized_selection_set(w: np.ndarray, v: int = 3) -> np.ndarray:
    """One run's selection of the PFER-controlling knockoff filter (Ren, Wei & Candès).

    If fewer than ``v`` statistics are negative, select every positive one; otherwise sort
    by |W| (descending) and keep the positive W ranked before the v-th negative one.
    """
    check_int(v, "v", min_value=1)
    w = np.asarray(w, dtype=float)
    if np.sum(w < 0) < v:
        return np.flatnonzero(w > 0)
    order = np.argsort(-np.abs(w), kind="stable")
    ranked = w[order]
    cutoff = np.flatnonzero(ranked < 0)[v - 1]
    return np.sort(order[:cutoff][ranked[:cutoff] > 0])
