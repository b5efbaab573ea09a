"""The ρ-weighted symmetrized policy Laplacian, its D-orthonormal eigenvectors, and spectral features.

Giorgi et al., *Impact of Connectivity on Laplacian Representations in RL*, ICML 2026.

Notes
-----
For a policy's transition matrix P with stationary distribution ρ and ``D = diag(ρ)``, the
edge weights are ``W = ½(DP + PᵀD)``; since ρᵀP = ρᵀ, ``W1 = ρ``, so the degree matrix is
exactly D and ``L = D − W`` is symmetric PSD with ``L1 = 0``. The spectral problem is the
generalized symmetric ``Lu = λDu`` with ``UᵀDU = I``; equivalently the normalized
``N = I − D^{-1/2}WD^{-1/2}`` (``φ = D^{1/2}u``) or the random-walk form ``I − ½(P + P*)`` with
the time reversal ``P* = D^{-1}PᵀD``. *Resolution (not from the paper):* this is our reading of
the paper's "more direct, equivalent formulation"; the paper's exact text was not available.

The common misreading takes ``P*`` as the plain transpose: ``I − ½(P + Pᵀ)``. Under a
non-uniform ρ it does not annihilate constants and its eigenvectors are not D-orthogonal; it is
provided only as :func:`misread_laplacian`, the negative control.
"""

from __future__ import annotations

from typing import Any

import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh, splu
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from icml26.core.validation import check_choice, check_int

from .mdp import check_transition_matrix, stationary_distribution

__all__ = ["symmetrized_laplacian", "misread_laplacian", "normalized_laplacian", "edge_weights",
           "laplacian_eigenpairs", "fiedler_value", "SpectralFeatures", "LaplacianFeatures",
           "LinearValueApproximator", "check_distribution", "DENSE_MAX_STATES",
           "SPARSE_MAX_K_FRACTION"]

#: ``method="auto"`` uses sparse shift-invert ``eigsh`` above this many states when
#: ``k < SPARSE_MAX_K_FRACTION · n`` (and dense ``eigh`` otherwise). Measured on open rooms, one
#: thread, CPU seconds (#42): dense/sparse time 0.36 at n = 144, 0.83 at 225, 1.2–1.3 at 324,
#: 2.1–2.4 at 400, 6.9–8.9 at 900 for k ≤ 9; for k = 33 sparse wins only from n ≈ 400. (It was
#: 2000: up to 6.7× slower than eigsh at n = 900.)
DENSE_MAX_STATES = 300
#: See :data:`DENSE_MAX_STATES`: sparse only for ``k`` below this fraction of the states.
SPARSE_MAX_K_FRACTION = 0.1
#: Relative tolerance below which λ_k and λ_{k+1} count as one repeated eigenvalue.
DEGENERACY_TOL = 1e-10
#: Shift for shift-invert eigsh: just below the smallest eigenvalue 0 of a PSD Laplacian.
EIGSH_SIGMA = -1e-3


def check_distribution(rho: Any, n: int, name: str = "rho") -> np.ndarray:
    """A positive probability vector of length n."""
    rho = np.asarray(rho, dtype=np.float64)
    if rho.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {rho.shape}")
    if not np.all(np.isfinite(rho)) or np.any(rho <= 0):
        raise ValueError(f"{name} must be finite and > 0 in every state")
    if abs(rho.sum() - 1.0) > 1e-8:
        raise ValueError(f"{name} must sum to 1, got {rho.sum():.10g}")
    return rho


def _weights_and_rho(P: Any, rho: Any = None) -> tuple[sp.csr_matrix, np.ndarray, sp.csr_matrix]:
    M = check_transition_matrix(P)
    rho = stationary_distribution(M) if rho is None else check_distribution(rho, M.shape[0])
    return M, rho, edge_weights(M, rho)


def edge_weights(P: Any, rho: Any) -> sp.csr_matrix:
    """``W = ½(DP + PᵀD)`` (symmetric, non-negative)."""
    M = check_transition_matrix(P)
    D = sp.diags(np.asarray(rho, dtype=np.float64))
    DP = D @ M
    return ((DP + DP.T) * 0.5).tocsr()


def normalized_laplacian(W: Any, degree: Any = None) -> np.ndarray | sp.csr_matrix:
    """``N = I − D^{-1/2} W D^{-1/2}`` with ``D = diag(degree)`` (default: the row sums of W)."""
    sparse = sp.issparse(W)
    Wm = sp.csr_matrix(W, dtype=np.float64) if sparse else np.asarray(W, dtype=np.float64)
    d = np.asarray(Wm.sum(axis=1)).ravel() if degree is None else np.asarray(degree, np.float64)
    if np.any(d <= 0):
        raise ValueError("every state needs a positive degree (an isolated or unvisited state?)")
    s = 1.0 / np.sqrt(d)
    if sparse:
        S = sp.diags(s)
        return (sp.identity(Wm.shape[0], format="csr") - S @ Wm @ S).tocsr()
    return np.eye(Wm.shape[0]) - s[:, None] * Wm * s[None, :]


