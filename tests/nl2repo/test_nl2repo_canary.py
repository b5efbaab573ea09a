"""Canary twins, the report stream and its cross-checks, the install audit (no sandbox needed)."""

import ast
import json
import random
import textwrap

import pytest

from icml26.nl2repo import builtin_tasks
from icml26.nl2repo.canary import build_suite, mutation_sites, split_node_id
from icml26.nl2repo.crosscheck import parse_summary, read_stream

SUITE = textwrap.dedent('''
    import pytest

    from pkg.mod import area, name_of, parse


    @pytest.mark.parametrize("text,expected", [("3 km", 3000), ("2 m", 2), ("1 cm", 0.01)])
    def test_parse_lengths(text, expected):
        assert parse(text) == expected


    def test_area_of_square():
        assert area(3) == pytest.approx(9.0)


    def test_name_and_size():
        assert (name_of(1), area(2)) == ("one", 4)


    def test_bad_input_raises():
        with pytest.raises(ValueError):
            parse("x")


    def test_computed_expectation():
        expected = area(2)
        assert area(2) == expected


    class TestGroup:
        def test_flag(self):
            assert name_of(0).startswith("z") is True
''')
MANIFEST = ["test_mod.py::test_parse_lengths[3 km-3000]", "test_mod.py::test_parse_lengths[2 m-2]",
            "test_mod.py::test_parse_lengths[1 cm-0.01]", "test_mod.py::test_area_of_square",
            "test_mod.py::test_name_and_size", "test_mod.py::test_bad_input_raises",
            "test_mod.py::test_computed_expectation", "test_mod.py::TestGroup::test_flag"]


def _fn(source, name):
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name)


def _build(tmp_path, seed=0):
    (tmp_path / "src").mkdir(parents=True)
    (tmp_path / "src" / "test_mod.py").write_text(SUITE)
    suite = build_suite(tmp_path / "src", tmp_path / "out", MANIFEST, random.Random(seed))
    return suite, (tmp_path / "out" / "test_mod.py").read_text()


def test_value_tests_get_a_twin_raise_only_and_computed_ones_do_not(tmp_path):
    suite, text = _build(tmp_path)
    roles = {orig: [] for orig, _, _ in suite.functions.values()}
    for (_, _, _), (orig, role, _) in suite.functions.items():
        roles[orig].append(role)
    assert sorted(roles["test_parse_lengths"]) == ["real", "twin"]
    assert sorted(roles["test_area_of_square"]) == ["real", "twin"]
    assert sorted(roles["test_flag"]) == ["real", "twin"]
    assert roles["test_bad_input_raises"] == ["real"] and roles["test_computed_expectation"] == ["real"]
    assert suite.n_twins == 4
    assert "test_parse_lengths" not in text and "test_bad_input_raises" not in text   # all renamed


def test_twin_differs_from_its_real_test_in_exactly_one_literal_per_row(tmp_path):
    suite, text = _build(tmp_path)
    tree = ast.parse(text)
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for (_, _, new), (orig, role, partner) in suite.functions.items():
        if role != "twin":
            continue
        twin, real = defs[new], defs[partner]
        consts = [(a.value, b.value) for a, b in zip(ast.walk(twin), ast.walk(real))
                  if isinstance(a, ast.Constant) and a.value != b.value]
        rows = 3 if orig == "test_parse_lengths" else 1
        assert len(consts) == rows, (orig, consts)
        assert all(type(a) is type(b) for a, b in consts)


def test_approx_twin_is_outside_the_tolerance():
    import pytest as real_pytest

    fn = _fn(SUITE, "test_area_of_square")
    from icml26.nl2repo.canary import _mutate

    for seed in range(30):
        twin = _fn(SUITE, "test_area_of_square")
        assert _mutate(twin, random.Random(seed))
        value = next(n.value for n in ast.walk(twin) if isinstance(n, ast.Constant) and isinstance(n.value, float))
        assert value != real_pytest.approx(9.0)
    assert mutation_sites(fn)


def test_names_are_drawn_from_the_suites_words_and_order_is_random(tmp_path):
    firsts = set()
    words = {w for name in ("parse_lengths", "area_of_square", "name_and_size", "bad_input_raises",
                            "computed_expectation", "flag") for w in name.split("_")}
    for seed in range(12):
        suite, text = _build(tmp_path / str(seed), seed)
        order = [n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
        for (_, classes, new), (orig, role, partner) in suite.functions.items():
            assert new.startswith("test_") and set(new.split("_")[1:]) <= words
            if role == "twin" and not classes:
                firsts.add(order.index(new) < order.index(partner))
    assert firsts == {True, False}      # twins come before and after their real test


def test_lookup_maps_renamed_nodes_back(tmp_path):
    suite, _ = _build(tmp_path)
    real = next(k for k, v in suite.functions.items() if v[0] == "test_parse_lengths" and v[1] == "real")
    node = f"test_mod.py::{real[2]}[2 m-2]"
    assert suite.lookup(node)[0] == "test_mod.py::test_parse_lengths[2 m-2]"
    assert suite.lookup("test_mod.py::test_leaked_from_package") is None
    assert split_node_id("a/t.py::C::t[x::y]") == ("a/t.py", ("C",), "t", "[x::y]")


def test_honest_reference_never_passes_a_twin(tmp_path):
    """Run the real built-in suite's twins against its reference in-process: all fail."""
    import subprocess
    import sys

    task = builtin_tasks(["unitconv"])[0]
    suite = build_suite(task.tests_dir, tmp_path / "t", task.manifest.tests, random.Random(3))
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "t"),
                          "-o", "addopts=", "--rootdir", str(tmp_path / "t"), "--junitxml", str(tmp_path / "r.xml")],
                         capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(task.reference_dir), "PATH": "/usr/bin:/bin"})
    from icml26.nl2repo.harness import parse_junit, unmangle_node_id

    parsed, _, _, ok = parse_junit(tmp_path / "r.xml")
    assert ok, res.stdout[-2000:]
    outcomes = {unmangle_node_id(c, n, ["test_units.py", "test_quantity.py", "test_parse.py"]): o
                for (c, n), o in parsed.items()}
    twins = [o for node, o in outcomes.items() if (suite.lookup(node) or (0, "?"))[1] == "twin"]
    reals = [o for node, o in outcomes.items() if (suite.lookup(node) or (0, "?"))[1] == "real"]
    assert len(twins) >= 20 and set(twins) == {"failed"}
    assert set(reals) == {"passed"}


