import json

import pytest

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


# -- first use: version, help, list, refusals before running, terminal output ----------

def _lines(text):
    return [line for line in text.splitlines() if line.strip()]


def test_version_flag():
    import icml26

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"icml26 {icml26.__version__}"


def test_help_shows_no_bool_placeholder_for_flags():
    for cmd in (["run", "--help"], ["reproduce", "--help"], ["list", "--help"]):
        result = runner.invoke(app, cmd, env={"COLUMNS": "100"})
        assert result.exit_code == 0 and "--quick" in result.output or "--long" in result.output
        assert "<bool>" not in result.output, cmd


def test_list_is_short_at_80_columns_and_long_has_titles():
    short = runner.invoke(app, ["list"], env={"COLUMNS": "80"})
    assert short.exit_code == 0
    assert max(len(line) for line in short.output.splitlines()) <= 80
    assert len(_lines(short.output)) < 30  # one line per paper
    assert "Predicting the Order" not in short.output  # titles only with --long
    from icml26.core.catalog import PAPERS

    assert "implemented" in short.output
    assert f"of {len(PAPERS)} implemented" in short.output  # the count line names how many are done
    long = runner.invoke(app, ["list", "--long"], env={"COLUMNS": "80"})
    assert long.exit_code == 0 and "Predicting the Order of Upcoming Tokens" in long.output
    assert "parts: " in long.output


def test_list_imports_no_method_and_no_heavy_library():
    import subprocess
    import sys

    code = ("import sys\nfrom typer.testing import CliRunner\nfrom icml26.cli import app\n"
            "r = CliRunner().invoke(app, ['list'])\nassert r.exit_code == 0, r.output\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'transformers', 'pandas', 'sklearn') or m.endswith('.experiment'))\n"
            "print(heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.fixture
def no_run(monkeypatch):
    """Fail the test if the CLI starts running an experiment."""
    def boom(*args, **kwargs):
        raise AssertionError("the experiment started")
    monkeypatch.setattr("icml26.core.runner.run_experiment", boom)


def test_unwritable_out_is_refused_before_running(example, no_run):
    result = runner.invoke(app, ["run", "example", "--quick", "--out", "/dev/null/x"])
    assert result.exit_code == 2, result.output
    assert "/dev/null/x" in result.output and "Traceback" not in result.output


def test_unreachable_scheduler_is_one_line_and_exit_2(example, no_run, tmp_path):
    result = runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path),
                                 "--scheduler", "tcp://127.0.0.1:1"])
    assert result.exit_code == 2, result.output
    assert len(_lines(result.output)) == 1 and "tcp://127.0.0.1:1" in result.output


def test_dry_run_resolves_everything_and_runs_nothing(example, no_run, tmp_path):
    out = tmp_path / "never"
    result = runner.invoke(app, ["run", "example", "--dry-run", "--seeds", "4", "--out", str(out),
                                 "--set", "repetitions=7"])
    assert result.exit_code == 0, result.output
    assert "'repetitions': 7" in result.output and "seeds [0, 1, 2, 3]" in result.output
    assert "12 job(s)" in result.output and not out.exists()
    bad = runner.invoke(app, ["run", "example", "--dry-run", "--set", "bogus=1"])
    assert bad.exit_code == 2 and "bogus" in bad.output


def test_last_line_names_the_failed_claim_and_quick_is_a_smoke_check(example, tmp_path):
    result = runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path),
                                 "--set", "include_failing_claim=true"], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    last = _lines(result.output)[-1]
    assert "error at the largest n" in last and "1 failed" in last
    assert "smoke check" in result.output


def test_progress_bar_names_the_part(example, tmp_path):
    result = runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path)],
                           env={"COLUMNS": "120"})
    assert result.exit_code == 0
    bar = [line for line in result.output.splitlines() if line.startswith("example · rate ━")]
    assert bar and "4/4" in bar[-1] and "eta" in bar[-1]


def test_wide_tables_go_to_the_report_not_the_terminal(example, tmp_path):
    result = runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path)],
                           env={"COLUMNS": "24"})
    assert "wide table(s) in the report: error by n" in " ".join(result.output.split())
    wide = runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path)],
                         env={"COLUMNS": "200"})
    assert "example · rate · error by n" in wide.output


def test_results_json_records_the_full_command(example, tmp_path):
    out = tmp_path / "r"
    result = runner.invoke(app, ["run", "example", "--quick", "--exp", "rate", "--seeds", "1",
                                 "--out", str(out), "--set", "repetitions=20"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert data["command"] == (f"icml26 run example --quick --exp rate --seeds 1 --out {out} "
                               "--set repetitions=20")
    assert data["invocation"]["set"] == {"repetitions": "20"} and data["invocation"]["seeds"] == 1
    assert data["command"] in (out / "index.html").read_text()


def test_reusing_out_warns(example, tmp_path):
    runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path)])
    again = runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path)])
    assert "previous report" in again.output


def test_incomplete_claim_renders_distinctly_and_exits_1(example, tmp_path, monkeypatch):
    from icml26.core import example as example_module
    from icml26.core.experiment import Claim, Result

    original = example_module.summarize

    def with_incomplete(jobs, config):
        result = original(jobs, config)
        return Result(tables=result.tables, figures=result.figures, notes=result.notes,
                      claims=result.claims + [Claim("unfinished", "-", 0.5, "≥ 0", True,
                                                    incomplete=True, quick_meaningful=True)])

    monkeypatch.setattr(EXPERIMENT.parts[0], "summarize", with_incomplete)
    result = runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "INCOMPLETE" in result.output
    last = _lines(result.output)[-1]
    assert "1 incomplete" in last and "unfinished (incomplete)" in last and "failed" not in last.split(";")[0]


def test_a_port_that_is_not_a_dask_scheduler_is_one_line_and_exit_2(example, no_run, tmp_path):
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer_garbage():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4)
            conn.close()

    threading.Thread(target=answer_garbage, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    try:
        result = runner.invoke(app, ["run", "example", "--quick", "--out", str(tmp_path),
                                     "--scheduler", address])
    finally:
        server.close()
    assert result.exit_code == 2, result.output
    lines = _lines(result.output)
    assert len(lines) == 1 and address in lines[0] and "Traceback" not in result.output
