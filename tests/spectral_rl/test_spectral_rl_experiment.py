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
