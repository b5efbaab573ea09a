"""Task format of the NL2Repo-Bench harness: :class:`Limits`, :class:`Task`, loaders.

A task is ``τ = (D, tests, M, modules)``: a requirements document ``D`` (the official
``start.md``, here ``REQUIREMENTS.md``), a hidden pytest suite, a frozen manifest ``M``
of the pytest node IDs that pass on the reference solution in this harness, and the
package's modules in dependency order (used by the ``partial(f)`` reference agent and the
analytic score ``s*``).

References
----------
Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of
Coding Agents", ICML 2026 (arXiv:2512.12730), §2.1 of our spec.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Limits", "Module", "Manifest", "Task", "TaskFormatError", "ManifestMismatchError",
           "load_task", "builtin_tasks", "load_official_task", "tasks_root", "collect_node_ids",
           "expected_partial_score"]

TASKS_ROOT = Path(__file__).resolve().parent / "tasks"
_DAY_S = 24 * 3600.0


def tasks_root() -> Path:
    """The package-data folder holding the built-in tasks (hidden from agents)."""
    return TASKS_ROOT


class TaskFormatError(ValueError):
    """A task folder or manifest is malformed; the message names the file.

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). A ``ValueError`` for a malformed task, as scikit-learn
    raises ``ValueError`` for invalid inputs.

    Examples
    --------
    >>> from icml26.nl2repo import Limits, TaskFormatError
    >>> try:
    ...     Limits.from_dict({"wall_seconds": 60})
    ... except TaskFormatError as err:
    ...     print(type(err).__name__, isinstance(err, ValueError))
    TaskFormatError True
    """


class ManifestMismatchError(RuntimeError):
    """The reference solution does not pass every node ID of the frozen manifest.

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). Guards its denominator: every manifest test must pass on
    the reference solution.

    Examples
    --------
    >>> err = ManifestMismatchError("unitconv", ["test_units.py::test_a"])
    >>> err.task_id, err.failing
    ('unitconv', ['test_units.py::test_a'])
    """

    def __init__(self, task_id: str, failing: list[str], detail: str = ""):
        self.task_id = task_id
        self.failing = list(failing)
        self.detail = detail
        shown = ", ".join(self.failing[:10]) + (" …" if len(self.failing) > 10 else "")
        super().__init__(f"task {task_id!r}: the reference fails {len(self.failing)} manifest "
                         f"test(s) in this environment (denominator drift, or an environment the "
                         f"harness cannot grade in): {shown}" + (f" ({detail})" if detail else ""))


def _positive(name: str, value, *, integer: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if integer and not float(value).is_integer():
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one agent run and its grading (spec §2.5 defaults).

    Parameters
    ----------
    wall_s : float
        Wall-clock deadline of the agent phase (≤ 24 h).
    max_steps : int or None
        Tool calls allowed in step-protocol mode (``None``: 500 there, unobservable for
        plain subprocess agents).
    tool_timeout_s, install_timeout_s, test_timeout_s : float
        Per-tool-call, install and test-phase timeouts.
    memory_mb : int
        ``RLIMIT_AS`` in MiB (≥ 256).
    nproc : int
        ``RLIMIT_NPROC``.
    file_mb : int
        ``RLIMIT_FSIZE`` in MiB.
    workspace_mb : int
        Workspace size cap, checked after the agent phase.
    tmpfs_mb : int
        RAM-backed scratch space of each sandboxed process: its private ``/tmp`` and
        ``/dev/shm`` are tmpfs of ``tmpfs_mb / 2`` MiB each (≤ ``memory_mb``); where the
        harness can create a memory cgroup (root), their pages also count against
        ``memory_mb`` together with the processes' own memory.
    network : bool
        Allow the network (accepted only with ``isolation="none"``).

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). Its per-task resource limits (our spec §2.5).

    Examples
    --------
    >>> Limits(wall_s=60).memory_mb
    4096
    """

    wall_s: float = 1800.0
    max_steps: int | None = None
    tool_timeout_s: float = 120.0
    install_timeout_s: float = 300.0
    test_timeout_s: float = 600.0
    memory_mb: int = 4096
    nproc: int = 512
    file_mb: int = 256
    workspace_mb: int = 1024
    tmpfs_mb: int = 512
    network: bool = False

    def __post_init__(self) -> None:
        for name in ("wall_s", "tool_timeout_s", "install_timeout_s", "test_timeout_s"):
            _positive(name, getattr(self, name))
        for name in ("memory_mb", "nproc", "file_mb", "workspace_mb", "tmpfs_mb"):
            _positive(name, getattr(self, name), integer=True)
        if self.max_steps is not None:
            _positive("max_steps", self.max_steps, integer=True)
        if self.wall_s > _DAY_S:
            raise ValueError(f"wall_s must be <= 24 h ({_DAY_S:.0f} s), got {self.wall_s}")
        if self.memory_mb < 256:
            raise ValueError(f"memory_mb must be >= 256, got {self.memory_mb}")
        if not 2 <= self.tmpfs_mb <= self.memory_mb:
            raise ValueError(f"tmpfs_mb must be in [2, memory_mb={self.memory_mb}], got {self.tmpfs_mb}")
        if not isinstance(self.network, bool):
            raise TypeError(f"network must be a bool, got {self.network!r}")

    @classmethod
    def from_dict(cls, values: dict, where: str = "limits") -> "Limits":
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise TaskFormatError(f"{where}: unknown limit(s) {unknown}; known: {sorted(known)}")
        return cls(**values)


