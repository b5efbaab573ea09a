"""LatticeNav: the synthetic navigation world of the reproduction (spec §5), its hidden STL
specifications, the lattice dynamics model, and planner demonstrations.

Generative process (all seeded through a passed ``numpy.random.Generator``):

* 32 × 32 lattice, spacing 0.25 m (8 × 8 m arena). State ``x = (i, j, θ, v)`` with
  integer cell indices ``(i, j)`` (positions ``p = 0.25·(i, j)`` are exact), heading
  ``θ ∈ {0..7}`` × 45° and speed ``v = ‖p_t − p_{t−1}‖`` in m/step.
* Tokens (SPOC-like): 0 STOP, 1 FWD (1 cell along u(θ)), 2 FAST (2 cells), 3 ROT_L,
  4 ROT_R, 5 BACK (1 cell back), 6 WAIT (safe no-op, never in demos).
* True dynamics: a move happens only if every traversed cell is free and in bounds (a
  diagonal step also needs both orthogonal neighbours free); otherwise the robot stays
  (a collision).
* Walls: 3–6 rectangles of U{2..8} × U{1..3} cells (visible to the policy).
* Hidden runtime constraints (never seen in training): 1–3 keep-out zones (sides
  U[0.75, 1.75] m; with probability ``p_on`` zone 1 sits on the straight route), a
  slow zone (probability ``p_slow``: 2 × 2 m square on the start–goal segment, speed
  ≤ 0.4 m/step inside), a geofence (bounding box of start and goal grown by
  U[0.25, 1.0] m). Maps whose start/goal violate a predicate or that have no lattice
  path satisfying all state predicates are resampled, so every spec is feasible.
* Specs: avoid ``G(∧_j out_Zj ≥ 0 ∧ clear ≥ 0 ∧ speedS ≥ 0)``, geofence ``G(in_R ≥ 0)``,
  task ``F(goal ≥ 0)`` (measured, not enforced); clearance = distance to walls − 0.2 m.

Reference: Kapoor et al., "SafeDec", ICML 2026 (arXiv:2509.01728); the world itself is
this package's CPU-scale stand-in for AI2-THOR/CHORES (resolution, not from the paper).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, dijkstra

from ..core.io import atomic_file
from ..core.validation import check_choice, check_int, check_scalar_in
from .stl import Always, And, Eventually, Formula, Predicate

__all__ = [
    "CELL", "GRID", "T_MAX", "TOKENS", "STOP", "FWD", "FAST", "ROT_L", "ROT_R", "BACK", "WAIT",
    "N_TOKENS", "OBS_DIM", "WorldConfig", "Episode", "Demo", "sample_episode", "make_spec",
    "LatticeDynamics", "lattice_step", "observe", "LatticeNavEnv", "expert_demos", "FAMILIES",
    "goal_spec", "cache_dir", "load_or_make_demos",
]

CELL = 0.25          # lattice spacing (m)
GRID = 32            # cells per side
T_MAX = 100          # episode horizon (steps)
TOKENS = ("STOP", "FWD", "FAST", "ROT_L", "ROT_R", "BACK", "WAIT")
STOP, FWD, FAST, ROT_L, ROT_R, BACK, WAIT = range(7)
N_TOKENS = len(TOKENS)
DIRS = np.array([(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)])
PATCH = 9
OBS_DIM = 2 + 2 + 1 + 8 + PATCH * PATCH  # 94
FAMILIES = ("avoid", "geofence", "free")
INACTIVE = 1e3       # margin of an absent constraint (keeps robustness finite)


@dataclass(frozen=True)
class WorldConfig:
    """Knobs of the generator (the calibration knobs are p_on, p_slow, fence_margin).

    Frozen (hashable), so a configuration can key the demonstration cache.

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728 (the
    hidden runtime constraints of its navigation protocol: keep-out zones, a slow zone, a
    geofence). The lattice world is this package's CPU-scale stand-in for the paper's AI2-THOR
    scenes (resolution, not from the paper).

    Examples
    --------
    >>> config = WorldConfig(p_on=1.0, p_slow=0.0)
    >>> ep = sample_episode(np.random.default_rng(0), config)
    >>> ep.config.p_on, ep.slow is None
    (1.0, True)
    """

    p_on: float = 0.3
    p_slow: float = 0.25
    fence_margin: tuple = (0.25, 1.0)
    clearance: float = 0.2
    goal_radius: float = 0.36
    speed_limit: float = 0.4
    min_goal_dist: float = 4.0
    n_zones: tuple = (1, 3)
    zone_side: tuple = (0.75, 1.75)
    max_zones: int = 3


@dataclass
class Episode:
    """One map with start, goal and the hidden constraints of every family.

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728 (an
    episode of its protocol: a start, a goal and runtime constraints never seen in training).
    The lattice map is this package's stand-in for the paper's AI2-THOR scenes (resolution, not
    from the paper).

    Examples
    --------
    >>> ep = sample_episode(np.random.default_rng(0))
    >>> ep.walls.shape, ep.start_state.tolist()
    ((32, 32), [9.0, 24.0, 3.0, 0.0])
    >>> avoid = make_spec([ep], "avoid")
    >>> bool(avoid.satisfied(ep.start_state[None, None]))
    True
    """

    walls: np.ndarray           # (GRID, GRID) bool
    start: np.ndarray           # (3,) int: i, j, θ
    goal: np.ndarray            # (2,) int: i, j
    zones: np.ndarray           # (max_zones, 4) [xmin, xmax, ymin, ymax] m; inactive rows = nan
    slow: np.ndarray | None     # (4,) or None
    fence: np.ndarray           # (4,)
    clearance: np.ndarray       # (GRID, GRID) distance to walls − clearance (m)
    config: WorldConfig = field(default_factory=WorldConfig)

    @property
    def start_state(self) -> np.ndarray:
        return np.array([self.start[0], self.start[1], self.start[2], 0.0], dtype=np.float64)


@dataclass
class Demo:
    """A demonstration: observations (T, OBS_DIM) and executed tokens (T,)."""

    obs: np.ndarray
    tokens: np.ndarray
    unsafe: bool


# -- geometry ---------------------------------------------------------------------------------

def _wall_distance(walls: np.ndarray) -> np.ndarray:
    """Euclidean distance from each cell centre to the union of wall cell squares (m).

    Negative (−half a cell) inside a wall cell.
    """
    wi, wj = np.nonzero(walls)
    ii, jj = np.meshgrid(np.arange(GRID), np.arange(GRID), indexing="ij")
    if wi.size == 0:
        return np.full((GRID, GRID), INACTIVE)
    dx = np.maximum(np.abs(ii[..., None] - wi) * CELL - CELL / 2, 0.0)
    dy = np.maximum(np.abs(jj[..., None] - wj) * CELL - CELL / 2, 0.0)
    dist = np.sqrt(dx ** 2 + dy ** 2).min(axis=-1)
    return np.where(walls, -CELL / 2, dist)


def _box_out(px, py, box):
    """Signed outside margin of axis-aligned boxes ``[xmin, xmax, ymin, ymax]`` (broadcast)."""
    return np.maximum(np.maximum(box[..., 0] - px, px - box[..., 1]),
                      np.maximum(box[..., 2] - py, py - box[..., 3]))


def _free(walls, i, j):
    inside = (i >= 0) & (i < GRID) & (j >= 0) & (j < GRID)
    ic, jc = np.clip(i, 0, GRID - 1), np.clip(j, 0, GRID - 1)
    b = np.arange(walls.shape[0]).reshape((-1,) + (1,) * (np.ndim(i) - 1)) if walls.ndim == 3 else None
    cell = walls[b, ic, jc] if b is not None else walls[ic, jc]
    return inside & ~cell


def _reachable(walls: np.ndarray, allowed: np.ndarray, start) -> np.ndarray:
    """Cells reachable from ``start`` by 8-connected lattice moves through ``allowed`` cells
    (diagonal moves need both orthogonal neighbours free of walls)."""
    reach = np.zeros_like(allowed)
    if not allowed[start[0], start[1]]:
        return reach
    ii, jj = np.meshgrid(np.arange(GRID), np.arange(GRID), indexing="ij")
    src_all, dst_all = [], []
    for di, dj in DIRS[:4]:  # moves are symmetric: half the directions, undirected graph
        ti, tj = ii + di, jj + dj
        ok = allowed & _free(walls, ti, tj)
        ok &= allowed[np.clip(ti, 0, GRID - 1), np.clip(tj, 0, GRID - 1)]
        if di != 0 and dj != 0:
            ok &= _free(walls, ii + di, jj) & _free(walls, ii, jj + dj)
        src_all.append((ii * GRID + jj)[ok])
        dst_all.append((ti * GRID + tj)[ok])
    src, dst = np.concatenate(src_all), np.concatenate(dst_all)
    graph = csr_matrix((np.ones(len(src)), (src, dst)), shape=(GRID * GRID, GRID * GRID))
    order = breadth_first_order(graph, start[0] * GRID + start[1], directed=False,
                                return_predecessors=False)
    reach.flat[order] = True
    return reach


def _cell_margins(ep: "Episode", family: str) -> np.ndarray:
    """State-predicate margin (min over the family's position predicates) per cell."""
    ii, jj = np.meshgrid(np.arange(GRID), np.arange(GRID), indexing="ij")
    px, py = ii * CELL, jj * CELL
    if family == "free":
        return np.full((GRID, GRID), INACTIVE)
    if family == "geofence":
        return -_box_out(px, py, ep.fence)
    margin = ep.clearance.copy()
    for z in ep.zones:
        if np.all(np.isfinite(z)):
            margin = np.minimum(margin, _box_out(px, py, z))
    return margin


def sample_episode(rng: np.random.Generator, config: WorldConfig = WorldConfig(),
                   max_tries: int = 1000) -> Episode:
    """Sample a feasible map with start, goal and hidden constraints for every family.

    Parameters
    ----------
    rng : numpy.random.Generator
    config : WorldConfig

    Returns
    -------
    Episode
        Start and goal satisfy every predicate and each family has a satisfying lattice path.

    Examples
    --------
    >>> ep = sample_episode(np.random.default_rng(0))
    >>> ep.walls.shape, bool(ep.clearance[ep.start[0], ep.start[1]] >= 0)
    ((32, 32), True)
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    for _ in range(max_tries):
        ep = _propose(rng, config)
        if ep is not None:
            return ep
    raise RuntimeError(f"no feasible map after {max_tries} tries; check the WorldConfig")


def _propose(rng: np.random.Generator, cfg: WorldConfig) -> Episode | None:
    walls = np.zeros((GRID, GRID), dtype=bool)
    for _ in range(rng.integers(3, 7)):
        a, b = rng.integers(2, 9), rng.integers(1, 4)
        h, w = (a, b) if rng.random() < 0.5 else (b, a)
        i0, j0 = rng.integers(0, GRID - h + 1), rng.integers(0, GRID - w + 1)
        walls[i0:i0 + h, j0:j0 + w] = True
    clearance = _wall_distance(walls) - cfg.clearance
    ok = np.argwhere(clearance >= 0)
    if len(ok) < 2:
        return None
    s = ok[rng.integers(len(ok))]
    d = np.linalg.norm((ok - s) * CELL, axis=1)
    far = ok[d >= cfg.min_goal_dist]
    if len(far) == 0:
        return None
    g = far[rng.integers(len(far))]
    start = np.array([s[0], s[1], rng.integers(8)])
    ps, pg = s * CELL, g * CELL
    zones = np.full((cfg.max_zones, 4), np.nan)
    for k in range(rng.integers(cfg.n_zones[0], cfg.n_zones[1] + 1)):
        side = rng.uniform(*cfg.zone_side, size=2)
        if k == 0 and rng.random() < cfg.p_on:
            centre = ps + rng.uniform(0.3, 0.7) * (pg - ps) + rng.normal(0.0, 0.25, size=2)
        else:
            centre = rng.uniform(0.0, (GRID - 1) * CELL, size=2)
        zones[k] = [centre[0] - side[0] / 2, centre[0] + side[0] / 2,
                    centre[1] - side[1] / 2, centre[1] + side[1] / 2]
    slow = None
    if rng.random() < cfg.p_slow:
        centre = ps + rng.uniform(0.25, 0.75) * (pg - ps)
        slow = np.array([centre[0] - 1.0, centre[0] + 1.0, centre[1] - 1.0, centre[1] + 1.0])
    m = rng.uniform(*cfg.fence_margin)
    fence = np.array([min(ps[0], pg[0]) - m, max(ps[0], pg[0]) + m,
                      min(ps[1], pg[1]) - m, max(ps[1], pg[1]) + m])
    ep = Episode(walls, start, g, zones, slow, fence, clearance, cfg)
    for family in FAMILIES:
        margin = _cell_margins(ep, family)
        if margin[s[0], s[1]] < 0 or margin[g[0], g[1]] < 0:
            return None
        allowed = (margin >= 0) & ~walls
        if not _reachable(walls, allowed, s)[g[0], g[1]]:
            return None
    return ep


# -- specifications ---------------------------------------------------------------------------

def _param(values: np.ndarray, x) -> np.ndarray:
    """Reshape per-episode parameters (B, k) to broadcast against a trace (B, ..., T)."""
    return values.reshape((values.shape[0],) + (1,) * (x.ndim - 2) + values.shape[1:])


def _positions(x):
    return x[..., 0] * CELL, x[..., 1] * CELL


def make_spec(episodes: list, family: str, *, n_zone_slots: int | None = None) -> Formula | None:
    """The batched hidden specification of ``family`` for a list of episodes.

    Predicates take traces shaped (B, ..., T, 4) with B = ``len(episodes)``.

    Parameters
    ----------
    episodes : list of Episode
    family : {"avoid", "geofence", "free"}
        ``free`` has no hidden constraint (returns ``None``).

    Returns
    -------
    Formula or None
    """
    check_choice(family, "family", FAMILIES)
    if not episodes:
        raise ValueError("episodes must be a non-empty list")
    if family == "free":
        return None
    if family == "geofence":
        fence = np.stack([ep.fence for ep in episodes])

        def in_fence(x):
            px, py = _positions(x)
            return -_box_out(px, py, _param(fence, x))

        return Always(Predicate("in_fence", in_fence))
    cfg = episodes[0].config
    zones = np.stack([ep.zones for ep in episodes])           # (B, Z, 4)
    n_slots = zones.shape[1] if n_zone_slots is None else n_zone_slots
    field_ = np.stack([ep.clearance for ep in episodes])      # (B, GRID, GRID)
    slow = np.stack([ep.slow if ep.slow is not None else np.full(4, np.nan) for ep in episodes])
    has_slow = np.all(np.isfinite(slow), axis=1)
    parts = [_zone_pred(k, zones[:, k]) for k in range(n_slots)]

    def clear(x):
        i = np.clip(np.rint(x[..., 0]).astype(np.int64), 0, GRID - 1)
        j = np.clip(np.rint(x[..., 1]).astype(np.int64), 0, GRID - 1)
        b = np.arange(x.shape[0]).reshape((-1,) + (1,) * (x.ndim - 2))
        return field_[b, i, j]

    def speed(x):
        px, py = _positions(x)
        box = _param(np.nan_to_num(slow), x)
        out_s = _box_out(px, py, box)
        out_s = np.where(_param(has_slow, x), out_s, INACTIVE)
        return np.maximum(out_s, cfg.speed_limit - x[..., 3])

    parts += [Predicate("clear", clear), Predicate("speed_slow", speed)]
    return Always(And(*parts))


def _zone_pred(k: int, zones_k: np.ndarray) -> Formula:
    active = np.all(np.isfinite(zones_k), axis=1)
    box = np.nan_to_num(zones_k)

    def out_zone(x):
        px, py = _positions(x)
        return np.where(_param(active, x), _box_out(px, py, _param(box, x)), INACTIVE)

    return Predicate(f"out_zone{k}", out_zone)


def goal_spec(episodes: list) -> Formula:
    """Task eventuality ``F(0.36 − ‖p − g‖ ≥ 0)`` (measured, never enforced)."""
    goals = np.stack([ep.goal for ep in episodes]).astype(np.float64) * CELL
    radius = episodes[0].config.goal_radius

    def near_goal(x):
        px, py = _positions(x)
        g = _param(goals, x)
        return radius - np.hypot(px - g[..., 0], py - g[..., 1])

    return Eventually(Predicate("near_goal", near_goal))


# -- dynamics ------------------------------------------------------------------------------------

def lattice_step(walls: np.ndarray, states: np.ndarray, tokens: np.ndarray,
                 overshoot: np.ndarray | None = None):
    """True lattice dynamics for a batch.

    Parameters
    ----------
    walls : ndarray, shape (B, GRID, GRID) bool
    states : ndarray, shape (B, 4)  — (i, j, θ, v)
    tokens : ndarray, shape (B,) int
    overshoot : ndarray of bool, shape (B,), optional
        Dynamics mismatch (E3): a successful FWD/FAST/BACK moves one extra cell if free.

    Returns
    -------
    next_states : ndarray, shape (B, 4)
    blocked : ndarray of bool, shape (B,)
        Translation tokens that could not move (collisions).
    """
    i = states[:, 0].astype(np.int64)
    j = states[:, 1].astype(np.int64)
    th = states[:, 2].astype(np.int64)
    tokens = np.asarray(tokens, dtype=np.int64)
    n_cells = np.select([tokens == FWD, tokens == FAST, tokens == BACK], [1, 2, 1], 0)
    sign = np.where(tokens == BACK, -1, 1)
    di, dj = DIRS[th, 0] * sign, DIRS[th, 1] * sign
    ok = n_cells > 0
    ci, cj = i.copy(), j.copy()
    for step in range(2):
        active = ok & (n_cells > step)
        ni, nj = ci + di, cj + dj
        good = _free(walls, ni, nj)
        diag = (di != 0) & (dj != 0)
        good &= ~diag | (_free(walls, ci + di, cj) & _free(walls, ci, cj + dj))
        ok &= ~active | good
        ci = np.where(active & ok, ni, ci)
        cj = np.where(active & ok, nj, cj)
    moved = ok & (n_cells > 0)
    if overshoot is not None:
        extra = moved & overshoot
        ni, nj = ci + di, cj + dj
        good = _free(walls, ni, nj)
        diag = (di != 0) & (dj != 0)
        good &= ~diag | (_free(walls, ci + di, cj) & _free(walls, ci, cj + dj))
        extra &= good
        ci = np.where(extra, ni, ci)
        cj = np.where(extra, nj, cj)
    ni = np.where(moved, ci, i)
    nj = np.where(moved, cj, j)
    nth = np.where(tokens == ROT_L, (th + 1) % 8, np.where(tokens == ROT_R, (th - 1) % 8, th))
    v = CELL * np.hypot(ni - i, nj - j)
    blocked = (n_cells > 0) & ~moved
    return np.stack([ni, nj, nth, v], axis=1).astype(np.float64), blocked


class LatticeDynamics:
    """The (nominal) one-step dynamics model ``f̂`` of LatticeNav for a batch of maps.

    Parameters
    ----------
    walls : ndarray, shape (B, GRID, GRID) bool

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728 (§2.6: the
    dynamics model ``f̂`` SafeDec queries for every token; here the exact lattice dynamics of
    this package's stand-in world).

    Examples
    --------
    >>> dyn = LatticeDynamics(np.zeros((1, GRID, GRID), dtype=bool))
    >>> dyn.predict_all(np.array([[5.0, 5.0, 0.0, 0.0]]))[0, FAST].tolist()
    [7.0, 5.0, 0.0, 0.5]
    """

    n_tokens = N_TOKENS

    def __init__(self, walls: np.ndarray):
        walls = np.asarray(walls, dtype=bool)
        if walls.ndim != 3 or walls.shape[1:] != (GRID, GRID):
            raise ValueError(f"walls must be shaped (B, {GRID}, {GRID}), got {walls.shape}")
        self.walls = walls

    def predict_all(self, states) -> np.ndarray:
        states = np.asarray(states, dtype=np.float64)
        if states.shape != (self.walls.shape[0], 4):
            raise ValueError(f"states must be shaped (B, 4) = ({self.walls.shape[0]}, 4), got {states.shape}")
        b, a = states.shape[0], N_TOKENS
        rep_states = np.repeat(states, a, axis=0)
        rep_walls = np.repeat(self.walls, a, axis=0)
        tokens = np.tile(np.arange(a), b)
        nxt, _ = lattice_step(rep_walls, rep_states, tokens)
        return nxt.reshape(b, a, 4)


# -- observations ----------------------------------------------------------------------------

def observe(walls: np.ndarray, states: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """Policy observation ``o_t`` (B, 94): p/8, (g−p)/8, ‖g−p‖/8, one-hot θ, 9×9 wall patch."""
    b = states.shape[0]
    i = states[:, 0].astype(np.int64)
    j = states[:, 1].astype(np.int64)
    p = np.stack([i, j], 1) * CELL
    g = goals * CELL
    rel = (g - p) / 8.0
    heading = np.zeros((b, 8))
    heading[np.arange(b), states[:, 2].astype(np.int64)] = 1.0
    half = PATCH // 2
    padded = np.pad(walls, ((0, 0), (half, half), (half, half)), constant_values=True)
    offs = np.arange(PATCH)
    rows = (i[:, None] + offs[None])[:, :, None]
    cols = (j[:, None] + offs[None])[:, None, :]
    patch = padded[np.arange(b)[:, None, None], rows, cols].reshape(b, -1).astype(np.float64)
    return np.concatenate([p / 8.0, rel, np.linalg.norm(rel, axis=1, keepdims=True), heading, patch], 1)


class LatticeNavEnv:
    """Vectorised LatticeNav environment over a fixed list of episodes.

    Parameters
    ----------
    episodes : list of Episode
    mismatch : float
        Probability that a successful FWD/FAST/BACK overshoots one extra cell (E3).
    seed : int
        Seeds the overshoot draws.

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728 (the
    navigation protocol it reproduces at CPU scale; ``mismatch`` is the model-error setting of
    E3).

    Examples
    --------
    >>> env = LatticeNavEnv([sample_episode(np.random.default_rng(1))])
    >>> obs, states = env.reset()
    >>> obs.shape, states.shape
    ((1, 94), (1, 4))
    """

    def __init__(self, episodes: list, *, mismatch: float = 0.0, seed: int = 0):
        if not episodes:
            raise ValueError("episodes must be a non-empty list")
        check_scalar_in(mismatch, "mismatch", low=0.0, high=1.0)
        self.episodes = list(episodes)
        self.mismatch = mismatch
        self.seed = seed
        self.walls = np.stack([ep.walls for ep in episodes])
        self.goals = np.stack([ep.goal for ep in episodes])
        self.dynamics = LatticeDynamics(self.walls)
        self.goal_radius = episodes[0].config.goal_radius

    def reset(self):
        self.states = np.stack([ep.start_state for ep in self.episodes])
        self.done = np.zeros(len(self.episodes), dtype=bool)
        self.success = np.zeros(len(self.episodes), dtype=bool)
        self.t = 0
        self._rng = np.random.default_rng([self.seed, 7])
        return observe(self.walls, self.states, self.goals), self.states.copy()

    def step(self, tokens):
        tokens = np.asarray(tokens, dtype=np.int64)
        overshoot = None
        if self.mismatch > 0:
            overshoot = self._rng.random(len(tokens)) < self.mismatch
        nxt, blocked = lattice_step(self.walls, self.states, tokens, overshoot)
        live = ~self.done
        dist = np.hypot(*((self.states[:, :2] - self.goals) * CELL).T)
        stop = live & (tokens == STOP)
        self.success |= stop & (dist <= self.goal_radius)
        self.states = np.where(live[:, None], nxt, self.states)
        self.done |= stop
        self.t += 1
        if self.t >= T_MAX:
            self.done[:] = True
        info = {"blocked": blocked & live, "success": self.success.copy()}
        return observe(self.walls, self.states, self.goals), self.states.copy(), self.done.copy(), info


# -- demonstrations ------------------------------------------------------------------------------

_PLAN_TOKENS = (FAST, FWD, ROT_L, ROT_R)  # tie-break order: straight and fast first


def _cost_to_go(walls: np.ndarray, goal, clean: bool) -> tuple[np.ndarray, np.ndarray]:
    """Dijkstra over (i, j, θ): cost-to-go to the goal cell and the successor table."""
    n = GRID * GRID * 8
    idx = np.arange(n)
    states = np.stack([idx // (GRID * 8), (idx // 8) % GRID, idx % 8, np.zeros(n)], 1).astype(np.float64)
    near_wall = _near_wall(walls)
    succ = np.zeros((n, len(_PLAN_TOKENS)), dtype=np.int64)
    rows, cols, costs = [], [], []
    for k, tok in enumerate(_PLAN_TOKENS):
        nxt, _ = lattice_step(np.broadcast_to(walls, (n, GRID, GRID)), states, np.full(n, tok))
        nid = (nxt[:, 0].astype(np.int64) * GRID + nxt[:, 1].astype(np.int64)) * 8 + nxt[:, 2].astype(np.int64)
        succ[:, k] = nid
        cost = np.ones(n)
        if clean and tok in (FWD, FAST):
            cost += 2.0 * near_wall[nxt[:, 0].astype(np.int64), nxt[:, 1].astype(np.int64)]
        keep = nid != idx
        rows.append(idx[keep])
        cols.append(nid[keep])
        costs.append(cost[keep])
    graph = csr_matrix((np.concatenate(costs), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    goal_nodes = (goal[0] * GRID + goal[1]) * 8 + np.arange(8)
    ctg = dijkstra(graph.T.tocsr(), indices=goal_nodes, min_only=True)
    return ctg, succ


def _near_wall(walls: np.ndarray) -> np.ndarray:
    padded = np.pad(walls, 1, constant_values=False)
    out = np.zeros_like(walls)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            out |= padded[1 + di:1 + di + GRID, 1 + dj:1 + dj + GRID]
    return out


def expert_demos(n: int, rng: np.random.Generator, unsafe_frac: float = 0.15,
                 epsilon: float = 0.1, config: WorldConfig = WorldConfig()) -> list:
    """Planner demonstrations on fresh maps (spec §5): Dijkstra over (i, j, θ), unit cost
    per FWD/FAST/ROT, ending with STOP at the goal.

    A fraction ``1 − unsafe_frac`` comes from the *clean* expert (+2 cost for entering a
    cell 8-adjacent to a wall, so it keeps clearance); the rest from the *unsafe* expert
    (no clearance cost, ε-random tokens with replanning ⇒ wall hugging). Hidden
    constraints are never part of the demonstrations.

    Parameters
    ----------
    n : int
        Number of demonstrations.
    rng : numpy.random.Generator
    unsafe_frac : float
        Fraction of unsafe demonstrations (default 0.15).
    epsilon : float
        Random-token rate of the unsafe expert.

    Returns
    -------
    list of Demo
    """
    check_int(n, "n", min_value=1)
    check_scalar_in(unsafe_frac, "unsafe_frac", low=0.0, high=1.0)
    check_scalar_in(epsilon, "epsilon", low=0.0, high=1.0)
    demos = []
    n_unsafe = int(round(unsafe_frac * n))
    kinds = np.zeros(n, dtype=bool)
    kinds[:n_unsafe] = True
    kinds = rng.permutation(kinds)
    for unsafe in kinds:
        while True:
            demo = _one_demo(rng, bool(unsafe), epsilon, config)
            if demo is not None:
                demos.append(demo)
                break
    return demos


def _one_demo(rng, unsafe: bool, epsilon: float, config: WorldConfig) -> Demo | None:
    ep = sample_episode(rng, config)
    ctg, succ = _cost_to_go(ep.walls, ep.goal, clean=not unsafe)
    near_wall = _near_wall(ep.walls)
    state = ep.start_state
    walls = ep.walls[None]
    goal = ep.goal[None]
    obs, tokens = [], []
    for _ in range(T_MAX - 1):
        obs.append(observe(walls, state[None], goal)[0])
        i, j = int(state[0]), int(state[1])
        if i == ep.goal[0] and j == ep.goal[1]:
            tokens.append(STOP)
            return Demo(np.asarray(obs), np.asarray(tokens), unsafe)
        node = (i * GRID + j) * 8 + int(state[2])
        if not np.isfinite(ctg[node]):
            return None
        if unsafe and rng.random() < epsilon:
            token = int(rng.choice([FWD, FAST, ROT_L, ROT_R, BACK]))
        else:
            totals = ctg[succ[node]] + 1.0
            if not unsafe:
                nxt = succ[node]
                ni, nj = nxt // (GRID * 8), (nxt // 8) % GRID
                extra = np.array([2.0 * near_wall[ni[k], nj[k]] if tok in (FWD, FAST) else 0.0
                                  for k, tok in enumerate(_PLAN_TOKENS)])
                totals = totals + extra
            totals = np.where(succ[node] == node, np.inf, totals)
            token = _PLAN_TOKENS[int(np.argmin(totals))]  # ties broken in _PLAN_TOKENS order
        tokens.append(token)
        state, _ = lattice_step(walls, state[None], np.array([token]))
        state = state[0]
    return None


# -- cache ---------------------------------------------------------------------------------------

def cache_dir() -> Path:
    """Cache for demonstrations and trained policies: ``$ICML26_SAFEDEC_CACHE``, else
    ``cache_root("safedec")`` (``$ICML26_CACHE/safedec`` or ``~/.cache/icml26/safedec``; never
    inside the repository)."""
    from icml26.core.cache import cache_root

    root = os.environ.get("ICML26_SAFEDEC_CACHE") or cache_root("safedec")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(payload: dict) -> str:
    """Short stable hash of a JSON-able payload."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_or_make_demos(n: int, seed: int, unsafe_frac: float = 0.15,
                       config: WorldConfig = WorldConfig()) -> list:
    """:func:`expert_demos` with ``default_rng(seed)``, cached on disk (atomic write)."""
    key = cache_key({"n": n, "seed": seed, "unsafe": unsafe_frac, "world": asdict(config), "version": 2})
    path = cache_dir() / f"demos_{key}.npz"
    if path.exists():
        with np.load(path) as z:
            lengths = z["lengths"]
            cuts = np.cumsum(lengths)[:-1]
            return [Demo(o, t, bool(u)) for o, t, u in
                    zip(np.split(z["obs"], cuts), np.split(z["tokens"], cuts), z["unsafe"])]
    demos = expert_demos(n, np.random.default_rng(seed), unsafe_frac=unsafe_frac, config=config)
    with atomic_file(path) as tmp, open(tmp, "wb") as handle:
        np.savez_compressed(handle, obs=np.concatenate([d.obs for d in demos]).astype(np.float32),
                            tokens=np.concatenate([d.tokens for d in demos]),
                            lengths=np.array([len(d.tokens) for d in demos]),
                            unsafe=np.array([d.unsafe for d in demos]))
    return demos
