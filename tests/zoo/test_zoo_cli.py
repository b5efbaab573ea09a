import json

from typer.testing import CliRunner

from icml26.cli import app
from icml26.zoo import smollm2


def test_zoo_status_without_the_package_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    monkeypatch.setattr(smollm2.importlib.util, "find_spec", lambda name: None)
    result = CliRunner().invoke(app, ["zoo", "status"])
    assert result.exit_code == 0, result.output
    assert "not installed" in result.output and smollm2.INSTALL_COMMAND in result.output
    assert "no converted entry" in result.output
    assert "corpus topics" in result.output and "matches record" in result.output


def test_zoo_status_json_lists_cache_entries(monkeypatch, tmp_path):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    entry = tmp_path / "zoo" / "smollm2" / "SmolLM2-135M-Instruct-Q4_1-0123456789abcdef"
    entry.mkdir(parents=True)  # no manifest: must be reported as broken, not crash
    result = CliRunner().invoke(app, ["zoo", "status", "--json"])
    assert result.exit_code == 0, result.output
    state = json.loads(result.output)
    assert [e["name"] for e in state["smollm2"]["entries"]] == [entry.name]
    assert state["smollm2"]["entries"][0]["usable"] is False
    assert {c["source"] for c in state["corpus"]} == {"topics", "docstrings", "all"}
