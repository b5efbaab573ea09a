"""Finite MDPs on gridworlds: transition matrices under a policy, stationary distributions, values.

Giorgi, Olivieri, Jiang, Toni & Papini, *Impact of Connectivity on Laplacian Representations in
Reinforcement Learning*, ICML 2026 (arXiv 2603.08558). The gridworld generator follows the
paper's setting (gridworld simulations); its exact layouts are our choice.

Everything here is exact linear algebra on ``scipy.sparse`` matrices (dense arrays are
accepted everywhere a matrix is).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from icml26.core.validation import check_choice, check_int, check_scalar_in

__all__ = ["GridWorld", "as_generator", "ACTIONS", "BIASED_ACTION_PROBS", "make_policy", "policy_transition_matrix",
           "check_transition_matrix", "stationary_distribution", "value_function", "chain_period",
           "make_lazy"]

#: Action order used by every policy array: (row step, column step).
ACTIONS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
#: The paper-style biased policy: fixed probabilities of (up, down, left, right) in every state.
BIASED_ACTION_PROBS = (0.1, 0.2, 0.3, 0.4)
#: Dirichlet concentration of the random per-state policies.
DIRICHLET_ALPHA = 0.5
#: Row sums of a stochastic matrix must be 1 to this tolerance.
ROW_SUM_TOL = 1e-10


def as_generator(seed: Any) -> np.random.Generator:
    """A numpy Generator from a seed, a SeedSequence-compatible list, or a Generator."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def check_transition_matrix(P: Any, name: str = "P") -> sp.csr_matrix:
    """A square, non-negative, finite, row-stochastic matrix as CSR (float64).

    Raises ``ValueError`` naming ``name`` when it is not square, has NaN/inf or negative
    entries, or a row does not sum to 1 (tolerance 1e-10).
    """
    if P is None:
        raise ValueError(f"{name} is None; expected a square transition matrix")
    try:
        M = sp.csr_matrix(P, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 2-D array or scipy sparse matrix of numbers") from exc
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {M.shape}")
    if not np.all(np.isfinite(M.data)):
        raise ValueError(f"{name} contains NaN or infinity; expected finite probabilities")
    if np.any(M.data < 0):
        raise ValueError(f"{name} has negative entries; expected probabilities >= 0")
    sums = np.asarray(M.sum(axis=1)).ravel()
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOL)
    if bad.size:
        raise ValueError(f"{name} rows must sum to 1 (tolerance {ROW_SUM_TOL:g}); row {bad[0]} sums "
                         f"to {sums[bad[0]]:.12g} ({bad.size} bad rows)")
    M.eliminate_zeros()
    return M


