"""Canary twins, the report stream and its cross-checks, the install audit (no sandbox needed)."""

import ast
import json
import random
import textwrap

import pytest

from icml26.nl2repo import builtin_tasks
from icml26.nl2repo.canary import (TWINS_PER_TEST, build_suite, exception_hierarchy, mutation_sites,
                                   split_node_id)
from icml26.nl2repo.crosscheck import parse_summary, read_stream

SUITE = textwrap.dedent('''
    import pytest

    from pkg.mod import LookupFailed, ParseError, Thing, area, name_of, parse


    @pytest.mark.parametrize("text,expected", [("3 km", 3000), ("2 m", 2.5), ("1 cm", 7)])
    def test_parse_lengths(text, expected):
        assert parse(text) == expected


    def test_area_of_square():
        assert area(3) == pytest.approx(9.0)


    def test_name_and_size():
        assert (name_of(1), area(2)) == ("one", 4)


    def test_bad_input_raises():
        with pytest.raises(ParseError):
            parse("x")


    def test_computed_expectation():
        expected = area(2)
        assert area(2) == expected


    def test_things_equal():
        assert Thing(1, "km") == Thing(1000, "m")


    class TestGroup:
        def test_flag(self):
            assert name_of(0).startswith("z") is True
''')
REFERENCE = textwrap.dedent('''
    class ParseError(ValueError):
        pass


    class LookupFailed(KeyError):
        pass
''')
MANIFEST = ["test_mod.py::test_parse_lengths[3 km-3000]", "test_mod.py::test_parse_lengths[2 m-2.5]",
            "test_mod.py::test_parse_lengths[1 cm-7]", "test_mod.py::test_area_of_square",
            "test_mod.py::test_name_and_size", "test_mod.py::test_bad_input_raises",
            "test_mod.py::test_computed_expectation", "test_mod.py::test_things_equal",
            "test_mod.py::TestGroup::test_flag"]
# Every expected literal of the suite, by type: a twin's value is drawn from these.
INTS, STRS, FLOATS = {3000, 7, 4, 1000, 1}, {"one", "km", "m"}, {9.0, 2.5}


def _fn(source, name):
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name)


def _build(tmp_path, seed=0, reference=True):
    (tmp_path / "src").mkdir(parents=True)
    (tmp_path / "src" / "test_mod.py").write_text(SUITE)
    ref = None
    if reference:
        ref = tmp_path / "ref" / "pkg"
        ref.mkdir(parents=True)
        (ref / "mod.py").write_text(REFERENCE)
    suite = build_suite(tmp_path / "src", tmp_path / "out", MANIFEST, random.Random(seed),
                        reference=ref.parent if ref else None)
    return suite, (tmp_path / "out" / "test_mod.py").read_text()


def _roles(suite):
    roles = {orig: [] for orig, _, _ in suite.functions.values()}
    for key, (orig, role, _) in suite.functions.items():
        roles[orig].append(role if role == "real" else suite.strength[key])
    return {k: sorted(v) for k, v in roles.items()}


def test_every_twinnable_test_gets_several_twins(tmp_path):
    suite, text = _build(tmp_path)
    roles = _roles(suite)
    strict = ["real"] + ["strict"] * TWINS_PER_TEST
    for name in ("test_parse_lengths", "test_name_and_size"):
        assert roles[name] == strict, name
    # as many distinct twins as the pool allows: `is True` and the suite's one other float
    assert roles["test_flag"] == roles["test_area_of_square"] == ["real", "strict"]
    assert roles["test_things_equal"] == ["real"] + ["weak"] * TWINS_PER_TEST
    assert roles["test_computed_expectation"] == ["real"]
    assert roles["test_bad_input_raises"][0] == "real" and set(roles["test_bad_input_raises"][1:]) == {"weak"}
    assert suite.n_twinned == 6 and suite.n_tests == 7 and suite.n_fallback == 0
    assert "test_parse_lengths" not in text and "test_bad_input_raises" not in text   # all renamed


def test_without_a_reference_raise_only_tests_get_no_twin(tmp_path):
    suite, _ = _build(tmp_path, reference=False)
    assert _roles(suite)["test_bad_input_raises"] == ["real"]


def _defs(text):
    return {n.name: n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)}


def test_twin_values_are_other_real_expected_values_of_the_same_type(tmp_path):
    for seed in range(8):
        suite, text = _build(tmp_path / str(seed), seed)
        defs = _defs(text)
        for key, (orig, role, partner) in suite.functions.items():
            new = key[2]
            if role != "twin" or (suite.strength[key] != "strict" and orig != "test_things_equal"):
                continue
            twin, real = defs[new], defs[partner]
            changed = [(a.value, b.value) for a, b in zip(ast.walk(twin), ast.walk(real))
                       if isinstance(a, ast.Constant) and a.value != b.value]
            rows = 3 if orig == "test_parse_lengths" else 1
            assert len(changed) == rows, (orig, changed)
            for new_value, old in changed:
                assert type(new_value) is type(old)
                pool = {int: INTS, str: STRS, float: FLOATS, bool: {True, False}}[type(old)]
                assert new_value in pool and new_value != old, (orig, new_value, old)


