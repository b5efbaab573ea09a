"""Quick configs of every part through the runner: the table's claims by id, their kinds and
controls, determinism, and that the gates can flip (a planted control reads NOT EARNED)."""

import numpy as np
import pytest

from icml26.core.claims import evaluate
from icml26.core.runner import run_part
from icml26.spectral_rl.experiment import EXPERIMENT


@pytest.fixture(scope="module")
def experiment():
    return EXPERIMENT


def _by_id(outcome):
    return outcome.claims_by_id()               # raises on a failed job or summarize


def test_bounds_quick_checks_pass_and_b1_is_earned_against_random_features(experiment):
    outcome = run_part(experiment, "bounds", quick=True)
    claims = _by_id(outcome)
    assert set(claims) == {s.id for s in experiment.part("bounds").claim_specs}
    assert all(c.passed and c.kind == "check" for c in claims.values()), claims
    b1 = claims["bounds/b1_violations"]
    assert b1.control["key"] == "b1_violations_random" and b1.control["measured"] > 0
    assert "no features" in claims["bounds/b34_violations"].note
    assert outcome.result.figures


def test_trend_quick_gates_on_the_features(experiment):
    outcome = run_part(experiment, "trend", quick=True)
    claims = _by_id(outcome)
    assert set(claims) == {s.id for s in experiment.part("trend").claim_specs}
    for policy in ("uniform", "biased"):
        assert claims[f"trend/e1_spearman_{policy}"].kind == "control"
        assert claims[f"trend/bounds_monotone_{policy}"].kind == "check"
        assert claims[f"trend/bounds_monotone_{policy}"].passed
        # the error of random features falls with λ₂ as well: not evidence for the Laplacian
        lap = claims[f"trend/spearman_lap_{policy}"]
        assert lap.control["key"] == f"spearman_rand_{policy}"
        adv = claims[f"trend/advantage_spearman_{policy}"]
        assert adv.kind == "paper"
        # its positive control: the same statistic for the exact eigenvectors (required)
        oracle = claims[f"trend/advantage_spearman_pvf_{policy}"]
        assert oracle.kind == "control"
        assert oracle.verdict == "PASS" or adv.verdict == "INCOMPLETE"
    assert experiment.table.headline == "trend/advantage_spearman_uniform"
    assert any("same goal cells" in note for note in outcome.result.notes)


def test_trend_keeps_the_random_goal_rule(experiment):
    new = _by_id(run_part(experiment, "trend", quick=True))
    old = _by_id(run_part(experiment, "trend", quick=True, overrides={"goal_rule": "random"}))
    gate = "trend/e1_spearman_uniform"
    assert "random-goal variant" in new[gate].note and new[gate].measured == -1.0
    assert "random goals, worst seed" in old[gate].note


def test_trend_lap_claim_is_not_earned_when_random_features_show_the_trend(experiment):
    specs = [s for s in experiment.part("trend").claim_specs if s.id == "trend/spearman_lap_uniform"]
    assert evaluate(specs, {"spearman_lap_uniform": -0.95, "spearman_rand_uniform": -0.1}
                    )[0].verdict == "PASS"
    assert evaluate(specs, {"spearman_lap_uniform": -0.95, "spearman_rand_uniform": -1.0}
                    )[0].verdict == "NOT EARNED"
    assert evaluate(specs, {"spearman_lap_uniform": -0.95})[0].verdict == "INCOMPLETE"


def test_estimation_quick_bounds_hold_and_the_unweighted_control_does_not_converge(experiment):
    outcome = run_part(experiment, "estimation", quick=True)
    claims = _by_id(outcome)
    assert claims["estimation/b5_share"].passed and claims["estimation/b6_share"].passed
    for policy in ("uniform", "biased"):
        slope = claims[f"estimation/slope_{policy}"]
        assert slope.control["key"] == f"slope_unweighted_{policy}"
        assert slope.control["meets_bar"] is False
    assert "unvisited states by T" in claims["estimation/slope_biased"].note
    assert len(outcome.result.tables) == 2


def test_estimation_keeps_the_norm_diff_rule(experiment):
    new = _by_id(run_part(experiment, "estimation", quick=True))
    old = _by_id(run_part(experiment, "estimation", quick=True,
                          overrides={"slope_rule": "norm_diff"}))
    assert "bar gates ‖sin Θ‖_F" in new["estimation/slope_biased"].note
    assert "bar gates" not in old["estimation/slope_biased"].note
    assert new["estimation/slope_biased"].measured != old["estimation/slope_biased"].measured


