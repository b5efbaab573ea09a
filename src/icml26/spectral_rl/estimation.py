"""Estimating the Laplacian from sampled transitions (count estimator), and the sampler.

*Resolution (not from the paper):* the paper's estimator was not readable; this is the
standard count estimator: ``C_ij = #{t: s_t = i, s_{t+1} = j}``, ``Ŵ = (C + Cᵀ)/(2ΣC)``,
``D̂ = diag(Ŵ1)``, ``L̂ = D̂ − Ŵ`` (so ``L̂1 = 0`` exactly), ``N̂ = I − D̂^{-1/2}ŴD̂^{-1/2}``.
Its cost is O(T) to count plus one eigen-decomposition.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from icml26.core.validation import check_choice, check_int

from .mdp import as_generator, chain_period, check_transition_matrix, stationary_distribution

#: Up to this many states the counts are one dense ``bincount`` (n² floats).
DENSE_COUNT_MAX_STATES = 1024

__all__ = ["sample_trajectories", "count_weights", "estimate_laplacian_from_trajectories",
           "estimate_normalized_laplacian"]


def sample_trajectories(P: Any, T: int, n_chains: int = 256, start: str = "stationary",
                        rng: Any = None, rho: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """``T`` transitions ``(s_t, s_{t+1})`` from ``n_chains`` parallel chains under P.

    Parameters
    ----------
    P : (n, n) array or sparse matrix
    T : int
        Total number of transitions; each chain runs ``ceil(T / n_chains)`` steps and the
        first T transitions (chain-major) are returned.
    n_chains : int
    start : {"stationary", "uniform"}
        Initial states drawn from ρ (no burn-in needed) or uniformly.
    rng : seed or numpy Generator
    rho : (n,) array, optional
        Stationary distribution for ``start="stationary"``.

    Returns
    -------
    states, next_states : (T,) int arrays

    Warns
    -----
    RuntimeWarning when the chain is periodic (slow convergence of counts: use
    :func:`icml26.spectral_rl.mdp.make_lazy`).
    """
    M = check_transition_matrix(P)
    n = M.shape[0]
    T = check_int(T, "T", min_value=1)
    n_chains = check_int(n_chains, "n_chains", min_value=1)
    check_choice(start, "start", ("stationary", "uniform"))
    gen = as_generator(rng)
    period = chain_period(M)
    if period > 1:
        warnings.warn(f"the chain is periodic (period {period}); counts converge slowly — "
                      "consider make_lazy(P)", RuntimeWarning, stacklevel=2)
    # Padded per-state successor lists: grids have at most 5 successors, so each step is
    # O(n_chains × max successors).
    width = int(np.diff(M.indptr).max())
    cols = np.zeros((n, width), dtype=np.int64)
    cum = np.ones((n, width))
    for i in range(n):
        lo, hi = M.indptr[i], M.indptr[i + 1]
        cols[i, :hi - lo] = M.indices[lo:hi]
        cols[i, hi - lo:] = M.indices[hi - 1] if hi > lo else i
        cum[i, :hi - lo] = np.cumsum(M.data[lo:hi])
    cum[:, -1] = np.inf  # guards against round-off in the last cumulative probability
    if start == "stationary":
        p0 = stationary_distribution(M) if rho is None else np.asarray(rho, dtype=np.float64)
        state = gen.choice(n, size=n_chains, p=p0 / p0.sum())
    else:
        state = gen.integers(0, n, size=n_chains)
    steps = -(-T // n_chains)
    path = np.empty((steps + 1, n_chains), dtype=np.int64)
    path[0] = state
    for t in range(steps):
        u = gen.random(n_chains)
        choice = (u[:, None] >= cum[state]).sum(axis=1)
        state = cols[state, choice]
        path[t + 1] = state
    states = path[:-1].T.reshape(-1)[:T]
    next_states = path[1:].T.reshape(-1)[:T]
    return states, next_states


def _check_transitions(states: Any, next_states: Any, n_states: int) -> tuple[np.ndarray, np.ndarray]:
    n_states = check_int(n_states, "n_states", min_value=1)
    s = np.asarray(states)
    s2 = np.asarray(next_states)
    if s.ndim != 1 or s.shape != s2.shape or s.size == 0:
        raise ValueError(f"states and next_states must be non-empty 1-D arrays of one length, got "
                         f"{s.shape} and {s2.shape}")
    if not (np.issubdtype(s.dtype, np.integer) and np.issubdtype(s2.dtype, np.integer)):
        raise ValueError("states and next_states must hold integer state indices")
    for name, arr in (("states", s), ("next_states", s2)):
        if arr.min() < 0 or arr.max() >= n_states:
            raise ValueError(f"{name} has indices outside [0, {n_states - 1}] "
                             f"(min {arr.min()}, max {arr.max()})")
    return s.astype(np.int64, copy=False), s2.astype(np.int64, copy=False)


def count_weights(states: Any, next_states: Any, n_states: int, unvisited: str = "raise"
                  ) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(Ŵ, d̂)``: symmetrized empirical edge weights and degrees (≈ visitation frequencies).

    Parameters
    ----------
    unvisited : {"raise", "isolate"}
        A state that never appears has degree 0. ``"raise"`` refuses the sample (default);
        ``"isolate"`` warns and keeps the zero degree: :func:`estimate_normalized_laplacian`
        then treats the state as isolated (``D̂^{-1/2} = 0`` there, so ``N̂_ii = 1``, the usual
        pseudo-inverse convention). *Resolution (not from the paper).*
    """
    check_choice(unvisited, "unvisited", ("raise", "isolate"))
    s, s2 = _check_transitions(states, next_states, n_states)
    counts = np.bincount(s * n_states + s2, minlength=n_states * n_states).astype(np.float64) \
        if n_states <= DENSE_COUNT_MAX_STATES else None
    if counts is not None:
        C = sp.csr_matrix(counts.reshape(n_states, n_states))
    else:
        C = sp.csr_matrix((np.ones(s.size), (s, s2)), shape=(n_states, n_states))
        C.sum_duplicates()
    W = ((C + C.T) * (0.5 / s.size)).tocsr()
    degree = np.asarray(W.sum(axis=1)).ravel()
    missing = np.flatnonzero(degree <= 0)
    if missing.size and unvisited == "isolate":
        warnings.warn(f"{missing.size} states never appear in the trajectories; they are treated "
                      "as isolated (N_hat_ii = 1)", RuntimeWarning, stacklevel=2)
    elif missing.size:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if missing.size > 10 else "")
        raise ValueError(f"{missing.size} states never appear in the trajectories ({shown}); "
                         "sample more transitions or restrict to the visited states")
    return W, degree


