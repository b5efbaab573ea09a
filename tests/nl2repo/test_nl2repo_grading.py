"""Scoring, JUnit parsing, sanitizing, labels, agent specs and atomic results."""

import json
import os
import subprocess
import sys

import pytest

from icml26.nl2repo import AgentSpec, Results, builtin_tasks, evaluate, grade, score_legacy
from icml26.nl2repo.harness import (AgentRun, _copy_workspace, _InvalidWorkspace, _label,
                                    _sanitize, mangle_node_id, parse_junit, unmangle_node_id)


def test_score_legacy_sums_every_match():
    out = "== 3 passed, 1 failed ==\nfoo 2 passed\n"
    assert score_legacy(out, 10) == 0.5


def test_score_legacy_is_forgeable_and_capped():
    assert score_legacy("999 passed", 46) == 1.0


@pytest.mark.parametrize("total", [0, -3, 2.5, True])
def test_score_legacy_rejects_bad_total(total):
    with pytest.raises(ValueError, match="declared_total"):
        score_legacy("1 passed", total)


@pytest.mark.parametrize("node", ["test_a.py::test_x", "sub/test_b.py::TestK::test_y[1-a/b]",
                                  "test_c.py::test_z[x::y]"])
def test_mangle_matches_pytest_and_inverts(node):
    from _pytest.junitxml import mangle_test_address

    names = mangle_test_address(node)
    assert mangle_node_id(node) == (".".join(names[:-1]), names[-1])
    files = ["test_a.py", "sub/test_b.py", "test_c.py"]
    assert unmangle_node_id(*mangle_node_id(node), files) == node


def test_parse_junit_outcomes(tmp_path):
    xml = tmp_path / "r.xml"
    xml.write_text('<testsuites><testsuite time="1.5">'
                   '<testcase classname="test_a" name="ok"/>'
                   '<testcase classname="test_a" name="bad"><failure message="x"/></testcase>'
                   '<testcase classname="test_a" name="skip"><skipped/></testcase>'
                   '<testcase classname="test_a" name="ok"><error message="teardown"/></testcase>'
                   '<testcase classname="" name="test_b"><error message="collection failure"/></testcase>'
                   '</testsuite></testsuites>')
    outcomes, seconds, coll, ok = parse_junit(xml)
    assert ok and seconds == 1.5 and coll == 1
    assert outcomes[("test_a", "ok")] == "error"   # worst outcome wins
    assert outcomes[("test_a", "bad")] == "failed"
    assert outcomes[("test_a", "skip")] == "skipped"


@pytest.mark.parametrize("content", [None, "", "<testsuites><testsuite><testcase"])
def test_parse_junit_missing_or_truncated(tmp_path, content):
    xml = tmp_path / "r.xml"
    if content is not None:
        xml.write_text(content)
    assert parse_junit(xml) == ({}, 0.0, 0, False)


