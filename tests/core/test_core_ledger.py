"""The ledger of full-run verdicts (issue #41): recording, the check against the code, the
README blocks, and the shipped ledgers themselves."""

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from icml26.cli import app
from icml26.core import ledger
from icml26.core.catalog import method_folders
from icml26.core.example import EXPERIMENT
from icml26.core.experiment import Claim, Result
from icml26.core.report import write_report
from icml26.core.runner import run_experiment

runner = CliRunner()


@pytest.fixture
def recorded(example, tmp_path):
    """The example's full run recorded into a ledger under a temporary package root."""
    folder = tmp_path / "pkg" / "example"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "experiment.py").write_text("")
    report = tmp_path / "report"
    write_report([run_experiment(EXPERIMENT)], report, command="icml26 run example",
                 invocation={"slug": "example", "quick": False, "set": {}, "seeds": None})
    ledger.record_report(report, root=tmp_path / "pkg")
    return tmp_path / "pkg"


def test_a_full_run_is_recorded_with_its_provenance(recorded):
    led = ledger.load("example", recorded)
    (part,) = led["parts"]
    assert part["part"] == "rate" and part["default"] and part["seeds"] == [0, 1, 2]
    (claim,) = part["claims"]
    assert claim["id"] == "rate/log-log slope of error in n" and claim["verdict"] == "PASS"
    run = led["runs"][part["run"]]
    assert run["command"] == "icml26 run example" and run["created"]
    assert run["cpu_seconds"] > 0 and run["wall_seconds"] > 0 and run["machine"]["cpu_count"]
    assert "commit" in run and led["headline"] == claim["id"]
    assert ledger.verdict_text(led) == "1/1 pass"
    jobs = ledger.load_jobs("example", recorded)["rate"]
    assert len(jobs) == 9 and all("mean_abs_error" in j["metrics"] for j in jobs)


def test_recording_the_same_run_twice_gives_the_same_files(recorded, tmp_path):
    before = ledger.ledger_hash("example", recorded)
    ledger.record_report(tmp_path / "report", root=recorded)
    assert ledger.ledger_hash("example", recorded) == before


def test_the_recorded_ledger_is_current(recorded):
    assert ledger.check("example", recorded) == {"current": True, "reasons": [],
                                                 "parts": ["rate"]}


def test_a_changed_bar_makes_the_ledger_stale(recorded, monkeypatch):
    original = EXPERIMENT.parts[0].summarize

    def looser(jobs, config):
        result = original(jobs, config)
        c = result.claims[0]
        return Result(tables=result.tables, figures=result.figures, notes=result.notes,
                      claims=[Claim.between(c.name, c.measured, -0.7, -0.3, paper=c.paper)])

    monkeypatch.setattr(EXPERIMENT.parts[0], "summarize", looser)
    status = ledger.check("example", recorded)
    assert not status["current"]
    assert any("bar '∈ [-0.6, -0.4]' → '∈ [-0.7, -0.3]'" in r for r in status["reasons"])


def test_a_gone_claim_a_new_config_or_new_seeds_make_it_stale(recorded, monkeypatch):
    part = EXPERIMENT.parts[0]
    monkeypatch.setattr(part, "summarize", lambda jobs, config: Result(
        claims=[Claim.at_least("another", 1.0, 0.0)]))
    reasons = ledger.check("example", recorded)["reasons"]
    assert any("no longer produced" in r for r in reasons) and any("new claim" in r for r in reasons)
    monkeypatch.undo()
    monkeypatch.setattr(part, "full", dataclasses.replace(part.full, repetitions=100))
    assert any("repetitions: 200 → 100" in r for r in ledger.check("example", recorded)["reasons"])
    monkeypatch.undo()
    monkeypatch.setattr(part, "seeds", (0, 1))
    assert any("seeds" in r for r in ledger.check("example", recorded)["reasons"])