def symmetrized_laplacian(P: Any, rho: Any = None, form: str = "generalized") -> sp.csr_matrix:
    """The symmetrized MDP Laplacian of a policy's chain.

    Parameters
    ----------
    P : (n, n) array or sparse matrix
        Row-stochastic transition matrix (irreducible).
    rho : (n,) array, optional
        Stationary distribution (computed when omitted).
    form : {"generalized", "normalized", "random_walk"}
        ``"generalized"``: ``L = D − W`` (pair it with ``D = diag(ρ)``: ``Lu = λDu``);
        ``"normalized"``: ``N = I − D^{-1/2}WD^{-1/2}``; ``"random_walk"``:
        ``I − ½(P + P*)`` with ``P* = D^{-1}PᵀD``. All three share the eigenvalues.

    Returns
    -------
    scipy.sparse.csr_matrix

    Examples
    --------
    >>> from icml26.spectral_rl import GridWorld
    >>> P = GridWorld.two_rooms(5, 7, door=1).transition("biased")
    >>> L = symmetrized_laplacian(P)
    >>> float(abs(L @ np.ones(P.shape[0])).max()) < 1e-15
    True
    """
    check_choice(form, "form", ("generalized", "normalized", "random_walk"))
    M, rho, W = _weights_and_rho(P, rho)
    n = M.shape[0]
    if form == "generalized":
        return (sp.diags(rho) - W).tocsr()
    if form == "normalized":
        return normalized_laplacian(W, rho)
    reversal = sp.diags(1.0 / rho) @ M.T @ sp.diags(rho)
    return (sp.identity(n, format="csr") - 0.5 * (M + reversal)).tocsr()


def misread_laplacian(P: Any) -> sp.csr_matrix:
    """The misreading ``I − ½(P + Pᵀ)`` (time reversal taken as the plain transpose).

    Negative control only: with a non-uniform stationary distribution it does not annihilate
    constants (``‖(I − ½(P + Pᵀ))1‖ > 0``) and its eigenvectors are not D-orthogonal.
    """
    M = check_transition_matrix(P)
    return (sp.identity(M.shape[0], format="csr") - 0.5 * (M + M.T)).tocsr()