def test_misread_claims_are_earned_against_the_uniform_policy_and_deterministic(experiment):
    first = run_part(experiment, "misread", quick=True)
    second = run_part(experiment, "misread", quick=True)
    claims = _by_id(first)
    assert all(c.passed for c in claims.values()), claims
    assert claims["misread/misread_const_residual"].control["meets_bar"] is False
    assert first.jobs[0].metrics == second.jobs[0].metrics


def test_scaling_quick_runs(experiment):
    claims = _by_id(run_part(experiment, "scaling", quick=True))
    assert set(claims) == {"scaling/dense_slope", "scaling/count_slope"}
    assert all(c.kind == "check" for c in claims.values())


def test_all_goal_errors_match_a_per_goal_computation():
    from icml26.spectral_rl import GridWorld
    from icml26.spectral_rl.baselines import random_features, rho_orthonormalize
    from icml26.spectral_rl.bounds import projection_error, rho_norm
    from icml26.spectral_rl.experiment import all_goal_errors
    from icml26.spectral_rl.laplacian import laplacian_eigenpairs
    from icml26.spectral_rl.mdp import value_function

    P = GridWorld.two_rooms(5, 9, door=1).transition("biased")
    _, U, rho = laplacian_eigenpairs(P)
    R = random_features(P.shape[0], 3, rho, 0)
    got = all_goal_errors(P, rho, 0.9, {"lap": U[:, :3], "rand": R})
    for name, F in (("lap", U[:, :3]), ("rand", R)):
        errs = []
        for g in range(P.shape[0]):
            r = np.zeros(P.shape[0])
            r[g] = 1.0
            V = value_function(P, r, 0.9)
            errs.append(projection_error(V, rho_orthonormalize(F, rho), rho)
                        / rho_norm(r - rho @ r, rho))
        assert got[name] == pytest.approx(np.mean(errs), rel=1e-9)


def test_unweighted_count_laplacian_is_the_normalized_laplacian_of_the_seen_graph():
    from icml26.spectral_rl import GridWorld, sample_trajectories
    from icml26.spectral_rl.baselines import proto_value_functions, unweighted_count_laplacian

    P = GridWorld.open_room(3, 4).transition("uniform")
    s, s2 = sample_trajectories(P, 20_000, rng=0)
    N = unweighted_count_laplacian(s, s2, 12)
    assert np.allclose(N, N.T) and np.allclose(np.diag(N), 1.0)
    vecs = np.linalg.eigh(N)[1][:, :3]
    pvf = proto_value_functions(P, 3, normalized=True)
    # every edge seen: the same subspace as the normalized proto-value functions
    cos = np.linalg.svd(vecs.T @ (pvf / np.linalg.norm(pvf, axis=0)), compute_uv=False)
    assert cos.min() > 1 - 1e-8


def test_graph_drawing_fit_leaves_the_global_torch_generator_alone():
    torch = pytest.importorskip("torch")
    from icml26.spectral_rl import GridWorld, sample_trajectories
    from icml26.spectral_rl.baselines import GraphDrawingFeatures

    P = GridWorld.open_room(3, 3).transition("uniform")
    s, s2 = sample_trajectories(P, 2000, rng=0)
    before = torch.get_rng_state().clone()
    GraphDrawingFeatures(n_components=2, n_steps=20, batch_size=32).fit(s, s2, 9)
    assert torch.equal(before, torch.get_rng_state())


def test_graph_drawing_takes_random_state_and_warns_on_the_old_seed():
    pytest.importorskip("torch")
    from icml26.spectral_rl import GridWorld, sample_trajectories
    from icml26.spectral_rl.baselines import GraphDrawingFeatures

    P = GridWorld.open_room(3, 3).transition("uniform")
    s, s2 = sample_trajectories(P, 2000, rng=0)
    kwargs = dict(n_components=2, n_steps=20, batch_size=32)
    new = GraphDrawingFeatures(random_state=3, **kwargs).fit(s, s2, 9).features_
    with pytest.warns(FutureWarning, match="random_state"):  # at fit, as scikit-learn warns
        old = GraphDrawingFeatures(seed=3, **kwargs).fit(s, s2, 9)
    np.testing.assert_array_equal(old.features_, new)
    assert not np.array_equal(GraphDrawingFeatures(random_state=4, **kwargs).fit(s, s2, 9).features_, new)
    with pytest.raises(ValueError, match="random_state"):
        GraphDrawingFeatures(random_state=-1, **kwargs).fit(s, s2, 9)
