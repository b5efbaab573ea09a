"""Reliability of the run/report path (issue #33): markup in error text, a corrupt cache
entry, an interrupted report swap, Ctrl-C."""

import json
import warnings

import pytest
from typer.testing import CliRunner

from icml26.cli import app
from icml26.core import report as report_module
from icml26.core.cache import cached_json
from icml26.core.example import EXPERIMENT
from icml26.core.report import write_report
from icml26.core.runner import run_experiment

runner = CliRunner()


def _failing_with(monkeypatch, text):
    from icml26.core import example as example_module

    original = example_module.run

    def run(config, seed, task):
        if task["n"] == 10:
            raise ValueError(text)
        return original(config, seed, task)

    monkeypatch.setattr(EXPERIMENT.parts[0], "run", run)


@pytest.mark.parametrize("text", ["preset=[/x] is not a preset",
                                  "cached_json(config.cache_dir, f'[seed]', [bold], compute)"])
def test_markup_in_a_job_error_neither_crashes_nor_vanishes(example, tmp_path, monkeypatch, text):
    _failing_with(monkeypatch, text)
    out = tmp_path / "r"
    result = runner.invoke(app, ["run", "example", "--quick", "--out", str(out)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 3, result.output      # a crashed job has its own exit code
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert text in result.output                       # printed as it is, brackets included
    assert (out / "results.json").is_file() and (out / "index.html").is_file()
    data = json.loads((out / "results.json").read_text())
    errors = [j["error"] for p in data["experiments"][0]["parts"] for j in p["jobs"] if j["error"]]
    assert errors and all(text in e for e in errors)


def test_markup_in_a_usage_error_is_printed_as_it_is(example):
    result = runner.invoke(app, ["run", "example", "--quick", "--dry-run",
                                 "--set", "fail_seed=[/x]"], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert "[/x]" in result.output and "Traceback" not in result.output


def test_corrupt_cache_entry_is_a_miss_recomputed_and_replaced(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"x": 1.5}

    assert cached_json(tmp_path, "job", {"seed": 0}, compute) == {"x": 1.5}
    (entry,) = tmp_path.glob("job_*.json")
    entry.write_text('{"x": 1.')                        # truncated, as a killed write leaves it
    with pytest.warns(RuntimeWarning, match="could not be read"):
        assert cached_json(tmp_path, "job", {"seed": 0}, compute) == {"x": 1.5}
    assert json.loads(entry.read_text()) == {"x": 1.5} and len(calls) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # healed: read back, no warning
        assert cached_json(tmp_path, "job", {"seed": 0}, compute) == {"x": 1.5}
    assert len(calls) == 2


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("stage", ["figures", "render"])
def test_an_interrupted_report_keeps_the_previous_one_whole(tmp_path, monkeypatch, stage):
    out = tmp_path / "r"
    outcome = run_experiment(EXPERIMENT, quick=True)
    write_report([outcome], out)
    before = _snapshot(out)
    assert any(n.endswith(".png") for n in before)

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    target = "outcome_to_dict" if stage == "figures" else "render_report"
    if stage == "figures":  # interrupted while the new figures are being saved
        original = report_module.outcome_to_dict

        def interrupt(outcome, out_dir=None):
            original(outcome, out_dir)
            raise KeyboardInterrupt
    monkeypatch.setattr(report_module, target, interrupt)
    other = run_experiment(EXPERIMENT, quick=True, seeds=3)   # a report with other numbers
    with pytest.raises(KeyboardInterrupt):
        write_report([other], out)
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]   # no staging folder left


def test_a_report_replaces_only_its_own_files(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    outcome = run_experiment(EXPERIMENT, quick=True)
    write_report([outcome], out)
    write_report([outcome], out)
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "results.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_whole_folder_swap_keeps_mode_and_drops_stale_figures(tmp_path):
    out = tmp_path / "r"
    outcome = run_experiment(EXPERIMENT, quick=True)
    write_report([outcome], out)
    (out / "example__rate__old_figure.png").write_bytes(b"png")
    data = json.loads((out / "results.json").read_text())
    data["experiments"][0]["parts"][0]["figures"]["old"] = "example__rate__old_figure.png"
    (out / "results.json").write_text(json.dumps(data))
    write_report([outcome], out)
    assert not (out / "example__rate__old_figure.png").exists()
    assert out.stat().st_mode & 0o777 == 0o755 or out.stat().st_mode & 0o055


def test_ctrl_c_exits_130_says_interrupted_and_keeps_the_report(example, tmp_path, monkeypatch):
    out = tmp_path / "r"
    assert runner.invoke(app, ["run", "example", "--quick", "--out", str(out)]).exit_code == 0
    before = _snapshot(out)
    from icml26.core import runner as runner_module

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner_module, "run_experiment", interrupt)
    result = runner.invoke(app, ["run", "example", "--quick", "--out", str(out)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.output and "kept" in result.output
    assert "will be replaced when this run finishes" in result.output
    assert _snapshot(out) == before
