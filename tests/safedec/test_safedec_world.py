"""LatticeNav world, its specs, the policy network and the exact sequence laws."""

import numpy as np
import pytest
import torch

from icml26.safedec import (Always, LatticeDynamics, LatticeNavEnv, NavTransformer, Predicate, SafeDecoder,
                            exact_sequence_laws, make_spec, sample_episode)
from icml26.safedec.data import (BACK, CELL, FAST, FWD, GRID, ROT_L, ROT_R, STOP, WAIT, expert_demos,
                                 lattice_step, observe)
from icml26.safedec.exact import total_variation


def _open_walls(b=1):
    return np.zeros((b, GRID, GRID), dtype=bool)


def test_lattice_moves_rotations_and_speed():
    state = np.array([[5.0, 5.0, 1.0, 0.0]])  # heading (1, 1)
    walls = _open_walls()
    expect = {FWD: [6, 6, 1, CELL * np.sqrt(2)], FAST: [7, 7, 1, 2 * CELL * np.sqrt(2)],
              BACK: [4, 4, 1, CELL * np.sqrt(2)], ROT_L: [5, 5, 2, 0], ROT_R: [5, 5, 0, 0],
              STOP: [5, 5, 1, 0], WAIT: [5, 5, 1, 0]}
    for tok, want in expect.items():
        nxt, blocked = lattice_step(walls, state, np.array([tok]))
        np.testing.assert_allclose(nxt[0], want)
        assert not blocked[0]


def test_diagonal_move_needs_both_orthogonal_neighbours_and_fast_checks_middle_cell():
    walls = _open_walls()
    walls[0, 6, 5] = True  # orthogonal neighbour of the diagonal step (5,5)->(6,6)
    nxt, blocked = lattice_step(walls, np.array([[5.0, 5.0, 1.0, 0.0]]), np.array([FWD]))
    assert blocked[0] and nxt[0, :2].tolist() == [5, 5]
    walls = _open_walls()
    walls[0, 6, 5] = True  # middle cell of FAST along +x
    nxt, blocked = lattice_step(walls, np.array([[5.0, 5.0, 0.0, 0.0]]), np.array([FAST]))
    assert blocked[0] and nxt[0, 3] == 0.0
    nxt, blocked = lattice_step(_open_walls(), np.array([[31.0, 5.0, 0.0, 0.0]]), np.array([FWD]))
    assert blocked[0]


def test_predict_all_equals_true_dynamics_per_token():
    ep = sample_episode(np.random.default_rng(3))
    dyn = LatticeDynamics(ep.walls[None])
    state = ep.start_state[None]
    preds = dyn.predict_all(state)
    for tok in range(7):
        np.testing.assert_array_equal(preds[0, tok], lattice_step(ep.walls[None], state, np.array([tok]))[0][0])


def test_episodes_are_deterministic_and_feasible():
    a, b = sample_episode(np.random.default_rng(5)), sample_episode(np.random.default_rng(5))
    assert np.array_equal(a.walls, b.walls) and np.array_equal(a.start, b.start)
    for fam in ("avoid", "geofence"):
        assert make_spec([a], fam).satisfied(a.start_state[None, None]).all()
    assert np.linalg.norm((a.goal - a.start[:2]) * CELL) >= 4.0


def test_avoid_spec_predicates_match_direct_computation():
    ep = sample_episode(np.random.default_rng(7))
    spec = make_spec([ep], "avoid")
    rng = np.random.default_rng(0)
    cells = rng.integers(0, GRID, size=(50, 2))
    trace = np.concatenate([cells, np.zeros((50, 1)), np.full((50, 1), 0.5)], 1)[None]
    got = spec.children[0].robustness_trace(trace)[0]
    px, py = cells[:, 0] * CELL, cells[:, 1] * CELL
    want = ep.clearance[cells[:, 0], cells[:, 1]]
    for z in ep.zones:
        if np.all(np.isfinite(z)):
            want = np.minimum(want, np.maximum.reduce([z[0] - px, px - z[1], z[2] - py, py - z[3]]))
    if ep.slow is not None:
        s = ep.slow
        want = np.minimum(want, np.maximum(np.maximum.reduce([s[0] - px, px - s[1], s[2] - py, py - s[3]]),
                                           0.4 - 0.5))
    np.testing.assert_allclose(got, want)


