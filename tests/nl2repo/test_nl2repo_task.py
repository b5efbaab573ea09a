"""Task format, manifests, limits and the analytic partial score."""

import json
import math
import shutil

import pytest

from icml26.nl2repo import (Limits, TaskFormatError, builtin_tasks, load_official_task, load_task,
                            tasks_root)
from icml26.nl2repo.data import module_requirements
from icml26.nl2repo.task import collect_node_ids, expected_partial_score, fraction_to_modules


@pytest.fixture
def task_copy(tmp_path):
    dst = tmp_path / "kvlog"
    shutil.copytree(tasks_root() / "kvlog", dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def test_builtin_tasks_load_with_expected_sizes():
    tasks = {t.id: t for t in builtin_tasks()}
    assert {k: len(t.manifest) for k, t in tasks.items()} == {
        "unitconv": 46, "humanfmt": 82, "csvq": 69, "kvlog": 31}
    assert [m.name for m in tasks["csvq"].modules] == ["io", "infer", "expr", "ops", "cli"]


def test_requirements_follow_six_section_layout():
    for t in builtin_tasks():
        text = t.requirements.read_text()
        heads = [line for line in text.splitlines() if line.startswith("## ")]
        assert [h.split(".")[0] for h in heads] == [f"## {i}" for i in range(1, 7)], t.id


def test_manifest_files_match_module_closures():
    for t in builtin_tasks():
        raw = __import__("tomllib").loads((t.root / "task.toml").read_text())
        assert module_requirements(t.root, raw["modules"]) == {
            k: list(v) for k, v in t.manifest.files.items()}


def test_every_manifest_node_is_defined():
    for t in builtin_tasks():
        defined = collect_node_ids(t.tests_dir)
        assert all(n.split("[")[0] in defined for n in t.manifest.tests)


@pytest.mark.parametrize("missing", ["REQUIREMENTS.md", "manifest.json", "tests", "task.toml"])
def test_missing_part_names_the_file(task_copy, missing):
    target = task_copy / missing
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    with pytest.raises(TaskFormatError, match=missing.split(".")[0]):
        load_task(task_copy)


def _rewrite_manifest(task_copy, tests):
    raw = json.loads((task_copy / "manifest.json").read_text())
    raw["tests"] = tests
    (task_copy / "manifest.json").write_text(json.dumps(raw))


def test_empty_manifest_rejected(task_copy):
    _rewrite_manifest(task_copy, [])
    with pytest.raises(TaskFormatError, match="no tests"):
        load_task(task_copy)


def test_duplicate_node_ids_rejected(task_copy):
    _rewrite_manifest(task_copy, ["test_store.py::test_set_get", "test_store.py::test_set_get"])
    with pytest.raises(TaskFormatError, match="duplicate"):
        load_task(task_copy)


def test_unknown_node_ids_rejected(task_copy):
    _rewrite_manifest(task_copy, ["test_store.py::test_does_not_exist"])
    with pytest.raises(TaskFormatError, match="not defined"):
        load_task(task_copy)


def test_modules_out_of_dependency_order_rejected(task_copy):
    toml = (task_copy / "task.toml").read_text().replace('deps = ["storage"]', 'deps = ["txn"]')
    (task_copy / "task.toml").write_text(toml)
    with pytest.raises(TaskFormatError, match="dependency order"):
        load_task(task_copy)


@pytest.mark.parametrize("kwargs,match", [
    ({"wall_s": 0}, "wall_s"), ({"wall_s": -1}, "wall_s"), ({"memory_mb": 128}, "memory_mb"),
    ({"nproc": 0}, "nproc"), ({"wall_s": 25 * 3600}, "24 h"), ({"max_steps": 0}, "max_steps"),
    ({"file_mb": 1.5}, "file_mb"), ({"test_timeout_s": float("inf")}, "test_timeout_s")])
def test_limits_reject_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Limits(**kwargs)


def test_unknown_builtin_id():
    with pytest.raises(ValueError, match="ids"):
        builtin_tasks(["nope"])


def test_partial_score_matches_direct_count():
    t = builtin_tasks(["csvq"])[0]
    k = fraction_to_modules(t, 0.5)
    assert k == 3  # ⌈0.5·5⌉
    implemented = {"io", "infer", "expr"}
    direct = sum(1 for n in t.manifest.tests
                 if set(t.manifest.files[n.split("::")[0]]) <= implemented) / len(t.manifest)
    assert expected_partial_score(t, k) == direct
    assert 0 < direct < 1


def test_fraction_to_modules_is_ceiling():
    t = builtin_tasks(["humanfmt"])[0]
    assert [fraction_to_modules(t, f) for f in (0.0, 0.25, 0.5, 0.75, 1.0)] == [
        0, 1, 2, 3, 4]
    assert fraction_to_modules(t, 0.26) == math.ceil(0.26 * 4)


def test_official_adapter_reads_layout(tmp_path):
    root = tmp_path / "mini-lib"
    tests = tmp_path / "upstream_tests"
    root.mkdir()
    tests.mkdir()
    (root / "start.md").write_text("# mini\n")
    (root / "test_commands.json").write_text(json.dumps(
        ["pip install -e .", "VERSION=1 pytest --continue-on-collection-errors tests"]))
    (root / "test_files.json").write_text(json.dumps(["tests"]))
    (root / "test_case_count.txt").write_text("2\n")
    (tests / "test_a.py").write_text("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"tests": ["test_a.py::test_one", "test_a.py::test_two"]}))
    task = load_official_task(root, tests, manifest=manifest)
    assert (task.package, task.replace_packaging, task.shell, len(task.manifest)) == (
        "mini_lib", True, True, 2)


def test_official_adapter_missing_start_md(tmp_path):
    (tmp_path / "t").mkdir()
    with pytest.raises(TaskFormatError, match="start.md"):
        load_official_task(tmp_path / "t", tmp_path)
