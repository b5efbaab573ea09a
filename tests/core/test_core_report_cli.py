import json

from typer.testing import CliRunner

from icml26.cli import app
from icml26.core.example import EXPERIMENT
from icml26.core.report import render_report, write_report
from icml26.core.runner import run_experiment

runner = CliRunner()


def test_report_files_and_embedded_png(tmp_path):
    outcome = run_experiment(EXPERIMENT, quick=True)
    out = write_report([outcome], tmp_path / "r")
    html = (out / "index.html").read_text()
    assert "data:image/png;base64," in html
    assert "log-log slope of error in n" in html and "class=\"pass\"" in html
    data = json.loads((out / "results.json").read_text())
    job = data["experiments"][0]["parts"][0]["jobs"][0]
    assert {"seed", "task", "metrics", "seconds"} <= set(job)
    assert data["versions"]["numpy"]
    assert "| claim | paper | measured | bar | verdict |" in (out / "README.md").read_text()


def test_report_rerenders_from_results_json(tmp_path):
    out = write_report([run_experiment(EXPERIMENT, quick=True)], tmp_path / "r")
    first = (out / "index.html").read_text()
    (out / "index.html").unlink()
    render_report(out)
    assert (out / "index.html").read_text() == first


def test_cli_exit_0_when_all_claims_pass(example, tmp_path):
    result = runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "a" / "index.html").is_file()


def test_cli_exit_1_when_a_claim_fails(example, tmp_path):
    result = runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path / "b"),
                                 "--set", "include_failing_claim=true"])
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output


def test_cli_exit_2_on_unknown_slug():
    result = runner.invoke(app, ["run", "no-such-method"])
    assert result.exit_code == 2
    assert "unknown" in result.output and "Traceback" not in result.output


def test_cli_exit_2_on_zero_seeds(example):
    result = runner.invoke(app, ["run", "example", "--seeds", "0"])
    assert result.exit_code == 2 and "--seeds must be >= 1" in result.output


def test_cli_exit_2_on_unknown_set_key(example):
    result = runner.invoke(app, ["run", "example", "--quick", "--set", "bogus=1"])
    assert result.exit_code == 2 and "bogus" in result.output


def test_cli_exit_2_on_unknown_part(example):
    result = runner.invoke(app, ["run", "example", "--exp", "E9"])
    assert result.exit_code == 2 and "E9" in result.output


def test_cli_report_rerenders_and_rejects_missing_dir(example, tmp_path):
    runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path / "c")])
    assert runner.invoke(app, ["report", str(tmp_path / "c")]).exit_code == 0
    bad = runner.invoke(app, ["report", str(tmp_path / "missing")])
    assert bad.exit_code == 2 and "results.json" in bad.output


def test_cli_list_shows_all_nineteen_slugs():
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0
    for slug in ("cdal", "pem", "top", "epitwin", "spectral_rl"):
        assert slug in result.output