def test_rederive_rewrites_verdicts_only_when_the_measurements_stay(recorded, monkeypatch):
    original = EXPERIMENT.parts[0].summarize

    def stricter_reading(jobs, config):  # same measurement and bar, read as not earned
        result = original(jobs, config)
        c = result.claims[0]
        return Result(tables=result.tables, figures=result.figures, notes=result.notes,
                      claims=[dataclasses.replace(c, not_earned=True, note="control passes")])

    assert ledger.rederive("example", "no rule changed", recorded) == []
    assert "rederived" not in ledger.load("example", recorded)
    monkeypatch.setattr(EXPERIMENT.parts[0], "summarize", stricter_reading)
    assert not ledger.check("example", recorded)["current"]
    with pytest.raises(ledger.LedgerError, match="reason"):
        ledger.rederive("example", "  ", recorded)
    changes = ledger.rederive("example", "controls read by interval", recorded)
    assert changes == ["rate/log-log slope of error in n: PASS → NOT EARNED"]
    led = ledger.load("example", recorded)
    assert led["parts"][0]["claims"][0]["verdict"] == "NOT EARNED"
    (entry,) = led["rederived"]
    assert entry["reason"] == "controls read by interval" and entry["changes"] == changes
    assert ledger.check("example", recorded)["current"]

    def other_measurement(jobs, config):
        result = original(jobs, config)
        c = result.claims[0]
        return Result(claims=[dataclasses.replace(c, measured=c.measured + 1.0)])

    monkeypatch.setattr(EXPERIMENT.parts[0], "summarize", other_measurement)
    with pytest.raises(ledger.LedgerError, match="measured"):
        ledger.rederive("example", "not a reading change", recorded)


def test_migrate_renames_claims_from_the_same_jobs_and_refuses_a_changed_verdict(recorded, monkeypatch):
    original = EXPERIMENT.parts[0].summarize

    def renamed(jobs, config):  # the same measurement under a new id and kind, plus a new one
        result = original(jobs, config)
        c = result.claims[0]
        return Result(tables=result.tables, notes=result.notes, claims=[
            dataclasses.replace(c, name="slope", id="rate/slope", kind="check"),
            Claim.at_least("spread", 0.5, 0.0)])

    monkeypatch.setattr(EXPERIMENT.parts[0], "summarize", renamed)
    assert not ledger.check("example", recorded)["current"]
    with pytest.raises(ledger.LedgerError, match="reason"):
        ledger.migrate("example", " ", root=recorded)
    lines = ledger.migrate("example", "claims as data", root=recorded)
    assert lines == ["rate/log-log slope of error in n (PASS) → rate/slope (PASS)",
                     "rate/spread: new (PASS)"]
    led = ledger.load("example", recorded)
    assert [c["id"] for c in led["parts"][0]["claims"]] == ["rate/slope", "rate/spread"]
    assert led["rederived"][-1]["reason"] == "claims as data"
    assert ledger.check("example", recorded)["current"]

    def flipped(jobs, config):  # the same measurement read against another bar: a new verdict
        c = renamed(jobs, config).claims[0]
        return Result(claims=[dataclasses.replace(c, passed=False)])

    monkeypatch.setattr(EXPERIMENT.parts[0], "summarize", flipped)
    with pytest.raises(ledger.LedgerError, match="verdict PASS → FAIL"):
        ledger.migrate("example", "claims as data", root=recorded)
    monkeypatch.setattr(EXPERIMENT.parts[0], "summarize", renamed)
    monkeypatch.setattr(EXPERIMENT.parts[0], "full", dataclasses.replace(EXPERIMENT.parts[0].full,
                                                                        repetitions=100))
    with pytest.raises(ledger.LedgerError, match="repetitions"):   # another config: a new run
        ledger.migrate("example", "claims as data", root=recorded)


