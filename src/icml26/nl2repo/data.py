"""Task data: freezing manifests of the built-in tasks and generated scaling suites.

The four built-in tasks (``unitconv``, ``humanfmt``, ``csvq``, ``kvlog``) are written for
this project and ship as package data; the official 104 tasks need Docker images and the
network and are read only through :func:`icml26.nl2repo.load_official_task`.
"""

from __future__ import annotations

import json
from pathlib import Path

from .task import Task, collect_node_ids, load_task

__all__ = ["freeze_manifest", "make_scaling_task", "module_requirements"]


def module_requirements(task_dir: Path, modules: list) -> dict:
    """``test_<module>.py`` → the module and its dependencies (the ``req(φ)`` of ``s*``)."""
    by_name = {m["name"]: m for m in modules}

    def closure(name):
        seen, stack = [], [name]
        while stack:
            cur = stack.pop()
            if cur not in seen:
                seen.append(cur)
                stack.extend(by_name[cur].get("deps", []))
        return sorted(seen)

    files = {}
    for path in sorted((task_dir / "tests").glob("test_*.py")):
        mod = path.stem[len("test_"):]
        if mod not in by_name:
            raise ValueError(f"{path}: test files must be named test_<module>.py")
        files[path.name] = closure(mod)
    return files


def freeze_manifest(task_dir, *, sandbox="auto") -> Path:
    """Grade the reference in this harness and write ``manifest.json`` (task-build time)."""
    import tomllib

    from .harness import build_manifest
    from .task import Manifest

    task_dir = Path(task_dir)
    meta = tomllib.loads((task_dir / "task.toml").read_text())
    files = module_requirements(task_dir, meta.get("modules", []))
    ids = sorted(collect_node_ids(task_dir / "tests"))
    path = task_dir / "manifest.json"
    path.write_text(json.dumps({"tests": ids, "files": files}, indent=1))
    task = load_task(task_dir)
    passing = build_manifest(task, sandbox=sandbox)
    passing = sorted(passing)
    path.write_text(json.dumps(Manifest(tuple(passing), files).to_json(), indent=1) + "\n")
    return path


_SCALING_TEST = '''import pytest

from {pkg}.core import value


@pytest.mark.parametrize("i", range({n}))
def test_value(i):
    assert value(i) - i == 1
'''


def make_scaling_task(n_tests: int, root) -> Task:
    """A trivial generated task with ``n_tests`` parametrized tests and its reference.

    Used by the scaling check: harness overhead (total − pytest's own duration) should
    grow at most linearly in ``|M|``. Every test has a literal expected value, so every one
    gets a canary twin (the graded suite runs ``2 |M|`` tests).
    """
    if isinstance(n_tests, bool) or not isinstance(n_tests, int) or n_tests < 1:
        raise ValueError(f"n_tests must be an integer >= 1, got {n_tests!r}")
    root = Path(root)
    pkg = "scalepkg"
    (root / "tests").mkdir(parents=True, exist_ok=True)
    ref = root / "reference" / pkg
    ref.mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(
        f'id = "scale{n_tests}"\ncategory = "Scaling"\npackage = "{pkg}"\n\n'
        f'[[modules]]\nname = "core"\ndeps = []\nexports = ["value"]\n')
    (root / "REQUIREMENTS.md").write_text("# scalepkg\n\n`scalepkg.core.value(i) -> i + 1`.\n")
    (root / "tests" / "test_core.py").write_text(_SCALING_TEST.format(pkg=pkg, n=n_tests))
    (ref / "__init__.py").write_text("from .core import value\n")
    (ref / "core.py").write_text("def value(i):\n    return i + 1\n")
    (root / "reference" / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        f'\n[project]\nname = "{pkg}"\nversion = "1.0"\n\n[tool.setuptools]\npackages = ["{pkg}"]\n')
    ids = [f"test_core.py::test_value[{i}]" for i in range(n_tests)]
    (root / "manifest.json").write_text(json.dumps({"tests": ids, "files": {"test_core.py": ["core"]}}))
    return load_task(root)