def test_raises_twins_expect_a_type_disjoint_in_the_reference(tmp_path):
    """ParseError is a ValueError: its twins may expect KeyError-like types (LookupFailed is a
    KeyError), never ValueError itself."""
    seen = set()
    for seed in range(10):
        suite, text = _build(tmp_path / str(seed), seed)
        defs = _defs(text)
        for key, (orig, role, partner) in suite.functions.items():
            if orig == "test_bad_input_raises" and role == "twin":
                call = defs[key[2]].body[0].items[0].context_expr
                seen.add(call.args[0].id)
    assert seen and seen <= {"LookupFailed"}, seen


def test_exception_hierarchy_disjointness(tmp_path):
    (tmp_path / "m.py").write_text(REFERENCE + "\n\nclass Both(ParseError, LookupFailed):\n    pass\n"
                                   "\n\nclass Odd(SomeThirdPartyError):\n    pass\n")
    h = exception_hierarchy(tmp_path)
    assert h.is_exception("ParseError") and h.ancestors("ParseError")[0] >= {"ValueError", "Exception"}
    assert not h.disjoint("ParseError", "ValueError")           # subclass
    assert not h.disjoint("ParseError", "LookupFailed")         # Both derives from both
    assert not h.disjoint("ValueError", "KeyError")             # Odd's unknown base could be either
    assert h.ancestors("Odd")[1] is True


def test_approx_twin_is_outside_the_tolerance(tmp_path):
    import pytest as real_pytest

    for seed in range(10):
        suite, text = _build(tmp_path / str(seed), seed)
        defs = _defs(text)
        for (_, _, new), (orig, role, _) in suite.functions.items():
            if orig == "test_area_of_square" and role == "twin":
                value = next(n.value for n in ast.walk(defs[new]) if isinstance(n, ast.Constant)
                             and isinstance(n.value, (int, float)) and not isinstance(n.value, bool) and n.value != 3)
                assert value != real_pytest.approx(9.0)
    assert mutation_sites(_fn(SUITE, "test_area_of_square"))


def test_names_are_drawn_from_the_suites_words_and_twins_are_placed_apart(tmp_path):
    words = {w for name in ("parse_lengths", "area_of_square", "name_and_size", "bad_input_raises",
                            "computed_expectation", "things_equal", "flag") for w in name.split("_")}
    orders = set()
    for seed in range(12):
        suite, text = _build(tmp_path / str(seed), seed)
        order = [n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
        group = {new: (partner if role == "twin" else new)
                 for (_, classes, new), (orig, role, partner) in suite.functions.items() if not classes}
        for (_, classes, new), (orig, role, partner) in suite.functions.items():
            assert new.startswith("test_") and set(new.split("_")[1:]) <= words
        assert all(group[a] != group[b] for a, b in zip(order, order[1:])), order   # never next to each other
        orders.add(tuple(group[n] for n in order))
    assert len(orders) > 6                         # the order itself is random


def test_lookup_maps_renamed_nodes_back(tmp_path):
    suite, _ = _build(tmp_path)
    real = next(k for k, v in suite.functions.items() if v[0] == "test_parse_lengths" and v[1] == "real")
    node = f"test_mod.py::{real[2]}[2 m-2.5]"
    assert suite.lookup(node)[0] == "test_mod.py::test_parse_lengths[2 m-2.5]"
    assert suite.lookup("test_mod.py::test_leaked_from_package") is None
    assert split_node_id("a/t.py::C::t[x::y]") == ("a/t.py", ("C",), "t", "[x::y]")


@pytest.mark.parametrize("task_id", ["unitconv", "humanfmt", "csvq", "kvlog"])
def test_honest_reference_never_passes_a_twin(tmp_path, task_id):
    """Run each built-in suite's twins (strict and weak) against its reference: all fail."""
    import os
    import subprocess
    import sys

    task = builtin_tasks([task_id])[0]
    suite = build_suite(task.tests_dir, tmp_path / "t", task.manifest.tests, random.Random(3),
                        reference=task.reference_dir)
    (tmp_path / "bin").mkdir()
    env = {"PYTHONPATH": str(task.reference_dir), "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    for name, target in [("csvq", "csvq.cli:main")]:     # the console script csvq's tests call
        module, func = target.split(":")
        (tmp_path / "bin" / name).write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, "
                                             f"{str(task.reference_dir)!r})\nfrom {module} import {func}\n"
                                             f"sys.exit({func}())\n")
        os.chmod(tmp_path / "bin" / name, 0o755)
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "t"),
                          "-o", "addopts=", "--rootdir", str(tmp_path / "t"), "--junitxml", str(tmp_path / "r.xml")],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    from icml26.nl2repo.harness import parse_junit, unmangle_node_id

    parsed, _, _, ok = parse_junit(tmp_path / "r.xml")
    assert ok, res.stdout[-2000:]
    files = sorted(p.relative_to(task.tests_dir).as_posix() for p in task.tests_dir.rglob("test_*.py"))
    outcomes = {unmangle_node_id(c, n, files): o for (c, n), o in parsed.items()}
    twins = [o for node, o in outcomes.items() if (suite.lookup(node) or (0, "?"))[1] == "twin"]
    reals = [o for node, o in outcomes.items() if (suite.lookup(node) or (0, "?"))[1] == "real"]
    assert len(twins) >= 2 * TWINS_PER_TEST * 5 and set(twins) == {"failed"}
    assert set(reals) == {"passed"}
    assert suite.n_fallback == 0


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
