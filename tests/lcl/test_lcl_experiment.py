"""Quick configs of every part through the runner: structure, and the claims' wiring.

The quick configs are tiny (60 clones, 6 epochs, a 64-32 network), so the verdicts of the
comparative claims are not asserted here: the full run reports them.
"""

import math

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("lcl")


def test_fate_quick_run_reports_every_claim(experiment):
    outcome = run_part(experiment, "fate", quick=True)
    claims = outcome.claims_by_name()
    assert len(claims) == 9
    assert all(math.isfinite(float(c.measured)) for c in claims.values())
    # the uniform reference and the permuted control are both present and sane
    assert claims["A negative control: kl_gt(LCL, permuted clones) / uniform"].measured > 0
    assert any("PCA (32)" in note for note in outcome.result.notes)
    assert outcome.result.figures and outcome.result.tables


def test_clone_quick_run_reports_every_claim(experiment):
    outcome = run_part(experiment, "clone", quick=True)
    claims = outcome.claims_by_name()
    assert len(claims) == 4
    ch = claims["B train Calinski-Harabasz: LCL / PCA-10"]
    assert math.isfinite(ch.measured) and ch.bar == "≥ 10"


def test_scaling_quick_run_checks_the_batch_count(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = outcome.claims_by_name()
    slope = next(c for name, c in claims.items() if name.startswith("scaling: log-log"))
    assert math.isfinite(slope.measured) and slope.bar == "≤ 1.15"
    batches = next(c for name, c in claims.items() if name.startswith("scaling: batches"))
    assert batches.passed


def test_semi_part_is_opt_in(experiment):
    assert [p.name for p in experiment.select()] == ["fate", "clone", "scaling"]
