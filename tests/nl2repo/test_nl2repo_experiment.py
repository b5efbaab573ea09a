"""Every part's quick config runs through the core runner and its claims pass."""

import pytest

from icml26.core.claims import evaluate
from icml26.core.runner import run_part
from icml26.nl2repo.experiment import EXPERIMENT as EXP


def _claims(part, result):
    return {c.id.split("/", 1)[1]: c for c in evaluate(EXP.part(part).claim_specs, result.measurements)}


@pytest.mark.parametrize("part,expected", [
    ("E1", ["oracle_complete", "oracle_deterministic", "oracle_full_rate", "null_zero", "stub_low",
            "partial_max_dev", "aggregate_dev"]),
    ("E2", ["controls_score_misses", "controls_label_misses", "forgery_vs_legacy", "hang_overrun_s",
            "forger_misses"]),
    ("E3", ["premature_finish", "step_limit"]),
    ("scaling", ["oracle_all_sizes"])])
def test_quick_part_claims_pass(part, expected, request):
    if part == "E2":   # E2's network and hidden-file claims need isolation (else: skip, stated)
        request.getfixturevalue("isolated")
    outcome = run_part(EXP, part, quick=True, backend="joblib", jobs=2)
    claims = {c.id.split("/", 1)[1]: c for c in outcome.result.claims}
    for key in expected:
        assert claims[key].passed and claims[key].quick_meaningful, (key, claims[key].measured)
    assert {c.kind for c in claims.values()} <= {"check", "control"}   # none is a paper claim
    assert not EXP.headline and outcome.result.tables


def _job(metrics):
    from icml26.core.experiment import JobResult

    return JobResult("E2", 0, None, metrics, 0.0)


def test_e2_without_isolation_reports_not_enforced():
    from icml26.nl2repo.experiment import E2Config, e2_summarize

    base = {"task_id": "kvlog", "score": 0.0, "expected_score": 0.0, "legacy_score": 0.0,
            "label": "collection_errors", "expected_label": "collection_errors",
            "unexpected_tests": 0, "agent_wall_s": 1.0, "isolation": "none", "flags": [],
            "warnings": ["running agents WITHOUT isolation"]}
    jobs = [_job({**base, "control": "net_probe", "agent_stdout": "NETPROBE 1.1.1.1:80 CONNECTED"}),
            _job({**base, "control": "peek", "agent_stdout": "PEEK readable_hidden_files=12"})]
    result = e2_summarize(jobs, E2Config(controls=("net_probe", "peek"), sandbox="none"))
    claims = _claims("E2", result)
    for key in ("net_blocked", "peek_blocked"):   # cannot be shown without isolation: not a pass
        assert claims[key].verdict == "INCOMPLETE" and "not enforced" in claims[key].note
    assert any("NOT enforced" in n for n in result.notes)


def test_partial_075_fully_passed_bar_is_the_analytic_value():
    """⌈0.75·3⌉ = 3: partial(0.75) completes the 3-module tasks, so F = ½ over unitconv/humanfmt/csvq/kvlog."""
    from icml26.nl2repo.experiment import E1Config, e1_summarize

    scores = {"unitconv": 1.0, "humanfmt": 0.6951, "csvq": 0.8986, "kvlog": 1.0}
    recs = [{"task_id": t, "agent": "partial:0.75", "kind": "partial", "fraction": 0.75, "score": s,
             "expected": s, "label": "partial", "install_ok": True, "n_passed": 1, "n_total": 2,
             "total_s": 1.0, "category": "c", "isolation": "unshare"} for t, s in scores.items()]
    result = e1_summarize([_job(r) for r in recs], E1Config())
    analytic = _claims("E1", result)["partial75_full_rate_dev"]
    assert analytic.passed and analytic.measured == 0 and "analytic 0.5" in analytic.note
    assert "kvlog, unitconv" in analytic.note
    assert not any("spec's literal bar" in n for n in result.notes)
    spec = e1_summarize([_job(r) for r in recs], E1Config(spec_partial_bar=True))
    assert any("spec's literal bar" in n and "FAIL" in n for n in spec.notes)   # the old bar, reported
    recs[0]["score"] = 0.9                              # a harness that missed one module would fail
    result = e1_summarize([_job(r) for r in recs], E1Config())
    assert not _claims("E1", result)["partial75_full_rate_dev"].passed
