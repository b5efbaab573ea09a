"""`icml26 nl2repo evaluate` runs a real agent command and reports clear errors."""

import json

from typer.testing import CliRunner

from icml26.nl2repo.cli import app

runner = CliRunner()


def test_evaluate_runs_a_command_agent(tmp_path):
    out = tmp_path / "res.json"
    res = runner.invoke(app, ["evaluate", "--task", "kvlog", "--agent",
                              "sh -c 'echo $NL2REPO_WORKSPACE > notes.txt'", "--no-validate",
                              "--wall-s", "30", "--out", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["records"][0]["label"] == "no_output"
    assert data["summary"]["avg_pass_rate"] == 0.0


def test_evaluate_missing_command_is_a_clear_error():
    res = runner.invoke(app, ["evaluate", "--task", "kvlog", "--agent", "no-such-agent-binary"])
    assert res.exit_code == 2 and "not found on PATH" in res.output


def test_evaluate_bad_limits_are_a_clear_error():
    res = runner.invoke(app, ["evaluate", "--task", "kvlog", "--agent", "true", "--wall-s", "0"])
    assert res.exit_code == 2 and "wall_s" in res.output