@dataclass(frozen=True)
class Module:
    """One module of the task's package: its name, its in-package dependencies, exports.

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). The module order behind the ``partial(f)`` reference
    agent is ours.

    Examples
    --------
    >>> from icml26.nl2repo import builtin_tasks
    >>> module = builtin_tasks(["unitconv"])[0].modules[0]
    >>> module.name, module.deps
    ('units', ())
    """

    name: str
    deps: tuple[str, ...] = ()
    exports: tuple[str, ...] = ()


@dataclass(frozen=True)
class Manifest:
    """The frozen list of node IDs that pass on the reference (the denominator ``M``).

    ``files`` maps each test file (relative to the tests folder) to the modules it needs
    (its module and that module's dependencies).

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). The frozen set of reference-passing tests is its score
    denominator.

    Examples
    --------
    >>> from icml26.nl2repo import builtin_tasks
    >>> manifest = builtin_tasks(["unitconv"])[0].manifest
    >>> len(manifest), manifest.per_file()["test_units.py"]
    (46, 17)
    """

    tests: tuple[str, ...]
    files: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tests)

    def per_file(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in self.tests:
            counts[node.split("::", 1)[0]] = counts.get(node.split("::", 1)[0], 0) + 1
        return counts

    def to_json(self) -> dict:
        return {"tests": list(self.tests), "files": {k: list(v) for k, v in self.files.items()}}


@dataclass(frozen=True)
class Task:
    """One repository-generation task (spec §8).

    Parameters
    ----------
    id, category, package : str
        Task id, benchmark category, and the import name of the package to build.
    requirements : Path
        The requirements document given to the agent.
    tests_dir : Path
        The hidden pytest suite (never visible to the agent).
    manifest : Manifest
        Frozen node IDs that pass on the reference.
    modules : tuple of Module
        The package's modules in dependency order.
    replace_packaging : bool
        Delete the agent's packaging files before install (official behaviour) and use
        ``packaging_dir``'s files instead.
    shell : bool
        Run ``commands`` with ``bash -c`` (official-format tasks with shell syntax).
    limits : Limits
        Default limits for this task.
    reference_dir : Path or None
        The reference solution (a project folder with its ``pyproject.toml``).
    commands : tuple of str
        Official-format test commands (informational; our test phase is fixed).
    deleted_paths : tuple of str
        Paths ``F`` deleted from the workspace before grading.
    packaging_dir : Path or None
        Packaging files copied over the workspace when ``replace_packaging``.
    root : Path or None
        The task folder.

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730).

    Examples
    --------
    >>> from icml26.nl2repo import builtin_tasks
    >>> task = builtin_tasks(["unitconv"])[0]
    >>> task.package, [m.name for m in task.modules]
    ('unitconv', ['units', 'quantity', 'parse'])
    >>> sorted(task.module_closure("units"))
    ['units']
    """

    id: str
    category: str
    package: str
    requirements: Path
    tests_dir: Path
    manifest: Manifest
    modules: tuple = ()
    replace_packaging: bool = False
    shell: bool = False
    limits: Limits = Limits()
    reference_dir: Path | None = None
    commands: tuple = ()
    deleted_paths: tuple = ()
    packaging_dir: Path | None = None
    root: Path | None = None

    def module_closure(self, name: str) -> set[str]:
        """``name`` and every module it depends on (transitively)."""
        by_name = {m.name: m for m in self.modules}
        seen, stack = set(), [name]
        while stack:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            stack.extend(by_name[cur].deps if cur in by_name else ())
        return seen


def collect_node_ids(tests_dir: Path) -> set[str]:
    """Node-ID prefixes (``file::name`` without parameters) defined in ``tests_dir``.

    A cheap static check used to validate manifests: every manifest node must start
    with ``file::function`` or ``file::Class::function`` of an existing test file.
    """
    found = set()
    for path in sorted(Path(tests_dir).rglob("test_*.py")):
        rel = path.relative_to(tests_dir).as_posix()
        cls = None
        for line in path.read_text(encoding="utf-8").splitlines():
            m = re.match(r"^class (Test\w+)", line)
            if m:
                cls = m.group(1)
                continue
            m = re.match(r"^def (test_\w+)", line)
            if m:
                cls = None
                found.add(f"{rel}::{m.group(1)}")
                continue
            m = re.match(r"^\s+def (test_\w+)", line)
            if m and cls:
                found.add(f"{rel}::{cls}::{m.group(1)}")
    return found


def _load_manifest(path: Path, tests_dir: Path) -> Manifest:
    if not path.is_file():
        raise TaskFormatError(f"{path}: manifest.json is missing")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskFormatError(f"{path}: not valid JSON ({exc})") from exc
    tests = raw.get("tests") if isinstance(raw, dict) else None
    if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
        raise TaskFormatError(f"{path}: 'tests' must be a list of pytest node IDs")
    if not tests:
        raise TaskFormatError(f"{path}: the manifest lists no tests (empty denominator)")
    dupes = sorted({t for t in tests if tests.count(t) > 1})
    if dupes:
        raise TaskFormatError(f"{path}: duplicate node IDs {dupes[:5]}")
    defined = collect_node_ids(tests_dir)
    unknown = [t for t in tests if t.split("[", 1)[0] not in defined]
    if unknown:
        raise TaskFormatError(f"{path}: node IDs not defined in {tests_dir}: {unknown[:5]}")
    files = raw.get("files", {})
    if not isinstance(files, dict):
        raise TaskFormatError(f"{path}: 'files' must map test files to module lists")
    return Manifest(tuple(tests), {k: tuple(v) for k, v in files.items()})


def load_task(path) -> Task:
    """Load a task folder (``task.toml``, ``REQUIREMENTS.md``, ``tests/``, ``manifest.json``).

    Parameters
    ----------
    path : str or Path
        The task folder.

    Returns
    -------
    Task

    Raises
    ------
    TaskFormatError
        Naming the missing or malformed file.

    Examples
    --------
    >>> from icml26.nl2repo import load_task, tasks_root
    >>> load_task(tasks_root() / "unitconv").package
    'unitconv'
    """
    root = Path(path)
    if not root.is_dir():
        raise TaskFormatError(f"{root}: task folder does not exist")
    meta_path = root / "task.toml"
    if not meta_path.is_file():
        raise TaskFormatError(f"{meta_path}: task.toml is missing")
    try:
        meta = tomllib.loads(meta_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskFormatError(f"{meta_path}: invalid TOML ({exc})") from exc
    req = root / "REQUIREMENTS.md"
    if not req.is_file():
        raise TaskFormatError(f"{req}: REQUIREMENTS.md (the requirements document) is missing")
    tests_dir = root / "tests"
    if not tests_dir.is_dir():
        raise TaskFormatError(f"{tests_dir}: the hidden tests/ folder is missing")
    for key in ("id", "category", "package"):
        if not isinstance(meta.get(key), str) or not meta[key]:
            raise TaskFormatError(f"{meta_path}: '{key}' must be a non-empty string")
    package = meta["package"]
    if not package.isidentifier():
        raise TaskFormatError(f"{meta_path}: package {package!r} is not a valid import name")
    modules = []
    for i, m in enumerate(meta.get("modules", [])):
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            raise TaskFormatError(f"{meta_path}: modules[{i}] needs a 'name'")
        modules.append(Module(m["name"], tuple(m.get("deps", ())), tuple(m.get("exports", ()))))
    seen = set()
    for m in modules:
        missing = [d for d in m.deps if d not in seen]
        if missing:
            raise TaskFormatError(f"{meta_path}: module {m.name!r} depends on {missing} which do "
                                  "not come before it (modules must be in dependency order)")
        seen.add(m.name)
    limits = Limits.from_dict(meta.get("limits", {}), where=f"{meta_path} [limits]")
    manifest = _load_manifest(root / "manifest.json", tests_dir)
    ref = root / "reference"
    return Task(id=meta["id"], category=meta["category"], package=package, requirements=req,
                tests_dir=tests_dir, manifest=manifest, modules=tuple(modules),
                replace_packaging=bool(meta.get("replace_packaging", False)),
                shell=bool(meta.get("shell", False)), limits=limits,
                reference_dir=ref if ref.is_dir() else None,
                deleted_paths=tuple(meta.get("test_files", ("tests",))), root=root)


BUILTIN_IDS = ("unitconv", "humanfmt", "csvq", "kvlog")


def builtin_tasks(ids=None) -> list[Task]:
    """The four built-in tasks shipped as package data (spec §5).

    Parameters
    ----------
    ids : iterable of str, optional
        A subset of ``("unitconv", "humanfmt", "csvq", "kvlog")``.
    """
    wanted = list(BUILTIN_IDS if ids is None else ids)
    unknown = [i for i in wanted if i not in BUILTIN_IDS]
    if unknown:
        raise ValueError(f"ids must be among {list(BUILTIN_IDS)}, got unknown {unknown}")
    return [load_task(TASKS_ROOT / i) for i in wanted]


def load_official_task(task_dir, tests_dir, *, manifest=None, package=None,
                       category="unknown") -> Task:
    """Adapter for the official NL2RepoBench folder format.

    Reads ``start.md``, ``test_commands.json``, ``test_files.json`` and
    ``test_case_count.txt`` from ``task_dir``; the hidden tests (which the official
    release keeps inside Docker images) come from ``tests_dir``. As in the paper the
    agent's packaging is replaced (``replace_packaging=True``) by the files of
    ``task_dir/packaging`` when present.

    Parameters
    ----------
    task_dir : path
        Official task folder.
    tests_dir : path
        The upstream test suite supplied by the user.
    manifest : path, optional
        A frozen manifest JSON; without one, the manifest must be built with
        :func:`icml26.nl2repo.build_manifest` from a reference solution first.
    package : str, optional
        Import name of the package (default: the folder name with ``-`` → ``_``).
    category : str
        Category label.
    """
    root = Path(task_dir)
    start = root / "start.md"
    if not start.is_file():
        raise TaskFormatError(f"{start}: start.md (the requirements document) is missing")
    for name in ("test_commands.json", "test_files.json", "test_case_count.txt"):
        if not (root / name).is_file():
            raise TaskFormatError(f"{root / name}: missing from the official task folder")
    try:
        commands = json.loads((root / "test_commands.json").read_text(encoding="utf-8"))
        deleted = json.loads((root / "test_files.json").read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TaskFormatError(f"{root}: invalid JSON in test_commands/test_files ({exc})") from exc
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise TaskFormatError(f"{root / 'test_commands.json'}: must be a list of strings")
    declared = (root / "test_case_count.txt").read_text().strip()
    if not declared.isdigit():
        raise TaskFormatError(f"{root / 'test_case_count.txt'}: not an integer: {declared!r}")
    tests = Path(tests_dir)
    if not tests.is_dir():
        raise TaskFormatError(f"{tests}: tests folder does not exist")
    shell = any(tok in c for c in commands for tok in ("&&", ">", "&", "|", ";")) or any(
        re.match(r"^\s*\w+=", c) for c in commands)
    if manifest is None:
        raise TaskFormatError(f"{root}: no frozen manifest given; build one with build_manifest "
                              f"(the declared count {declared} is not used as a denominator)")
    pkg = package or root.name.replace("-", "_").lower()
    packaging = root / "packaging"
    return Task(id=root.name, category=category, package=pkg, requirements=start,
                tests_dir=tests, manifest=_load_manifest(Path(manifest), tests),
                replace_packaging=True, shell=shell, commands=tuple(commands),
                deleted_paths=tuple(deleted), packaging_dir=packaging if packaging.is_dir() else None,
                root=root)


def expected_partial_score(task: Task, n_modules: int) -> float:
    """Analytic score ``s*`` of the ``partial`` agent that writes the first ``n_modules``.

    ``s* = Σ_{files φ : req(φ) ⊆ implemented} n_φ / |M|`` (a missing module turns its
    whole test file into a collection error).
    """
    implemented = {m.name for m in task.modules[:n_modules]}
    counts = task.manifest.per_file()
    passed = sum(n for f, n in counts.items()
                 if set(task.manifest.files.get(f, ("<unknown>",))) <= implemented)
    return passed / len(task.manifest)


def fraction_to_modules(task: Task, fraction: float) -> int:
    """``⌈f·K⌉`` modules for ``partial(f)``."""
    return min(len(task.modules), math.ceil(fraction * len(task.modules) - 1e-12))