# -- the report stream ---------------------------------------------------------------------

def _events(*events):
    return "\n".join(json.dumps(e) for e in events).encode() + b"\n"


START = [{"ev": "start"}, {"ev": "collected", "items": ["t.py::a", "t.py::b"]}]


def test_stream_outcomes_and_counts():
    s = read_stream(_events(*START, {"ev": "report", "nodeid": "t.py::a", "when": "call", "outcome": "passed"},
                            {"ev": "report", "nodeid": "t.py::b", "when": "call", "outcome": "failed"},
                            {"ev": "report", "nodeid": "t.py::b", "when": "teardown", "outcome": "failed"},
                            {"ev": "collect", "nodeid": "u.py", "outcome": "failed"},
                            {"ev": "finish", "exitstatus": 1}, {"ev": "end"}))
    assert s.outcomes == {"t.py::a": "passed", "t.py::b": "error", "u.py": "error"}
    assert dict(s.counts) == {"passed": 1, "failed": 1, "error": 2}
    assert s.ended and not s.problems and s.collection_errors == 1


@pytest.mark.parametrize("extra,problem", [
    ({"ev": "report", "nodeid": "t.py::a", "when": "call", "outcome": "passed"}, "duplicate_report"),
    ({"ev": "report", "nodeid": "t.py::zz", "when": "call", "outcome": "passed"}, "unknown_node"),
    ({"ev": "report", "nodeid": "t.py::b", "when": "setup", "outcome": "passed"}, "bad_report")])
def test_injected_stream_lines_are_problems(extra, problem):
    s = read_stream(_events(*START, {"ev": "report", "nodeid": "t.py::a", "when": "call", "outcome": "failed"},
                            extra, {"ev": "end"}))
    assert any(p.startswith(problem) for p in s.problems)
    assert s.outcomes["t.py::a"] == "failed"                    # the first word stands


def test_lines_after_the_end_and_garbage_are_problems():
    s = read_stream(_events(*START, {"ev": "end"}) + b"not json\n" + _events(
        {"ev": "report", "nodeid": "t.py::a", "when": "call", "outcome": "passed"}))
    assert s.problems == ["event_after_end", "event_after_end"] and "t.py::a" not in s.outcomes


@pytest.mark.parametrize("text,expected", [
    ("x\n3 failed, 46 passed, 1 error in 0.20s\n", {"failed": 3, "passed": 46, "error": 1}),
    ("12 passed, 2 errors, 1 warning in 1.00s", {"passed": 12, "error": 2}),
    ("== 1 xfailed, 1 xpassed, 2 skipped in 0.1s ==", {"xfailed": 1, "xpassed": 1, "skipped": 2}),
    ("no tests ran in 0.01s", {})])
def test_parse_summary(text, expected):
    counts = parse_summary(text)
    assert {k: v for k, v in counts.items() if v} == expected


def test_parse_summary_takes_the_last_line_and_none_without_one():
    assert parse_summary("5 passed in 1s\n==== 999 passed in 0.01s ====")["passed"] == 999
    assert parse_summary("INTERNALERROR> boom") is None


# -- the install audit ---------------------------------------------------------------------

def test_install_audit_catches_modified_pth_and_unrecorded_files(tmp_path):
    from icml26.nl2repo.install import BRIDGE_PTH, audit_install, make_venv, site_packages, tree_state

    venv = tmp_path / "v"
    site = make_venv(venv)
    before = tree_state(venv)
    with open(site / BRIDGE_PTH, "a") as fh:
        fh.write("import os\n")
    (venv / "bin" / "python").unlink()
    (venv / "bin" / "python").write_text("#!/bin/sh\n")
    (site / "planted.py").write_text("")
    dist = site / "pkg-1.0.dist-info"
    dist.mkdir()
    (site / "pkg.py").write_text("")
    (dist / "RECORD").write_text("pkg.py,,\npkg-1.0.dist-info/RECORD,,\n")
    flags, dists = audit_install(venv, before)
    assert dists == ["pkg-1.0.dist-info"]
    assert f"tamper:modified:lib/{site.parent.name}/site-packages/{BRIDGE_PTH}" in flags
    assert "tamper:modified:bin/python" in flags
    assert any(f.endswith("site-packages/planted.py") and f.startswith("tamper:unrecorded") for f in flags)
    assert not any(f.endswith("pkg.py") for f in flags)
    assert site_packages(venv) == site
