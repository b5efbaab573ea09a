"""Quick configs of every part through the runner: structure, determinism and claims."""

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("spectral_rl")


def test_bounds_quick_claims_all_pass(experiment):
    outcome = run_part(experiment, "bounds", quick=True)
    claims = outcome.claims_by_name()
    assert len(claims) == 5
    assert all(c.passed for c in claims.values()), {n: c.measured for n, c in claims.items()}
    assert outcome.result.figures


def test_trend_quick_reports_both_policies(experiment):
    outcome = run_part(experiment, "trend", quick=True)
    names = list(outcome.claims_by_name())
    assert any("uniform" in n for n in names) and any("biased" in n for n in names)
    claims = outcome.claims_by_name()
    assert claims["E2 B3 and B4 strictly decreasing in λ₂, uniform"].passed
    assert any("same goal cells" in note for note in outcome.result.notes)


def test_estimation_quick_bounds_hold(experiment):
    outcome = run_part(experiment, "estimation", quick=True)
    claims = outcome.claims_by_name()
    assert claims["E3 share of runs where B5 (Davis–Kahan) holds"].passed
    assert claims["E3 share of runs where B6 (end to end) holds"].passed
    assert len(outcome.result.tables) == 2


def test_misread_claims_pass_and_the_run_is_deterministic(experiment):
    first = run_part(experiment, "misread", quick=True)
    second = run_part(experiment, "misread", quick=True)
    assert all(c.passed for c in first.result.claims)
    assert first.jobs[0].metrics == second.jobs[0].metrics


def test_scaling_quick_runs(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    assert len(outcome.result.claims) == 2


def test_trend_gates_on_every_goal_cell_and_keeps_the_random_goal_rule(experiment):
    new = run_part(experiment, "trend", quick=True).claims_by_name()
    old = run_part(experiment, "trend", quick=True, overrides={"goal_rule": "random"}).claims_by_name()
    gate = "E2 Spearman(λ₂, e_1 averaged over every goal cell), uniform"
    assert gate in new and "random-goal variant" in new[gate].note and new[gate].measured == -1.0
    assert any("random goals), uniform (worst seed)" in n for n in old) and gate not in old


def test_estimation_gates_the_biased_slope_on_sin_theta(experiment):
    new = run_part(experiment, "estimation", quick=True).claims_by_name()
    old = run_part(experiment, "estimation", quick=True, overrides={"slope_rule": "norm_diff"}).claims_by_name()
    assert "E3 slope of log‖N̂ − N‖₂ vs log T, uniform" in new
    biased = [n for n in new if n.startswith("E3 slope of log‖sin Θ‖_F") and n.endswith("biased")]
    assert biased and "unvisited states by T" in new[biased[0]].note
    assert "E3 slope of log‖N̂ − N‖₂ vs log T, biased" in old