def test_quick_or_set_or_seeds_runs_are_not_recorded(example, tmp_path):
    (tmp_path / "pkg" / "example").mkdir(parents=True)
    cases = {"quick": (dict(quick=True), {"quick": True}),
             "set": ({}, {"set": {"repetitions": "20"}}),
             "seeds": ({}, {"seeds": 2})}
    for name, (run_kw, inv) in cases.items():
        report = tmp_path / name
        write_report([run_experiment(EXPERIMENT, **run_kw)], report, invocation=inv)
        with pytest.raises(ledger.LedgerError, match=name):
            ledger.record_report(report, root=tmp_path / "pkg")
    assert ledger.load("example", tmp_path / "pkg") is None


def test_compare_names_what_changed(recorded):
    led = ledger.load("example", recorded)
    exp = {"parts": [{"part": "rate", "claims": [
        dict(led["parts"][0]["claims"][0], measured=-0.9, verdict="FAIL", passed=False)]}]}
    (row,) = ledger.compare(led, exp)
    assert row["recorded_verdict"] == "PASS" and row["new_verdict"] == "FAIL" and not row["held"]


def test_readme_blocks_are_generated_between_the_markers(recorded, tmp_path):
    readme = recorded / "example" / "README.md"
    readme.write_text(f"# example\n\nintro\n\n{ledger.BEGIN} -->\nold typed table\n"
                      f"{ledger.END}\n\nafter\n")
    top = tmp_path / "TOP.md"
    top.write_text(f"# top\n{ledger.BEGIN} -->\n{ledger.END}\n")
    changed, missing = ledger.update_readmes(recorded, check_only=True, top=top)
    assert readme in changed and top in changed and not missing
    assert "old typed table" in readme.read_text()          # check_only writes nothing
    ledger.update_readmes(recorded, top=top)
    text = readme.read_text()
    assert "old typed table" not in text and "intro" in text and "after" in text
    assert "**Recorded full run: 1/1 pass**" in text
    assert "| log-log slope of error in n | -0.5 |" in text and "| PASS |" in text
    assert ledger.update_readmes(recorded, check_only=True, top=top)[0] == []


def test_record_refuses_quick_and_verify_needs_a_ledger(example):
    bad = runner.invoke(app, ["run", "example", "--quick", "--record"])
    assert bad.exit_code == 2 and "--record" in bad.output
    none = runner.invoke(app, ["verify", "example"])
    assert none.exit_code == 2 and "no recorded ledger" in none.output


SHIPPED = [s for s in method_folders() if ledger.load(s) is not None]


@pytest.mark.parametrize("slug", SHIPPED)
def test_shipped_ledger_matches_the_code(slug):
    """Fails when a bar, a claim, a config or the seeds changed since the full run was
    recorded: rerun it with `icml26 run <slug> --record`."""
    status = ledger.check(slug)
    assert status["current"], f"{slug}'s ledger is stale: " + "; ".join(status["reasons"])


def test_shipped_readmes_show_the_current_ledger():
    """Every method README and the top-level README have a ledger block, and each block is what
    the ledger gives now: regenerate with `python -m icml26.core.ledger readme`."""
    changed, missing = ledger.update_readmes(check_only=True)
    assert not missing, f"README without a ledger block: {missing}"
    assert not changed, f"out-of-date ledger block in {changed}; run python -m icml26.core.ledger readme"


def test_a_report_names_the_code_at_the_start_of_its_run(example, tmp_path):
    """A long run names the commit it started from; where the checkout moved meanwhile, the end
    state is kept beside it (commit_end), never in its place."""
    outcome = run_experiment(EXPERIMENT)
    start = {"commit": "a" * 40, "dirty": []}
    report = write_report([outcome], tmp_path / "r", command="icml26 run example", provenance=start)
    data = json.loads((report / "results.json").read_text())
    assert data["commit"] == "a" * 40 and data["dirty"] == []
    now = ledger.git_provenance()
    if now["commit"] is not None:
        assert data["commit_end"] == now["commit"]
    same = write_report([outcome], tmp_path / "s", command="icml26 run example", provenance=now)
    data = json.loads((same / "results.json").read_text())
    assert "commit_end" not in data and "dirty_end" not in data