def _fix_signs(vectors: np.ndarray) -> np.ndarray:
    # Deterministic signs: the entry of largest magnitude of each eigenvector is positive.
    idx = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[idx, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs


def _shift_invert_eigsh(N: sp.csc_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``eigsh(N, k, sigma=EIGSH_SIGMA)`` with our own factorisation of ``N − σI``: SuperLU with
    the minimum-degree ordering of ``Nᵀ + N`` (1.5x faster than eigsh's default COLAMD on a
    60 x 60 grid, #42), and a fixed start vector, so a call is deterministic."""
    n = N.shape[0]
    lu = splu((N - EIGSH_SIGMA * sp.identity(n, format="csc")).tocsc(), permc_spec="MMD_AT_PLUS_A")
    op = LinearOperator((n, n), matvec=lu.solve, dtype=np.float64)
    v0 = np.random.default_rng(0).uniform(0.5, 1.5, n)
    return eigsh(N, k=k, sigma=EIGSH_SIGMA, which="LM", OPinv=op, v0=v0)


def symmetric_eigenpairs(N: Any, k: int | None = None, method: str = "auto"
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Smallest ``k`` (all when None) eigenpairs of a symmetric PSD matrix, ascending, Euclidean-orthonormal."""
    check_choice(method, "method", ("auto", "dense", "sparse"))
    n = N.shape[0]
    k = n if k is None else check_int(k, "k", min_value=1, max_value=n)
    use_sparse = method == "sparse" or (method == "auto" and n > DENSE_MAX_STATES
                                        and k < SPARSE_MAX_K_FRACTION * n and k < n - 1)
    if use_sparse:
        if k >= n - 1:
            raise ValueError(f"method='sparse' needs k < n - 1 = {n - 1}, got {k}")
        evals, evecs = _shift_invert_eigsh(sp.csc_matrix(N, dtype=np.float64), k)
        order = np.argsort(evals)
        evals, evecs = evals[order], evecs[:, order]
    else:
        dense = N.toarray() if sp.issparse(N) else np.asarray(N, dtype=np.float64)
        dense = 0.5 * (dense + dense.T)
        evals, evecs = scipy.linalg.eigh(dense, subset_by_index=[0, k - 1])
    evals = np.maximum(evals, 0.0)  # the operator is PSD: round-off below 0 is clipped
    return evals, _fix_signs(evecs)


def laplacian_eigenpairs(P: Any, rho: Any = None, k: int | None = None, method: str = "auto"
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigenpairs of ``Lu = λDu``: ``(eigenvalues, U, rho)`` with ``UᵀDU = I``, ascending λ.

    ``U[:, 0]`` is the constant vector. Computed through the normalized form
    (``U = D^{-1/2}Φ``) in float64; ``method="sparse"`` uses shift-invert ``eigsh``.
    """
    M, rho, W = _weights_and_rho(P, rho)
    evals, phi = symmetric_eigenpairs(normalized_laplacian(W, rho), k, method)
    U = phi / np.sqrt(rho)[:, None]
    return evals, U, rho


def fiedler_value(P: Any, rho: Any = None) -> float:
    """Algebraic connectivity λ₂ of the ρ-weighted symmetrized Laplacian."""
    M = check_transition_matrix(P)
    if M.shape[0] < 2:
        raise ValueError("the Fiedler value needs at least 2 states")
    evals, _, _ = laplacian_eigenpairs(M, rho, k=2)
    return float(evals[1])


class SpectralFeatures(TransformerMixin, BaseEstimator):
    """Laplacian (proto-value-style) state features: the ``n_components`` smallest eigenvectors.

    Parameters
    ----------
    n_components : int
        Number of features k (the constant eigenvector included).
    weighting : {"stationary", "uniform"}
        ``"stationary"``: the ρ-weighted operator above (the paper's object);
        ``"uniform"``: the same construction with uniform state weights
        (``W = (P + Pᵀ)/2n``, degrees ``W1``), a policy-graph baseline.
    method : {"auto", "dense", "sparse"}
        Eigen-solver: dense ``scipy.linalg.eigh`` or sparse shift-invert ``eigsh``.

    Attributes
    ----------
    eigenvalues_ : (k,) array
    components_ : (n_states, k) array
        Eigenvectors, orthonormal in the ``weights_`` inner product (``UᵀDU = I``).
    weights_ : (n_states,) array
        The state weights (ρ, or the empirical visitation when fitted on trajectories).
    n_states_ : int

    Examples
    --------
    >>> from icml26.spectral_rl import GridWorld
    >>> P = GridWorld.two_rooms(5, 7, door=1).transition("uniform")
    >>> feats = SpectralFeatures(n_components=3).fit(P)
    >>> feats.transform([0, 1]).shape
    (2, 3)

    References
    ----------
    Giorgi et al., ICML 2026; Mahadevan & Maggioni, JMLR 2007 (proto-value functions).
    """

    def __init__(self, n_components: int = 8, weighting: str = "stationary", method: str = "auto"):
        self.n_components = n_components
        self.weighting = weighting
        self.method = method

    def fit(self, X: Any, y: Any = None, rho: Any = None, n_states: int | None = None):
        """Fit on a transition matrix ``X = P`` or on trajectories ``X = (states, next_states)``.

        With trajectories, the operator is the count estimate of
        :func:`icml26.spectral_rl.estimate_laplacian_from_trajectories` (``n_states`` required).
        """
        from .estimation import count_weights  # local: estimation imports this module

        check_choice(self.weighting, "weighting", ("stationary", "uniform"))
        if isinstance(X, tuple):
            if n_states is None:
                raise ValueError("n_states is required when fitting on trajectories")
            if self.weighting != "stationary":
                raise ValueError("weighting='uniform' needs a transition matrix, not trajectories")
            W, degree = count_weights(X[0], X[1], n_states)
        else:
            M = check_transition_matrix(X, "X")
            if self.weighting == "stationary":
                _, degree, W = _weights_and_rho(M, rho)
            else:
                W = ((M + M.T) * (0.5 / M.shape[0])).tocsr()
                degree = np.asarray(W.sum(axis=1)).ravel()
        n = W.shape[0]
        k = check_int(self.n_components, "n_components", min_value=1, max_value=n)
        evals, phi = symmetric_eigenpairs(normalized_laplacian(W, degree), min(k + 1, n),
                                          self.method)
        if k < n and evals[k] - evals[k - 1] <= DEGENERACY_TOL * max(1.0, evals[k]):
            warnings.warn(f"lambda_{k} = lambda_{k + 1} = {evals[k]:.6g}: the {k}-dimensional "
                          "eigenspace is not unique (a symmetric layout?); these features are one "
                          "choice within a repeated eigenvalue's eigenspace", RuntimeWarning,
                          stacklevel=2)
        evals, phi = evals[:k], phi[:, :k]
        self.eigenvalues_ = evals
        self.components_ = phi / np.sqrt(degree)[:, None]
        self.weights_ = degree / degree.sum()
        # components_ are orthonormal in the raw-degree inner product; rescale to the
        # probability weights so that components_.T @ diag(weights_) @ components_ = I.
        self.components_ = self.components_ * np.sqrt(degree.sum())
        self.n_states_ = n
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Feature rows of the given state indices (an int array of any shape (m,) or (m, 1))."""
        check_is_fitted(self, "components_")
        states = np.asarray(X)
        if states.ndim == 2 and states.shape[1] == 1:
            states = states[:, 0]
        if states.ndim != 1 or not np.issubdtype(states.dtype, np.integer):
            raise ValueError("X must be a 1-D array of integer state indices")
        if states.size and (states.min() < 0 or states.max() >= self.n_states_):
            raise ValueError(f"X has state indices outside [0, {self.n_states_ - 1}]")
        return self.components_[states]


#: The issue's name for the same estimator.
LaplacianFeatures = SpectralFeatures


class LinearValueApproximator(RegressorMixin, BaseEstimator):
    """Linear value-function approximation on fitted spectral features.

    ``fit(states, V, sample_weight=ρ)`` is the ρ-weighted least-squares projection
    ``Π_k V = Φ_k Φ_kᵀ D V``; ``fit_td(P, r, gamma)`` is the TD(0) fixed point
    ``Φw`` with ``Φᵀ D (I − γP) Φ w = Φᵀ D r`` (on-policy ρ).

    Parameters
    ----------
    features : SpectralFeatures
        A fitted feature map.

    Attributes
    ----------
    coef_ : (k,) array

    References
    ----------
    Giorgi, Olivieri, Jiang, Toni & Papini, "Impact of Connectivity on Laplacian Representations in
    Reinforcement Learning", ICML 2026 (arXiv:2603.08558). Linear value approximation on
    proto-value functions: Mahadevan & Maggioni, "Proto-value Functions: A Laplacian Framework for
    Learning Representation and Control in Markov Decision Processes", JMLR 8, 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from icml26.spectral_rl import GridWorld, SpectralFeatures
    >>> world = GridWorld.two_rooms(5, 7, door=1)
    >>> features = SpectralFeatures(n_components=4).fit(world.transition("uniform"))
    >>> states = np.arange(world.n_states)
    >>> V = np.linspace(0.0, 1.0, world.n_states)
    >>> model = LinearValueApproximator(features).fit(states, V)
    >>> model.coef_.shape, model.predict(states).shape == V.shape
    ((4,), True)
    """

    def __init__(self, features: SpectralFeatures | None = None):
        self.features = features

    def _phi(self, X: Any) -> np.ndarray:
        if not isinstance(self.features, SpectralFeatures):
            raise TypeError("features must be a SpectralFeatures instance")
        check_is_fitted(self.features, "components_")
        return self.features.transform(X)

    def fit(self, X: Any, y: Any, sample_weight: Any = None):
        Phi = self._phi(X)
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError("y must be an array of real numbers") from exc
        if y.shape != (Phi.shape[0],):
            raise ValueError(f"y must have one value per state in X: shape ({Phi.shape[0]},) for "
                             f"X of length {Phi.shape[0]}, got y of shape {y.shape}")
        if Phi.shape[0] == 0:
            raise ValueError("X is empty; expected at least one state")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity; expected finite values")
        w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, np.float64)
        if w.shape != y.shape or np.any(w < 0) or not np.all(np.isfinite(w)):
            raise ValueError("sample_weight must be finite, >= 0, one per sample")
        sw = np.sqrt(w)
        self.coef_ = np.linalg.lstsq(Phi * sw[:, None], y * sw, rcond=None)[0]
        return self

    def fit_td(self, P: Any, r: Any, gamma: float, rho: Any = None):
        """The TD(0) fixed point on all states of P (ρ: its stationary distribution by default)."""
        from .mdp import check_scalar_in

        M = check_transition_matrix(P)
        gamma = check_scalar_in(gamma, "gamma", low=0.0, high=1.0, high_inclusive=False)
        rho = stationary_distribution(M) if rho is None else check_distribution(rho, M.shape[0])
        Phi = self._phi(np.arange(M.shape[0]))
        DPhi = Phi * rho[:, None]
        A = DPhi.T @ (Phi - gamma * (M @ Phi))
        self.coef_ = np.linalg.solve(A, DPhi.T @ np.asarray(r, dtype=np.float64))
        return self

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        return self._phi(X) @ self.coef_