def stationary_distribution(P: Any, tol: float = 1e-12) -> np.ndarray:
    """The unique stationary distribution ρ (ρᵀP = ρᵀ, ρ > 0) of an irreducible chain.

    Parameters
    ----------
    P : (n, n) array or sparse matrix
        Row-stochastic transition matrix.
    tol : float
        Largest accepted residual ``‖ρᵀP − ρᵀ‖₁``.

    Returns
    -------
    rho : (n,) ndarray, positive, sums to 1.

    Raises
    ------
    ValueError
        When P is not stochastic, or the chain is reducible (ρ not unique or not positive):
        the message names the states outside the largest closed class.

    Examples
    --------
    >>> stationary_distribution([[0.5, 0.5], [0.25, 0.75]]).round(4)
    array([0.3333, 0.6667])
    """
    M = check_transition_matrix(P)
    n = M.shape[0]
    n_comp, labels = connected_components(M, directed=True, connection="strong")
    if n_comp > 1:
        sizes = np.bincount(labels)
        main = int(np.argmax(sizes))
        others = np.flatnonzero(labels != main)
        shown = ", ".join(map(str, others[:10])) + (" ..." if others.size > 10 else "")
        raise ValueError(f"P is reducible: {n_comp} strongly connected classes; states {shown} are "
                         "not in the largest class, so the stationary distribution is not unique and "
                         "positive (lambda_2 = 0: the state graph is disconnected)")
    if n == 1:
        return np.ones(1)
    # Solve (I - P)^T rho = 0 with rho_0 = 1 (the reduced system of an irreducible chain is
    # non-singular), then normalise. (It used to replace one equation by the dense row of
    # ones, which made SuperLU fill in: 5-8x slower on grids, and less accurate, #42.)
    A = (sp.identity(n, format="csr") - M).T.tocsc()
    rest = sp.linalg.spsolve(A[1:, 1:], -A[1:, 0].toarray().ravel(), permc_spec="MMD_AT_PLUS_A")
    rho = np.concatenate([[1.0], np.asarray(rest, dtype=np.float64).reshape(-1)])
    rho = rho / rho.sum()
    residual = float(np.abs(M.T @ rho - rho).sum())
    if not np.all(np.isfinite(rho)) or residual > max(tol, 1e-12) * 1e3:
        raise ValueError(f"could not find a positive stationary distribution (residual {residual:.3g}); "
                         "is P numerically stochastic (rows summing to 1 to ~1e-12)?")
    if np.any(rho <= 0):
        # The chain is irreducible (checked above), so the true rho is positive: it spans more
        # orders of magnitude than float64 resolves (#42: 'biased' at 60 x 60, slip 0.1).
        positive = rho[rho > 0]
        spread = float(positive.max() / positive.min()) if positive.size else float("inf")
        raise ValueError(
            f"could not find a positive stationary distribution: P is irreducible, but its stationary "
            f"distribution is too skewed for float64 ({int(np.sum(rho <= 0))} of {n} states come out "
            f"<= 0 after round-off; the positive ones already span a ratio of {spread:.2g}). A policy that "
            "drifts one way on a large grid piles nearly all mass into one corner (the 'biased' policy "
            "beyond about 40 x 40 at slip 0.1). What you can do: use a smaller grid, a larger slip "
            "(GridWorld(..., slip=0.5) resolves 'biased' at 60 x 60), or a less skewed policy "
            "('uniform', 'dirichlet' or your own)")
    return rho / rho.sum()


def chain_period(P: Any) -> int:
    """Period of an irreducible chain: gcd over edges (i→j) of level(i) + 1 − level(j) in a BFS."""
    M = check_transition_matrix(P)
    n = M.shape[0]
    level = np.full(n, -1)
    level[0] = 0
    frontier = [0]
    while frontier:
        nxt = []
        for i in frontier:
            for j in M.indices[M.indptr[i]:M.indptr[i + 1]]:
                if level[j] < 0:
                    level[j] = level[i] + 1
                    nxt.append(j)
        frontier = nxt
    coo = M.tocoo()
    diffs = np.abs(level[coo.row] + 1 - level[coo.col])
    period = 0
    for d in np.unique(diffs):
        period = math.gcd(period, int(d))
    return max(period, 1)


def make_lazy(P: Any, alpha: float = 0.05) -> sp.csr_matrix:
    """``(1 − α)P + αI``: same stationary distribution, aperiodic; every λ of the Laplacian scales by 1 − α."""
    alpha = check_scalar_in(alpha, "alpha", low=0.0, high=1.0, high_inclusive=False)
    M = check_transition_matrix(P)
    return ((1 - alpha) * M + alpha * sp.identity(M.shape[0], format="csr")).tocsr()


