"""Every part's quick config runs through the core runner and its claims pass."""

import pytest

from icml26.core.runner import run_part
from icml26.nl2repo.experiment import EXPERIMENT as EXP


@pytest.mark.parametrize("part,expected", [
    ("E1", ["E1 oracle scores 1.0", "E1 oracle per-test outcomes identical", "E1 fully-passed rate of oracle",
            "E1 null scores 0", "E1 partial(f) equals analytic s*", "E1 aggregate A"]),
    ("E2", ["E2 every control scores 0", "E2 every control gets its expected failure label",
            "E2 forgery: ours 0 vs official regex scorer 1.0", "E2 hang: timeout"]),
    ("E3", ["E3 finish at step", "E3 never finishing ⇒ step_limit"]),
    ("scaling", ["scaling: log-log slope", "scaling: oracle scores 1.0"])])
def test_quick_part_claims_pass(part, expected, request):
    if part == "E2":   # E2's network and hidden-file claims need isolation (else: skip, stated)
        request.getfixturevalue("isolated")
    outcome = run_part(EXP, part, quick=True, backend="joblib", jobs=2)
    claims = outcome.claims_by_name()
    for prefix in expected:
        matching = [c for name, c in claims.items() if name.startswith(prefix)]
        assert matching, f"claim {prefix!r} missing; have {list(claims)}"
        assert all(c.passed for c in matching), [(c.name, c.measured, c.bar) for c in matching]
    assert all(name.endswith(" [harness check]") and "not a claim of the paper" in c.note
               for name, c in claims.items())      # none of them is a claim of the paper
    assert outcome.result.tables


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
    claims = {c.name.split(":")[0]: c for c in result.claims}
    assert claims["E2 net_probe"].measured == "not enforced" and not claims["E2 net_probe"].passed
    assert claims["E2 peek"].measured == "not enforced" and not claims["E2 peek"].passed
    assert any("NOT enforced" in n for n in result.notes)


def test_partial_075_fully_passed_bar_is_the_analytic_value():
    """⌈0.75·3⌉ = 3: partial(0.75) completes the 3-module tasks, so F = ½ over unitconv/humanfmt/csvq/kvlog."""
    from icml26.nl2repo.experiment import E1Config, e1_summarize

    scores = {"unitconv": 1.0, "humanfmt": 0.6951, "csvq": 0.8986, "kvlog": 1.0}
    recs = [{"task_id": t, "agent": "partial:0.75", "kind": "partial", "fraction": 0.75, "score": s,
             "expected": s, "label": "partial", "install_ok": True, "n_passed": 1, "n_total": 2,
             "total_s": 1.0, "category": "c", "isolation": "unshare"} for t, s in scores.items()]
    claims = {c.name: c for c in e1_summarize([_job(r) for r in recs], E1Config()).claims}
    analytic = claims["E1 fully-passed rate of partial(0.75) = analytic mean 1[⌈0.75·K⌉ = K] [harness check]"]
    assert analytic.passed and analytic.bar == "= 0.5" and "kvlog, unitconv" in analytic.note
    assert not any("spec bar" in name for name in claims)
    spec = {c.name: c for c in e1_summarize([_job(r) for r in recs], E1Config(spec_partial_bar=True)).claims}
    assert not spec["E1 fully-passed rate of partial(0.75) (spec bar = 0) [harness check]"].passed   # old bar
    recs[0]["score"] = 0.9                              # a harness that missed one module would fail
    claims = {c.name: c for c in e1_summarize([_job(r) for r in recs], E1Config()).claims}
    assert not claims["E1 fully-passed rate of partial(0.75) = analytic mean 1[⌈0.75·K⌉ = K] [harness check]"].passed