def test_sanitize_removes_hooks_and_listed_paths(tmp_path):
    task = builtin_tasks(["kvlog"])[0]
    for rel in ["conftest.py", "pkg/conftest.py", "x.pth", "sitecustomize.py", "tests/test_a.py",
                "pyproject.toml", "pkg/mod.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    _sanitize(task, tmp_path)
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["pkg/mod.py", "pyproject.toml"]   # packaging kept: replace_packaging=False


def test_copy_refuses_symlink_escape_but_keeps_internal_links(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text("x = 1\n")
    os.symlink("a.py", src / "pkg" / "b.py")
    _copy_workspace(src, dst, 1 << 20)
    assert os.readlink(dst / "pkg" / "b.py") == "a.py"
    os.symlink("/etc/passwd", src / "leak")
    with pytest.raises(_InvalidWorkspace, match="symlink_escape"):
        _copy_workspace(src, tmp_path / "dst2", 1 << 20)


def test_copy_refuses_oversized_workspace(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "big.bin").write_bytes(b"0" * 2048)
    with pytest.raises(_InvalidWorkspace, match="workspace_over"):
        _copy_workspace(tmp_path / "src", tmp_path / "dst", 1024)


def _state(**kw):
    base = {"no_output": False, "flags": [], "invalid": False, "install_ok": True,
            "import_ok": True, "test_timed_out": False, "collection_errors": 0, "score": 0.5}
    return {**base, **kw}


def _run(**kw):
    base = dict(returncode=0, wall_s=10.0, timed_out=False, killed_by_limit=False, steps=None,
                finished=True, step_limit_hit=False, isolation="bwrap", max_steps=None,
                wall_budget_s=1800.0)
    return AgentRun(**{**base, **kw})


@pytest.mark.parametrize("state,run,label", [
    (_state(no_output=True, flags=["tamper:x"]), None, "no_output"),
    (_state(flags=["tamper:canary"], install_ok=False), None, "tamper"),
    (_state(install_ok=False, import_ok=False), None, "install_failed"),
    (_state(import_ok=False), _run(timed_out=True), "import_failed"),
    (_state(), _run(timed_out=True, killed_by_limit=True), "timeout"),
    (_state(), _run(killed_by_limit=True), "resource_killed"),
    (_state(), _run(step_limit_hit=True, steps=500), "step_limit"),
    (_state(test_timed_out=True), _run(), "test_timeout"),
    (_state(agent_exit=True, test_timed_out=False), _run(), "agent_exit"),
    (_state(test_killed=True, agent_exit=True), _run(), "resource_killed"),
    (_state(flags=["forgery:junit_disagrees:3_nodes"]), _run(), "forgery"),
    (_state(flags=["forgery:x", "tamper:canary:1"]), _run(), "tamper"),
    (_state(collection_errors=2), _run(steps=10, wall_s=5.0, max_steps=500), "premature_finish"),
    (_state(collection_errors=2), _run(steps=300, max_steps=500), "collection_errors"),
    (_state(collection_errors=2), _run(steps=None, wall_s=1.0), "collection_errors"),
    (_state(), None, "partial"),
    (_state(score=1.0), _run(steps=3, wall_s=1.0), "complete")])
def test_label_first_match(state, run, label):
    assert _label(state, run) == label


@pytest.mark.parametrize("argv,match", [
    ([], "non-empty"), ("python3", "non-empty"), ([1, 2], "only str"),
    (["definitely-not-a-command-xyz"], "not found on PATH"), (["/etc/passwd"], "not an executable")])
def test_agent_spec_rejects_bad_commands(argv, match):
    with pytest.raises(ValueError, match=match):
        AgentSpec(argv)


def test_agent_spec_rejects_bad_protocol():
    with pytest.raises(ValueError, match="protocol"):
        AgentSpec(["true"], protocol="http")


def test_evaluate_rejects_bad_runs_and_tasks():
    task = builtin_tasks(["kvlog"])[0]
    with pytest.raises(ValueError, match="runs"):
        evaluate([task], AgentSpec(["true"]), runs=0)
    with pytest.raises(ValueError, match="tasks"):
        evaluate([], AgentSpec(["true"]))


def test_network_only_without_isolation(isolated):
    from icml26.nl2repo import Limits

    task = builtin_tasks(["kvlog"])[0]
    with pytest.raises(ValueError, match="network"):
        grade(task, task.reference_dir, sandbox=isolated, limits=Limits(network=True))


def test_results_summary_and_bootstrap():
    recs = [{"task_id": "a", "category": "x", "score": 1.0, "n_passed": 4, "n_total": 4,
             "install_ok": True, "label": "complete"},
            {"task_id": "a", "category": "x", "score": 0.5, "n_passed": 2, "n_total": 4,
             "install_ok": True, "label": "partial"},
            {"task_id": "b", "category": "y", "score": 0.0, "n_passed": 0, "n_total": 6,
             "install_ok": False, "label": "install_failed"}]
    s = Results(records=recs).summary()
    assert s["avg_pass_rate"] == pytest.approx((0.75 + 0.0) / 2)
    assert s["fully_passed_rate"] == pytest.approx(0.25)
    assert s["micro_pass_rate"] == pytest.approx(6 / 14)
    assert s["install_rate"] == pytest.approx(2 / 3)
    assert s["per_category"] == {"x": 0.75, "y": 0.0}
    assert s["ci95"][0] <= s["avg_pass_rate"] <= s["ci95"][1]


def test_results_write_is_atomic_when_killed_mid_write(tmp_path):
    out = tmp_path / "results.json"
    Results(records=[], agent="a").to_json(out)
    before = out.read_text()
    script = ("import json, os, sys\n"
              "from icml26.nl2repo.harness import Results\n"
              "class Boom:\n"
              "    def __str__(self):\n"
              "        os._exit(9)\n"   # the harness dies while serialising
              "rec = {'task_id': 't', 'category': 'c', 'score': 1.0, 'n_passed': 1, 'n_total': 1,"
              " 'install_ok': True, 'label': 'complete', 'x': Boom()}\n"
              f"Results(records=[rec], agent='b').to_json({str(out)!r})\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert res.returncode == 9
    assert out.read_text() == before   # old file intact, no half-written JSON
    assert json.loads(before)["agent"] == "a"


def test_grade_requires_folder(tmp_path):
    task = builtin_tasks(["kvlog"])[0]
    with pytest.raises(ValueError, match="workspace"):
        grade(task, tmp_path / "missing", sandbox="none")


def test_empty_workspace_is_no_output_without_install(isolated, tmp_path):
    task = builtin_tasks(["kvlog"])[0]
    (tmp_path / "notes.txt").write_text("nothing")
    report = grade(task, tmp_path, sandbox=isolated)
    assert report.isolation == isolated
    assert (report.score, report.label, report.install_ok) == (0.0, "no_output", False)
    assert set(report.outcomes.values()) == {"missing"}


def test_manifest_mismatch_lists_failing_ids(isolated, tmp_path):
    from icml26.nl2repo import ManifestMismatchError, check_manifest
    from icml26.nl2repo.data import make_scaling_task

    task = make_scaling_task(3, tmp_path / "t")
    core = task.reference_dir / "scalepkg" / "core.py"
    core.write_text("def value(i):\n    return i + 1 if i != 2 else 0\n")  # drifted environment
    with pytest.raises(ManifestMismatchError, match=r"test_value\[2\]") as info:
        check_manifest(task, sandbox=isolated)
    assert info.value.failing == ["test_core.py::test_value[2]"]


def test_official_commands_split_into_setup_and_env():
    from icml26.nl2repo.harness import split_official_commands

    setup, env = split_official_commands(
        ["pip install -e .", "echo 1.0 > pkg/VERSION && PYTHONHASHSEED=0 pytest --continue tests"])
    assert setup == ["echo 1.0 > pkg/VERSION"] and env == {"PYTHONHASHSEED": "0"}


def test_agent_phase_cannot_see_hidden_task_assets(isolated, tmp_path):
    from icml26.nl2repo import run_agent, tasks_root

    task = builtin_tasks(["kvlog"])[0]
    script = (f"ls -A {tasks_root()} | wc -l > seen.txt; cat {task.tests_dir}/test_store.py "
              "> leaked.txt 2>/dev/null; ls > listing.txt")
    run = run_agent(task, AgentSpec(["sh", "-c", script]), tmp_path / "run", sandbox=isolated)
    ws = tmp_path / "run" / "workspace"
    assert run.returncode == 0 and run.isolation == isolated
    assert (ws / "seen.txt").read_text().strip() == "0"
    assert (ws / "leaked.txt").read_text() == ""
    assert (ws / "listing.txt").read_text().split() == ["REQUIREMENTS.md", "leaked.txt", "listing.txt",
                                                       "seen.txt"]


def _solution_agent(folder, task) -> None:
    """A standalone ``my_agent.py`` in ``folder`` that writes ``task``'s reference solution."""
    ref = task.reference_dir
    files = {p.relative_to(ref).as_posix(): p.read_text() for p in ref.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    (folder / "my_agent.py").write_text(
        "import os, pathlib\n"
        f"FILES = {files!r}\n"
        "ws = pathlib.Path(os.environ['NL2REPO_WORKSPACE'])\n"
        "for rel, text in FILES.items():\n"
        "    (ws / rel).parent.mkdir(parents=True, exist_ok=True)\n"
        "    (ws / rel).write_text(text)\n")


def test_agent_script_relative_to_caller_and_under_tmp(isolated, tmp_path, monkeypatch):
    """`python my_agent.py` from the caller's folder, and an absolute script under /tmp, both grade."""
    task = builtin_tasks(["kvlog"])[0]
    _solution_agent(tmp_path, task)
    monkeypatch.chdir(tmp_path)
    spec = AgentSpec([sys.executable, "my_agent.py"])
    assert spec.argv[1] == str(tmp_path / "my_agent.py")       # resolved in the caller's folder
    assert str(tmp_path).startswith("/tmp/") and spec.binds[-1] == tmp_path / "my_agent.py"
    monkeypatch.chdir("/")
    res = evaluate([task], spec, sandbox=isolated)
    rec = res.records[0]
    assert (rec["score"], rec["label"], rec["isolation"]) == (1.0, "complete", isolated)


def test_agent_script_that_does_not_exist_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="my_agent.py.*not found.*current directory"):
        AgentSpec([sys.executable, "my_agent.py"])
    with pytest.raises(ValueError, match="not found"):
        AgentSpec(["sh", "-e", "no_such_script.sh"])
    assert AgentSpec([sys.executable, "-c", "print(1)"]).argv[1:] == ["-c", "print(1)"]


def test_silent_nonzero_exit_warns(isolated):
    task = builtin_tasks(["kvlog"])[0]
    with pytest.warns(RuntimeWarning, match="exited with status 3 and left no output.*boom"):
        res = evaluate([task], AgentSpec(["sh", "-c", "echo boom >&2; exit 3"]), sandbox=isolated)
    assert res.records[0]["label"] == "no_output" and "status 3" in res.records[0]["agent_warning"]


def test_hook_audit_reads_code_objects_not_module_files(tmp_path):
    """A hook is trusted when its code was compiled from a trusted file that defines it there."""
    import json as json_module

    from icml26.nl2repo.harness import _foreign_hooks

    real = json_module.dumps.__code__
    root = os.path.dirname(os.path.realpath(real.co_filename))
    ok = ("json", real.co_filename, real.co_firstlineno, "dumps")
    fake_line = ("json", real.co_filename, 1, "pytest_runtest_makereport")   # a real file, not its code
    compiled = compile("def pytest_runtest_makereport():\n    pass\n", "/usr/lib/python3/dist-packages/x.py", "exec")
    fake_file = ("x", compiled.co_filename, 1, "pytest_runtest_makereport")
    assert _foreign_hooks({ok}, [root]) == []
    assert len(_foreign_hooks({fake_line, fake_file, ("y", "<string>", 1, "f")}, [root])) == 3


def test_reference_solutions_use_no_suspect_construct():
    from icml26.nl2repo.harness import _suspect_constructs

    for task in builtin_tasks():
        assert _suspect_constructs(task.reference_dir) == [], task.id