def estimate_laplacian_from_trajectories(states: Any, next_states: Any, n_states: int
                                         ) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(L̂, D̂)`` of the count estimator (``L̂ = D̂ − Ŵ``, ``L̂1 = 0`` exactly).

    Examples
    --------
    >>> from icml26.spectral_rl import GridWorld
    >>> P = GridWorld.open_room(3, 3).transition("uniform")
    >>> s, s2 = sample_trajectories(P, 5000, rng=0)
    >>> L_hat, D_hat = estimate_laplacian_from_trajectories(s, s2, 9)
    >>> float(abs(L_hat @ np.ones(9)).max()) < 1e-15
    True
    """
    W, degree = count_weights(states, next_states, n_states)
    D = sp.diags(degree).tocsr()
    return (D - W).tocsr(), D


def estimate_normalized_laplacian(states: Any, next_states: Any, n_states: int,
                                  unvisited: str = "raise") -> np.ndarray:
    """``N̂ = I − D̂^{-1/2}ŴD̂^{-1/2}`` as a dense symmetric array (see :func:`count_weights`
    for ``unvisited``)."""
    W, degree = count_weights(states, next_states, n_states, unvisited)
    scale = np.zeros_like(degree)
    scale[degree > 0] = 1.0 / np.sqrt(degree[degree > 0])
    N = np.eye(n_states) - scale[:, None] * W.toarray() * scale[None, :]
    return 0.5 * (N + N.T)