def test_observation_layout():
    ep = sample_episode(np.random.default_rng(2))
    obs = observe(ep.walls[None], ep.start_state[None], ep.goal[None])
    assert obs.shape == (1, 94)
    assert obs[0, 5 + int(ep.start[2])] == 1.0 and obs[0, 5:13].sum() == 1.0
    assert obs[0, 13 + 40] == 0.0  # centre of the 9×9 patch is the robot's (free) cell


def test_env_success_requires_stop_near_goal():
    ep = sample_episode(np.random.default_rng(4))
    env = LatticeNavEnv([ep])
    env.reset()
    env.states[0, :2] = ep.goal
    _, _, done, info = env.step(np.array([STOP]))
    assert done[0] and info["success"][0]


def test_expert_demos_end_with_stop_at_goal():
    demos = expert_demos(4, np.random.default_rng(0), unsafe_frac=0.5)
    assert sum(d.unsafe for d in demos) == 2
    for d in demos:
        assert d.tokens[-1] == STOP and d.obs.shape == (len(d.tokens), 94)
        assert abs(d.obs[-1, 4]) < 1e-12  # ‖g − p‖ = 0 when stopping


def test_incremental_policy_matches_full_forward():
    torch.manual_seed(0)
    net = NavTransformer().eval()
    obs, prev = torch.randn(3, 6, 94), torch.randint(0, 8, (3, 6))
    with torch.no_grad():
        full = net(obs, prev)
        cache = net.start()
        inc = torch.stack([net.step(cache, obs[:, t], prev[:, t]) for t in range(6)], 1)
    torch.testing.assert_close(inc, full, atol=1e-5, rtol=1e-5)


def test_hcd_keeps_random_policy_safe_on_lattice_nav():
    episodes = [sample_episode(np.random.default_rng([9, k])) for k in range(8)]
    env = LatticeNavEnv(episodes)
    spec = make_spec(episodes, "avoid")
    dec = SafeDecoder(None, spec, env.dynamics, fallback_token=ROT_L)
    _, states = env.reset()
    traj = [states]
    gen = torch.Generator().manual_seed(0)
    for _ in range(40):
        logits = torch.randn(8, 7, generator=gen) * 2
        logits[:, STOP] = -np.inf
        tokens, _ = dec.decode(logits, states, torch.rand(8, generator=gen))
        _, states, _, _ = env.step(tokens.numpy())
        traj.append(states)
    assert spec.satisfied(np.stack(traj, 1)).all()


class _Line:
    def predict_all(self, s):
        return s[:, None, :] + np.array([[-1.0], [0.0], [1.0]])[None]


def test_exact_laws_sum_to_one_and_q_is_conditioned_policy():
    spec = Always(Predicate("x<=1", lambda x: 1.0 - x[..., 0]))
    rng = np.random.default_rng(0)
    table = rng.normal(size=(3, 3))
    laws = exact_sequence_laws(lambda s, t: np.repeat(table[t][None], len(s), 0), spec, _Line(),
                               np.array([0.0]), 3, fallback_token=1)
    for k in ("pi", "Q", "hcd", "filter", "rcd"):
        assert laws[k].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(laws["Q"], np.where(laws["sat"], laws["pi"], 0) / laws["pi"][laws["sat"]].sum())
    assert laws["hcd"][~laws["sat"]].sum() == 0.0 and laws["filter"][~laws["sat"]].sum() == 0.0
    assert total_variation(laws["Q"], laws["Q"]) == 0.0