def value_function(P: Any, r: Any, gamma: float) -> np.ndarray:
    """``V = (I − γP)^{-1} r`` by a sparse linear solve (never an explicit inverse)."""
    M = check_transition_matrix(P)
    gamma = check_scalar_in(gamma, "gamma", low=0.0, high=1.0, high_inclusive=False)
    r = np.asarray(r, dtype=np.float64)
    if r.shape != (M.shape[0],):
        raise ValueError(f"r must have shape ({M.shape[0]},), got {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("r contains NaN or infinity; expected finite rewards")
    A = (sp.identity(M.shape[0], format="csc") - gamma * M).tocsc()
    return np.asarray(sp.linalg.spsolve(A, r), dtype=np.float64).reshape(-1)


def make_policy(kind: str, n_states: int, seed: Any = None) -> np.ndarray:
    """A policy array of shape (n_states, 4) over (up, down, left, right).

    ``kind``: ``"uniform"`` (0.25 each), ``"biased"`` (0.1, 0.2, 0.3, 0.4 in every state: a
    non-uniform stationary distribution and a non-reversible chain), or ``"dirichlet"``
    (independent Dirichlet(0.5) rows drawn with ``seed``).
    """
    check_choice(kind, "kind", ("uniform", "biased", "dirichlet"))
    n_states = check_int(n_states, "n_states", min_value=1)
    if kind == "uniform":
        return np.full((n_states, 4), 0.25)
    if kind == "biased":
        return np.tile(np.asarray(BIASED_ACTION_PROBS, dtype=np.float64), (n_states, 1))
    return as_generator(seed).dirichlet(np.full(4, DIRICHLET_ALPHA), size=n_states)


class GridWorld:
    """A gridworld: free cells are states, four actions, walls and borders keep the agent in place.

    Parameters
    ----------
    layout : str or (h, w) array of bool
        Rows of ``'#'`` (wall) and ``'.'`` (free), separated by newlines; or a boolean array
        that is True on free cells.
    slip : float in [0, 1)
        With probability ``slip`` the executed action is uniform at random instead of the
        chosen one.

    Attributes
    ----------
    free : (h, w) bool array
    cells : (n_states, 2) int array
        (row, column) of each state, in row-major order.
    n_states : int

    References
    ----------
    Giorgi, Olivieri, Jiang, Toni & Papini, "Impact of Connectivity on Laplacian Representations in
    Reinforcement Learning", ICML 2026 (arXiv:2603.08558). Its gridworld environments; the rooms
    layouts follow Sutton, Precup & Singh, "Between MDPs and semi-MDPs: A framework for temporal
    abstraction in reinforcement learning", Artificial Intelligence 112, 1999.

    Examples
    --------
    >>> world = GridWorld.two_rooms(5, 7, door=1)
    >>> P = world.transition("uniform")
    >>> P.shape == (world.n_states, world.n_states)
    True
    """

    def __init__(self, layout: Any, slip: float = 0.0):
        if isinstance(layout, str):
            rows = [row.strip() for row in layout.strip().splitlines() if row.strip()]
            if not rows or len({len(r) for r in rows}) != 1:
                raise ValueError("layout rows must be non-empty and of equal length")
            bad = {ch for row in rows for ch in row} - {"#", "."}
            if bad:
                raise ValueError(f"layout may contain only '#' and '.', got {sorted(bad)}")
            free = np.array([[ch == "." for ch in row] for row in rows], dtype=bool)
        else:
            free = np.asarray(layout)
            if free.ndim != 2 or free.dtype != bool:
                raise ValueError("layout must be a string or a 2-D boolean array (True = free)")
        if not free.any():
            raise ValueError("layout has no free cell")
        self.free = free
        self.slip = check_scalar_in(slip, "slip", low=0.0, high=1.0, high_inclusive=False)
        self.cells = np.argwhere(free)
        self.n_states = len(self.cells)
        self._index = -np.ones(free.shape, dtype=int)
        self._index[free] = np.arange(self.n_states)

    # -- families ------------------------------------------------------------------------
    @classmethod
    def open_room(cls, h: int, w: int, slip: float = 0.0) -> "GridWorld":
        """An ``h × w`` room without inner walls."""
        h, w = check_int(h, "h", min_value=1), check_int(w, "w", min_value=1)
        return cls(np.ones((h, w), dtype=bool), slip=slip)

    @classmethod
    def two_rooms(cls, h: int, w: int, door: int, slip: float = 0.0) -> "GridWorld":
        """``h × w`` grid, a vertical wall at column ``w // 2`` with a centred door of ``door`` rows."""
        h, w = check_int(h, "h", min_value=1), check_int(w, "w", min_value=3)
        door = check_int(door, "door", min_value=1, max_value=h)
        free = np.ones((h, w), dtype=bool)
        top = (h - door) // 2
        free[:, w // 2] = False
        free[top:top + door, w // 2] = True
        return cls(free, slip=slip)

    @classmethod
    def four_rooms(cls, size: int, slip: float = 0.0) -> "GridWorld":
        """``size × size`` grid split by a wall cross into four rooms, one door of width 1 per wall."""
        size = check_int(size, "size", min_value=5)
        free = np.ones((size, size), dtype=bool)
        mid = size // 2
        free[mid, :] = False
        free[:, mid] = False
        free[mid, mid // 2] = free[mid, (mid + size) // 2] = True
        free[mid // 2, mid] = free[(mid + size) // 2, mid] = True
        return cls(free, slip=slip)

    # -- dynamics ------------------------------------------------------------------------
    def state_of(self, row: int, col: int) -> int:
        """State index of a free cell."""
        if not (0 <= row < self.free.shape[0] and 0 <= col < self.free.shape[1]) \
                or not self.free[row, col]:
            raise ValueError(f"cell ({row}, {col}) is not a free cell")
        return int(self._index[row, col])

    def successors(self) -> np.ndarray:
        """(n_states, 4) next state of each action (a blocked move stays)."""
        h, w = self.free.shape
        out = np.empty((self.n_states, 4), dtype=int)
        for a, (dr, dc) in enumerate(ACTIONS.values()):
            r2 = self.cells[:, 0] + dr
            c2 = self.cells[:, 1] + dc
            inside = (r2 >= 0) & (r2 < h) & (c2 >= 0) & (c2 < w)
            ok = inside.copy()
            ok[inside] = self.free[r2[inside], c2[inside]]
            out[:, a] = np.where(ok, self._index[np.clip(r2, 0, h - 1), np.clip(c2, 0, w - 1)],
                                 np.arange(self.n_states))
        return out

    def transition(self, policy: Any = "uniform", seed: Any = None) -> sp.csr_matrix:
        """``P_ij = Σ_a π(a|i) p(j|i,a)`` as CSR; ``policy`` is a name (see :func:`make_policy`)
        or an (n_states, 4) array of action probabilities."""
        pi = make_policy(policy, self.n_states, seed) if isinstance(policy, str) else \
            np.asarray(policy, dtype=np.float64)
        if pi.shape != (self.n_states, 4):
            raise ValueError(f"policy must have shape ({self.n_states}, 4), got {pi.shape}")
        if not np.all(np.isfinite(pi)) or np.any(pi < 0) or \
                np.any(np.abs(pi.sum(axis=1) - 1) > ROW_SUM_TOL):
            raise ValueError("policy rows must be finite probabilities summing to 1")
        executed = (1 - self.slip) * pi + self.slip / 4.0
        return policy_transition_matrix(self.successors(), executed)

    def draw(self, values: np.ndarray) -> np.ndarray:
        """A (h, w) float image of per-state ``values`` (NaN on walls), for plotting."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.n_states,):
            raise ValueError(f"values must have shape ({self.n_states},), got {values.shape}")
        image = np.full(self.free.shape, np.nan)
        image[self.free] = values
        return image

    def __repr__(self) -> str:
        return f"GridWorld(shape={self.free.shape}, n_states={self.n_states}, slip={self.slip})"


def policy_transition_matrix(successors: Any, action_probs: Any) -> sp.csr_matrix:
    """State-to-state matrix of deterministic per-action successors under a stochastic policy.

    Parameters
    ----------
    successors : (n, A) int array
        Next state of each action in each state.
    action_probs : (n, A) array
        π(a | s); rows sum to 1.
    """
    succ = np.asarray(successors)
    probs = np.asarray(action_probs, dtype=np.float64)
    if succ.ndim != 2 or succ.shape != probs.shape:
        raise ValueError(f"successors and action_probs must have the same 2-D shape, got "
                         f"{succ.shape} and {probs.shape}")
    n = succ.shape[0]
    if succ.min() < 0 or succ.max() >= n:
        raise ValueError(f"successors must be state indices in [0, {n - 1}]")
    rows = np.repeat(np.arange(n), succ.shape[1])
    P = sp.csr_matrix((probs.ravel(), (rows, succ.ravel())), shape=(n, n))
    P.sum_duplicates()
    return check_transition_matrix(P)
