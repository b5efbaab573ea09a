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


def test_evaluate_agent_script_in_current_folder(isolated, tmp_path, monkeypatch):
    """The README's `--agent 'python my_agent.py'` runs the caller's ./my_agent.py."""
    import sys

    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_agent.py").write_text(
        "import os, sys, pathlib\n"
        "pathlib.Path(os.environ['NL2REPO_WORKSPACE'], 'notes.txt').write_text('ran')\n"
        "sys.exit(4)\n")
    res = runner.invoke(app, ["evaluate", "--task", "kvlog", "--agent", f"{sys.executable} my_agent.py",
                              "--no-validate", "--wall-s", "30", "--sandbox", isolated])
    assert res.exit_code == 0, res.output
    assert "label no_output" in res.output and "warning:" in res.output   # it ran: exited 4, wrote nothing
    assert "exited with status 4" in res.output


def test_evaluate_missing_agent_script_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["evaluate", "--task", "kvlog", "--agent", "python3 my_agent.py"])
    assert res.exit_code == 2 and "my_agent.py" in res.output and "not found" in res.output
