"""Every part's quick config runs through the core runner and its claims pass."""

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part

EXP = get_experiment("nl2repo")


@pytest.mark.parametrize("part,expected", [
    ("E1", ["E1 oracle scores 1.0", "E1 oracle per-test outcomes identical", "E1 fully-passed rate of oracle",
            "E1 null scores 0", "E1 partial(f) equals analytic s*", "E1 aggregate A"]),
    ("E2", ["E2 every control scores 0", "E2 every control gets its expected failure label",
            "E2 forgery: ours 0 vs official regex scorer 1.0", "E2 hang: timeout"]),
    ("E3", ["E3 finish at step", "E3 never finishing ⇒ step_limit"]),
    ("scaling", ["scaling: log-log slope", "scaling: oracle scores 1.0"])])
def test_quick_part_claims_pass(part, expected):
    outcome = run_part(EXP, part, quick=True, backend="joblib", jobs=2)
    assert not outcome.failed_jobs, outcome.failed_jobs[0].error
    claims = {c.name: c for c in outcome.result.claims}
    for prefix in expected:
        matching = [c for name, c in claims.items() if name.startswith(prefix)]
        assert matching, f"claim {prefix!r} missing; have {list(claims)}"
        assert all(c.passed for c in matching), [(c.name, c.measured, c.bar) for c in matching]
    assert outcome.result.tables
