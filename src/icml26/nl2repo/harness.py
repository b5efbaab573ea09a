"""The grading pipeline of our NL2Repo-Bench harness (spec §2.5).

prepare → agent phase (sandboxed; step-protocol file tools resolved beneath a workspace
descriptor) → sanitize → offline non-editable install + audit → import check → hidden
pytest suite (renamed, canary twins, shuffled) in a trusted interpreter that reaches the
package only through a sandboxed worker process → score against the frozen manifest →
failure-mode label. Aggregation over tasks and runs in :class:`Results`.

References
----------
Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of
Coding Agents", ICML 2026 (arXiv:2512.12730). The official grader's regex scoring is
:func:`icml26.nl2repo.baselines.score_legacy`; its documented defects (no shell, wrong
denominators, leaked tests, forgeable text parsing) are fixed here.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import canary
from .beneath import Beneath, PathRefused
from .crosscheck import RANK, SUMMARY_KEYS, StreamReader, parse_summary, read_stream
from .install import (REPORTER_MODULE, audit_install, bridge_paths, console_scripts, make_venv,
                      populate_test_venv, site_packages, top_level_names, tree_state,
                      trusted_import_names)
from .sandbox import SYSTEM_PATHS, Tail, kill_process_group, make_sandbox
from .task import Limits, Task, tasks_root

__all__ = ["AgentSpec", "AgentRun", "GradeReport", "Results", "run_agent", "grade", "evaluate",
           "parse_junit", "mangle_node_id", "check_manifest", "build_manifest", "LABELS",
           "split_official_commands", "PACKAGING_FILES", "own_source"]

PACKAGING_FILES = frozenset({
    "setup.py", "pyproject.toml", "setup.cfg", "requirements.txt", "requirements-dev.txt",
    "requirements-test.txt", "tox.ini", "pytest.ini", "poetry.lock", "Pipfile", "Pipfile.lock",
    "environment.yml", "conda-env.yaml", "MANIFEST.in"})
ALWAYS_REMOVED = frozenset({"conftest.py", "pytest.ini", "tox.ini", "sitecustomize.py",
                            "usercustomize.py"})
PROTECTED_NAMES = frozenset({"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "conftest",
                             "py", "icml26", "sitecustomize", "usercustomize", "_nl2repo_base",
                             REPORTER_MODULE})
# Failure-mode labels in the order they are checked (first match wins).
LABELS = ("no_output", "tamper", "forgery", "workspace_invalid", "install_failed", "import_failed",
          "timeout", "resource_killed", "step_limit", "agent_exit", "test_timeout", "premature_finish",
          "collection_errors", "partial", "complete")
TOOL_OUTPUT_CHARS = 10_000
PREMATURE_FRACTION = 0.25
DEFAULT_MAX_STEPS = 500
IMPORT_TIMEOUT_S = 60.0
MAX_JUNIT_BYTES = 64 << 20
MIN_TWINS = 3                       # fewer canary twins than this: flagged canary:weak


# -- agents ------------------------------------------------------------------------------

# Interpreters whose first non-option argument is a script, and their flags that mean
# "no script file" (code on the command line or stdin).
_INTERPRETERS = ((re.compile(r"^(python|pypy)[0-9.]*$"), frozenset({"-c", "-m", "-"})),
                 (re.compile(r"^(sh|bash|dash|zsh|ksh)$"), frozenset({"-c", "-s", "-"})),
                 (re.compile(r"^(node|nodejs)$"), frozenset({"-e", "--eval", "-p", "--print", "-"})),
                 (re.compile(r"^(perl|ruby)$"), frozenset({"-e", "-E", "-"})))
_FLAGS_WITH_VALUE = frozenset({"-X", "-W", "-Q"})   # python options taking a value


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):   # code passed with -c, a name too long for a path
        return False


def _script_arg(argv: list) -> int | None:
    """Index of the script an interpreter command runs (``python my_agent.py``), if any."""
    name = Path(argv[0]).name
    no_script = next((flags for pattern, flags in _INTERPRETERS if pattern.match(name)), None)
    if no_script is None:
        return None
    skip = False
    for i, arg in enumerate(argv[1:], 1):
        if skip:
            skip = False
        elif arg in no_script:
            return None
        elif arg in _FLAGS_WITH_VALUE and name.startswith(("python", "pypy")):
            skip = True
        elif not arg.startswith("-"):
            return i
    return None


@dataclass
class AgentSpec:
    """Any agent: a command run in the workspace, or a JSON-lines step-protocol driver.

    The command is resolved **in the caller's directory when the spec is built**, because
    the agent later runs with the workspace as its working directory and a private
    ``/tmp``: ``argv[0]`` becomes an absolute path (looked up on ``PATH`` or relative to
    the current directory), every later argument that names an existing file relative to
    the current directory is made absolute, and each such file (and ``argv[0]``) is bound
    read-only at the same path inside the sandbox, so ``AgentSpec(["python",
    "my_agent.py"])`` and ``/tmp/agent.py`` both work. Only the named files are bound, not
    their folders; ship anything else the agent needs with ``data``. An interpreter
    command whose script does not exist (``python missing.py``) is refused here, before
    any grading starts.

    Parameters
    ----------
    argv : list of str
        The command (``argv[0]`` must be an executable file or on ``PATH``).
    env : dict of str to str
        Extra environment variables (the rest of the environment is not inherited).
    protocol : {"subprocess", "steps"}
        ``subprocess``: the agent works in ``$NL2REPO_WORKSPACE`` on its own.
        ``steps``: it sends ``{"tool": "bash"|"write_file"|"read_file"|"finish", ...}``
        lines on stdout, gets one JSON reply per line on stdin, and has no direct
        access to the workspace (step counts and ``max_steps`` become observable).
    data : path, optional
        A folder copied into the run and exposed read-only as ``$NL2REPO_AGENT_DATA``
        (model files, or the reference solution for the oracle agents).
    name : str
        Label used in results (default: ``argv[0]``'s name).

    Attributes
    ----------
    binds : list of Path
        The files named by ``argv`` outside the system folders, bound read-only at the same
        path (the sandbox shows nothing else of the host but the Python runtime).

    Raises
    ------
    ValueError
        When ``argv[0]`` is not an executable (on ``PATH`` or as a path), or an
        interpreter's script argument does not exist; the message names it.

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). Any agent under its harness protocol.

    Examples
    --------
    >>> AgentSpec(["python3", "-c", "print('hi')"]).name
    'python3'
    """

    argv: list
    env: dict = field(default_factory=dict)
    protocol: str = "subprocess"
    data: Path | None = None
    name: str = ""
    binds: list = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.argv, (list, tuple)) or not self.argv:
            raise ValueError(f"argv must be a non-empty list of str, got {self.argv!r}")
        if not all(isinstance(a, str) for a in self.argv):
            raise ValueError(f"argv must contain only str, got {self.argv!r}")
        self.argv = list(self.argv)
        exe = self.argv[0]
        if not self.name:
            self.name = Path(exe).name
        if os.sep in exe:
            path = Path(exe).absolute()
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise ValueError(f"argv[0] {exe!r} is not an executable file "
                                 f"(resolved against {Path.cwd()})")
        else:
            found = shutil.which(exe)
            if found is None:
                raise ValueError(f"argv[0] {exe!r} was not found on PATH")
            path = Path(found).absolute()
        self.argv[0] = str(path)
        named = [path]
        script = _script_arg(self.argv)
        for i, arg in enumerate(self.argv[1:], 1):
            candidate = Path(arg).expanduser()
            if arg.startswith("-") or not _is_file(candidate):
                if i == script:
                    raise ValueError(f"agent script {arg!r} (argv[{i}]) was not found: a relative "
                                     f"path is resolved against the current directory "
                                     f"{Path.cwd()}, where the agent command is built")
                continue
            self.argv[i] = str(candidate.absolute())
            named.append(candidate.absolute())
        # The sandbox shows only the system folders and the Python runtime of the host.
        system = [Path(d) for d in SYSTEM_PATHS]
        self.binds = [p for p in named if not any(p == d or d in p.parents for d in system)]
        if self.protocol not in ("subprocess", "steps"):
            raise ValueError(f"protocol must be 'subprocess' or 'steps', got {self.protocol!r}")
        if not isinstance(self.env, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.env.items()):
            raise ValueError("env must map str to str")
        if self.data is not None and not Path(self.data).is_dir():
            raise ValueError(f"data must be an existing folder, got {self.data}")


@dataclass
class AgentRun:
    """What the agent phase did (exit code, wall time, limits hit, steps).

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). The agent phase of its protocol.

    Examples
    --------
    >>> run = AgentRun(returncode=0, wall_s=1.5, timed_out=False, killed_by_limit=False,
    ...                steps=None, finished=True, step_limit_hit=False, isolation="bwrap")
    >>> run.finished, run.flags
    (True, [])
    """

    returncode: int | None
    wall_s: float
    timed_out: bool
    killed_by_limit: bool
    steps: int | None
    finished: bool
    step_limit_hit: bool
    isolation: str
    stdout: str = ""
    stderr: str = ""
    max_steps: int | None = None
    wall_budget_s: float = 0.0
    flags: list = field(default_factory=list)


MAX_EVENT_LOG_BYTES = 64 << 20     # $NL2REPO_EVENTS is read up to this size to count steps


def _base_env(home: Path, tmp: Path, extra: dict | None = None) -> dict:
    bindir = Path(sys.executable).parent
    env = {"PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
           "TMPDIR": str(tmp), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PIP_NO_INDEX": "1",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1"}
    env.update(extra or {})
    return env


def own_source() -> Path:
    """The icml26 package folder (this harness, its tasks and their references)."""
    import icml26

    return Path(icml26.__file__).resolve().parent


def _hidden_for(task: Task) -> list[Path]:
    """Paths no sandboxed process may read: the harness's own source, the task's assets.

    Most are outside the sandbox's view anyway (it shows only system folders, the runtime
    and the run's own paths); these are covered by empty mounts wherever a bound folder
    would show them (a non-editable install inside ``site-packages``, a task under ``/usr``).
    """
    hidden = [own_source(), tasks_root()]
    for p in (task.root, task.tests_dir, task.reference_dir):
        if p is not None and not _is_within(Path(p), tasks_root()):
            hidden.append(Path(p))
    return [p for p in hidden if p.exists()]


def _is_within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def _resolve_sandbox(sandbox):
    if sandbox is None or isinstance(sandbox, str):
        return make_sandbox(sandbox or "auto")
    return sandbox


def _resolve_limits(task: Task, limits: Limits | None, sandbox) -> Limits:
    limits = limits or task.limits
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a Limits, got {type(limits).__name__}")
    if limits.network and sandbox.isolation != "none":
        raise ValueError("limits.network=True is only accepted with sandbox='none'")
    return limits


def run_agent(task: Task, agent: AgentSpec, workdir, *, limits: Limits | None = None,
              sandbox=None) -> AgentRun:
    """Run one agent on one task in a fresh workspace under ``workdir`` (spec §2.5 steps 1–2).

    The workspace ``workdir/workspace`` starts with only ``REQUIREMENTS.md``; the task's
    hidden assets are covered by empty mounts; ``HOME`` and ``TMPDIR`` are private.

    Parameters
    ----------
    task : Task
    agent : AgentSpec
    workdir : path
        An empty folder owned by this run.
    limits : Limits, optional
        Default: ``task.limits``.
    sandbox : Sandbox or str, optional
        A backend or its name (default ``"auto"``).

    Returns
    -------
    AgentRun
    """
    box = _resolve_sandbox(sandbox)
    limits = _resolve_limits(task, limits, box)
    if not isinstance(agent, AgentSpec):
        raise TypeError(f"agent must be an AgentSpec, got {type(agent).__name__}")
    workdir = Path(workdir)
    ws, home, tmp = workdir / "workspace", workdir / "home", workdir / "tmp"
    for d in (ws, home, tmp):
        d.mkdir(parents=True, exist_ok=False)
    shutil.copyfile(task.requirements, ws / "REQUIREMENTS.md")
    ro = list(agent.binds)
    data = workdir / "agent_data"
    if agent.data is not None:
        shutil.copytree(agent.data, data, symlinks=True)
        ro.append(data)
    events = home / "events.jsonl"
    deadline = time.time() + limits.wall_s
    env = _base_env(home, tmp, {
        "NL2REPO_REQUIREMENTS": str(ws / "REQUIREMENTS.md"), "NL2REPO_WORKSPACE": str(ws),
        "NL2REPO_DEADLINE": f"{deadline:.0f}", "NL2REPO_EVENTS": str(events),
        "NL2REPO_AGENT_DATA": str(data), "NL2REPO_PACKAGE": task.package})
    env.update(agent.env)
    hidden = _hidden_for(task)
    if agent.protocol == "steps":
        return _run_steps(task, agent, box, limits, env, ws, home, tmp, ro, hidden, workdir)
    res = box.run(agent.argv, cwd=ws, env=env, limits=limits, rw_paths=[ws, home, tmp],
                  hidden_paths=hidden, ro_paths=ro)
    steps = None
    with Beneath(home) as home_fd:     # never follow a link the agent left in its HOME
        try:
            steps = home_fd.read_bytes(events.name, MAX_EVENT_LOG_BYTES).count(b"\n")
        except OSError:
            steps = None
    return AgentRun(res.returncode, res.wall_s, res.timed_out, res.killed_by_limit, steps,
                    finished=not res.timed_out and not res.killed_by_limit, step_limit_hit=False,
                    isolation=box.isolation, stdout=res.text("stdout")[-20000:],
                    stderr=res.text("stderr")[-20000:], max_steps=limits.max_steps,
                    wall_budget_s=limits.wall_s)


def _execute_tool(request: dict, box, limits, env, ws, home, tmp, hidden, files: Beneath,
                  refused: list) -> dict:
    """One tool call of a step-protocol agent.

    ``bash`` runs in the sandbox. ``read_file`` / ``write_file`` run here, on the workspace
    held open as ``files`` (:class:`~icml26.nl2repo.beneath.Beneath`): the kernel resolves
    each path beneath that descriptor and refuses symlinks, ``..`` and mount crossings, so a
    folder swapped for a link while the request is served cannot send it to a host path.
    Refusals are counted in ``refused``.
    """
    tool = request.get("tool")
    if tool == "bash":
        cmd = request.get("cmd")
        if not isinstance(cmd, str):
            return {"ok": False, "error": "bash needs a string 'cmd'"}
        res = box.run(["bash", "-c", cmd], cwd=ws, env=env, limits=limits,
                      rw_paths=[ws, home, tmp], hidden_paths=hidden,
                      timeout_s=limits.tool_timeout_s)
        out = (res.text("stdout") + res.text("stderr"))[-TOOL_OUTPUT_CHARS:]
        return {"ok": res.returncode == 0, "exit_code": res.returncode,
                "timed_out": res.timed_out, "output": out}
    if tool in ("write_file", "read_file"):
        try:
            if tool == "write_file":
                files.write_text(request.get("path"), str(request.get("content", "")))
                return {"ok": True}
            text = files.read_text(request.get("path"), limit=4 * TOOL_OUTPUT_CHARS)
            return {"ok": True, "content": text[:TOOL_OUTPUT_CHARS]}
        except PathRefused as exc:
            refused.append(request.get("path"))
            return {"ok": False, "error": f"refused: {exc.strerror}: {exc.filename}"}
        except OSError as exc:
            return {"ok": False, "error": f"{exc.strerror}: {exc.filename}"}
    return {"ok": False, "error": f"unknown tool {tool!r}; tools: bash, write_file, read_file, finish"}


def _run_steps(task, agent, box, limits, env, ws, home, tmp, ro, hidden, workdir) -> AgentRun:
    """Drive a step-protocol agent: it only acts through tool calls the harness executes.

    The driver and its tools share no writable folder (the driver has its own ``HOME`` and
    ``TMPDIR``; the tools have the workspace, theirs), so no tool can hand the driver a
    descriptor of the workspace (a unix socket needs a shared path) to race the harness with.
    """
    max_steps = limits.max_steps or DEFAULT_MAX_STEPS
    ctl, dtmp = workdir / "controller", workdir / "controller-tmp"
    ctl.mkdir()
    dtmp.mkdir()
    agent_env = {**env, "NL2REPO_WORKSPACE": "", "NL2REPO_MAX_STEPS": str(max_steps),
                 "HOME": str(ctl), "TMPDIR": str(dtmp), "NL2REPO_EVENTS": ""}
    files = Beneath(ws)                # opened before the agent runs; every tool path resolves beneath it
    refused: list = []
    start = time.monotonic()
    proc = box.spawn(agent.argv, cwd=ctl, env=agent_env, limits=limits, rw_paths=[ctl, dtmp],
                     hidden_paths=[*hidden, ws, home, tmp], ro_paths=ro)
    try:
        err = Tail(proc.stderr)
        steps, finished, step_limit, timed_out = 0, False, False, False
        log = []
        buf = b""
        fd = proc.stdout.fileno()
        while True:
            remaining = limits.wall_s - (time.monotonic() - start)
            if remaining <= 0:
                timed_out = True
                break
            if b"\n" not in buf:
                ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
                if not ready:
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break  # the agent closed its stdout (it exited)
                buf += chunk
                if len(buf) > (16 << 20):
                    break
                continue
            line, buf = buf.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("not an object")
            except ValueError:
                reply = {"ok": False, "error": "each line must be one JSON object"}
                request = None
            if request is not None and request.get("tool") == "finish":
                finished = True
                break
            if request is not None:
                if steps >= max_steps:
                    step_limit = True
                    break
                steps += 1
                reply = _execute_tool(request, box, limits, env, ws, home, tmp, hidden, files, refused)
                log.append({"step": steps, "tool": request.get("tool"), "ok": reply.get("ok")})
            try:
                proc.stdin.write((json.dumps(reply) + "\n").encode())
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                break
        if proc.poll() is None and finished:
            try:
                proc.stdin.close()
                proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, OSError):
                pass
    finally:
        kill_process_group(proc)
        files.close()
    wall = time.monotonic() - start
    (workdir / "steps.json").write_text(json.dumps(log))      # a folder no sandbox is given
    return AgentRun(proc.returncode, wall, timed_out, False, steps, finished=finished,
                    step_limit_hit=step_limit, isolation=box.isolation,
                    stderr=err.value().decode("utf-8", "replace")[-20000:], max_steps=max_steps,
                    wall_budget_s=limits.wall_s,
                    flags=[f"agent:tool_refused:{len(refused)}_paths"] if refused else [])


# -- grading -----------------------------------------------------------------------------

@dataclass
class GradeReport:
    """The grade of one workspace (spec §2.5 steps 3–7).

    Attributes
    ----------
    score : float
        ``|{n ∈ M : passed}| / |M|`` (no cap).
    outcomes : dict
        Node ID → ``passed`` | ``failed`` | ``error`` | ``skipped`` | ``missing`` |
        ``twin_passed`` (a weak canary twin passed too, so the test does not count).
    label : str
        The failure-mode label (first match in :data:`LABELS`).
    flags : list of str
        Audit findings (``tamper:…``, ``removed:…``, ``invalid:…``).

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). The pass rate over the frozen manifest is its score.

    Examples
    --------
    >>> report = GradeReport(task_id="unitconv", score=0.5, label="partial", install_ok=True,
    ...                      import_ok=True, outcomes={"t::a": "passed", "t::b": "failed"},
    ...                      flags=[], unexpected_tests=0, collection_errors=0, n_passed=1,
    ...                      n_total=2, canaries={}, isolation="bwrap")
    >>> report.score == report.n_passed / report.n_total
    True
    """

    task_id: str
    score: float
    label: str
    install_ok: bool
    import_ok: bool
    outcomes: dict
    flags: list
    unexpected_tests: int
    collection_errors: int
    n_passed: int
    n_total: int
    canaries: dict
    isolation: str
    install_s: float = 0.0
    pytest_s: float = 0.0
    test_wall_s: float = 0.0
    parse_score_s: float = 0.0
    total_s: float = 0.0
    test_timed_out: bool = False
    test_stdout: str = ""
    install_log: str = ""
    reported: dict = field(default_factory=dict)
    n_twins: int = 0
    worker_log: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


class _InvalidWorkspace(Exception):
    pass


def _copy_workspace(src: Path, dst: Path, cap_bytes: int) -> int:
    """Copy ``src`` to ``dst`` keeping symlinks as links; refuse escapes and special files."""
    total = 0
    root = src.resolve()
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        rel_dir = Path(dirpath).relative_to(src)
        (dst / rel_dir).mkdir(parents=True, exist_ok=True)
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            st = os.lstat(path)
            target = dst / rel_dir / name
            if stat.S_ISLNK(st.st_mode):
                link = os.readlink(path)
                resolved = (path.parent / link).resolve() if not os.path.isabs(link) else Path(link).resolve()
                if not _is_within(resolved, root):
                    raise _InvalidWorkspace(f"invalid:symlink_escape:{rel_dir / name}->{link}")
                os.symlink(link, target)
                if name in dirnames:
                    dirnames.remove(name)
            elif stat.S_ISDIR(st.st_mode):
                continue
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
                if total > cap_bytes:
                    raise _InvalidWorkspace(f"invalid:workspace_over_{cap_bytes >> 20}MiB")
                shutil.copyfile(path, target)
            else:
                raise _InvalidWorkspace(f"invalid:special_file:{rel_dir / name}")
    return total


def _sanitize(task: Task, tree: Path) -> list[str]:
    removed = []
    for deleted in task.deleted_paths:
        p = tree / deleted
        if _is_within(p, tree) and (p.exists() or p.is_symlink()):
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            removed.append(f"removed:{deleted}")
    for path in sorted(tree.rglob("*"), reverse=True):
        if not (path.exists() or path.is_symlink()):
            continue
        name = path.name
        drop = name in ALWAYS_REMOVED or name.endswith(".pth") or (
            task.replace_packaging and name in PACKAGING_FILES)
        if drop and not path.is_dir():
            path.unlink()
            removed.append(f"removed:{path.relative_to(tree).as_posix()}")
    if task.replace_packaging and task.packaging_dir is not None:
        shutil.copytree(task.packaging_dir, tree, dirs_exist_ok=True)
    return removed


_PIP_INSTALL = re.compile(r"^(?:python3?\s+-m\s+)?pip3?\s+install\b")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def split_official_commands(commands) -> tuple[list[str], dict]:
    """Split an official ``test_commands.json`` list into setup steps and test-env variables.

    ``pip install …`` steps are replaced by our offline non-editable install and the
    ``pytest …`` step by our fixed test phase; environment-assignment prefixes of the
    pytest step (``VERSION=1 pytest …``) are kept for the test environment; every other
    step (version-file writes, ``&&`` chains) runs in the workspace before the install,
    through ``bash -c`` when the task needs a shell (the official runner exec'd them
    without a shell).

    Examples
    --------
    >>> split_official_commands(["pip install -e .", "echo 1 > v.txt && X=2 pytest tests"])
    (['echo 1 > v.txt'], {'X': '2'})
    """
    setup, env = [], {}
    for command in commands:
        for piece in re.split(r"\s*&&\s*|\s*;\s*", command.strip()):
            if not piece:
                continue
            if "pytest" in piece:
                for token in shlex.split(piece):
                    if not _ENV_ASSIGN.match(token):
                        break
                    key, _, value = token.partition("=")
                    env[key] = value
            elif not _PIP_INSTALL.match(piece):
                setup.append(piece)
    return setup, env


def _audit_names(site: Path, names, trusted=frozenset()) -> list[str]:
    """Hooks among the top-level names a package installs into ``site-packages``.

    ``trusted``: the top-level names the test interpreter imports at start and with pytest
    (:func:`~icml26.nl2repo.install.trusted_import_names`); none may be shadowed.
    """
    flags = []
    stdlib = set(sys.stdlib_module_names) | set(trusted)
    for name in sorted(names):
        path = site / name
        if name.endswith(".pth"):
            flags.append(f"tamper:pth_file:{name}")
            continue
        if name.endswith(".dist-info"):
            ep = path / "entry_points.txt"
            if ep.is_file() and "[pytest11]" in ep.read_text(errors="replace"):
                flags.append(f"tamper:pytest_plugin_entry_point:{name}")
            continue
        if name.endswith((".egg-info", ".data")) or name == "__pycache__":
            continue
        top = name.split(".", 1)[0]
        if top in ("sitecustomize", "usercustomize"):
            flags.append(f"tamper:{top}")
        elif top in PROTECTED_NAMES or top in stdlib:
            flags.append(f"tamper:shadows:{top}")
    return flags


def mangle_node_id(node_id: str) -> tuple[str, str]:
    """The JUnit ``(classname, name)`` pytest writes for a node ID (as ``_pytest.junitxml``)."""
    path, bracket, params = node_id.partition("[")
    names = path.split("::")
    names[0] = names[0].replace("/", ".")
    if names[0].endswith(".py"):
        names[0] = names[0][:-3]
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def unmangle_node_id(classname: str, name: str, files) -> str:
    """Inverse of :func:`mangle_node_id` given the test files (``a/test_b.py``) of the suite."""
    dotted = {f[:-3].replace("/", "."): f for f in files}
    parts = classname.split(".") if classname else []
    for cut in range(len(parts), 0, -1):
        mod = ".".join(parts[:cut])
        if mod in dotted:
            return "::".join([dotted[mod], *parts[cut:], name])
    return "::".join([*parts, name]) if parts else name


def parse_junit(path: Path) -> tuple[dict, float, int, bool]:
    """Parse a JUnit XML file into ``{(classname, name): outcome}``.

    Returns
    -------
    outcomes : dict
    pytest_seconds : float
        The suite duration pytest reported.
    collection_errors : int
    ok : bool
        False when the file is missing, too large or malformed (pytest killed).
    """
    try:
        if not path.is_file() or path.stat().st_size > MAX_JUNIT_BYTES:
            return {}, 0.0, 0, False
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return {}, 0.0, 0, False
    outcomes: dict = {}
    seconds, coll = 0.0, 0
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    for suite in suites:
        try:
            seconds += float(suite.get("time", 0.0))
        except ValueError:
            pass
        for case in suite.iter("testcase"):
            key = (case.get("classname", ""), case.get("name", ""))
            if case.find("error") is not None:
                outcome = "error"
                msg = case.find("error").get("message", "")
                if "collection failure" in msg:
                    coll += 1
            elif case.find("failure") is not None:
                outcome = "failed"
            elif case.find("skipped") is not None:
                outcome = "skipped"
            else:
                outcome = "passed"
            prev = outcomes.get(key)
            if prev is None or RANK[outcome] > RANK[prev]:
                outcomes[key] = outcome
    return outcomes, seconds, coll, True


def _label(report: dict, run: AgentRun | None) -> str:
    if report["no_output"]:
        return "no_output"
    if any(f.startswith("tamper") for f in report["flags"]):
        return "tamper"
    if any(f.startswith("forgery") for f in report["flags"]):
        return "forgery"
    if report["invalid"]:
        return "workspace_invalid"
    if not report["install_ok"]:
        return "install_failed"
    if not report["import_ok"]:
        return "import_failed"
    if run is not None:
        if run.timed_out:
            return "timeout"
        if run.killed_by_limit:
            return "resource_killed"
        if run.step_limit_hit:
            return "step_limit"
    if report.get("test_killed"):
        return "resource_killed"
    if report.get("agent_exit") or report.get("worker_exit"):
        return "agent_exit"
    if report["test_timed_out"]:
        return "test_timeout"
    score = report["score"]
    if run is not None and score < 1 and run.finished and run.steps is not None:
        budget = run.max_steps or DEFAULT_MAX_STEPS
        if (run.steps < PREMATURE_FRACTION * budget
                and run.wall_s < PREMATURE_FRACTION * run.wall_budget_s):
            return "premature_finish"
    if report["collection_errors"] > 0 and score < 1:
        return "collection_errors"
    return "complete" if score == 1 else "partial"


def grade(task: Task, workspace, *, sandbox=None, limits: Limits | None = None,
          agent_run: AgentRun | None = None, workdir=None) -> GradeReport:
    """Grade a workspace against the task's hidden suite and frozen manifest.

    Parameters
    ----------
    task : Task
    workspace : path
        The agent's workspace (never modified; a sanitized copy is graded).
    sandbox : Sandbox or str, optional
    limits : Limits, optional
    agent_run : AgentRun, optional
        The agent phase's record, for the failure-mode label.
    workdir : path, optional
        Where to build the grading copy, venvs and report (default: a temp folder,
        removed afterwards).

    Returns
    -------
    GradeReport

    Notes
    -----
    ``s = |{n ∈ M : outcome(n) = passed}| / |M|``; nodes outside ``M`` are ignored and
    counted in ``unexpected_tests`` (one named like a manifest test is ``tamper``). The
    tests run in a process that never imports the package (it runs in a separate worker
    process; plain data crosses); outcomes come from the harness's reporter plugin over an
    inherited pipe, as the tests run; the JUnit XML and pytest's summary line must agree
    with them (else ``forgery``, score 0); a stream that did not end scores 0; no strict
    canary twin may pass beside its real test (else ``tamper``, score 0). The package is
    built in a throw-away venv (audited). Output text is stored, never scored.
    """
    t_start = time.perf_counter()
    box = _resolve_sandbox(sandbox)
    limits = _resolve_limits(task, limits, box)
    workspace = Path(workspace)
    if not workspace.is_dir():
        raise ValueError(f"workspace {workspace} is not a folder")
    own_dir = workdir is None
    gdir = Path(tempfile.mkdtemp(prefix="nl2repo-grade-")) if own_dir else Path(workdir)
    try:
        return _grade(task, workspace, box, limits, agent_run, gdir, t_start)
    finally:
        if own_dir:
            shutil.rmtree(gdir, ignore_errors=True)


def _phase(gdir: Path, name: str) -> dict:
    """Fresh private ``HOME``/``TMPDIR`` for one grading phase (nothing carries over)."""
    tmp, home = gdir / f"{name}-tmp", gdir / f"{name}-home"
    tmp.mkdir(parents=True)
    home.mkdir(parents=True)
    return {"tmp": tmp, "home": home, "env": _base_env(home, tmp)}


_HERE = Path(__file__).resolve().parent
# Files of this package copied next to the two test-phase processes, under these names.
_TRUSTED_FILES = {"_reporter_plugin.py": f"{REPORTER_MODULE}.py", "_nl2repo_trusted.py": "_nl2repo_trusted.py",
                  "_nl2repo_wire.py": "_nl2repo_wire.py"}
_WORKER_FILES = {"_nl2repo_wire.py": "_nl2repo_wire.py", "_nl2repo_worker.py": "_nl2repo_worker.py"}
# The trusted interpreter: no site (no .pth file runs), the harness's own site-packages
# (pytest and its dependencies) and the two plugins, then pytest.
_BOOT = """import ctypes, sys
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)     # PR_SET_DUMPABLE 0: no ptrace, no /proc/<pid>/fd for others
sys.path[:0] = [{trusted!r}]
sys.path.extend({bridge!r})
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def _copy_files(names: dict, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for src, name in names.items():
        shutil.copyfile(_HERE / src, dst / name)


def _install(task, box, limits, src, gdir, hidden, state) -> tuple[list, str, float]:
    """Offline non-editable install into a throw-away venv, audited; the test venv built after."""
    t0 = time.perf_counter()
    ph = _phase(gdir, "install")
    log = ""
    setup_cmds, _ = split_official_commands(task.commands)
    for cmd in setup_cmds:   # official pre-test steps (version files, …), run with a shell
        argv = ["bash", "-c", cmd] if task.shell else shlex.split(cmd)
        res = box.run(argv, cwd=src, env=ph["env"], limits=limits, rw_paths=[src, ph["tmp"], ph["home"]],
                      hidden_paths=hidden, timeout_s=limits.install_timeout_s)
        log += f"[setup] {cmd}: exit {res.returncode}\n"
    ivenv = gdir / "install-venv"
    isite = make_venv(ivenv)
    trusted = trusted_import_names(ivenv / "bin" / "python")      # a fresh venv: nothing installed yet
    before = tree_state(ivenv)
    names_before = {p.name for p in isite.iterdir()}
    res = box.run([str(ivenv / "bin" / "python"), "-m", "pip", "install", "--no-index",
                   "--no-build-isolation", "--no-deps", "--no-cache-dir", "--disable-pip-version-check",
                   "--no-warn-conflicts", "--no-compile", "-q", str(src)],
                  cwd=src, env=ph["env"], limits=limits, rw_paths=[src, ivenv, ph["tmp"], ph["home"]],
                  hidden_paths=hidden, timeout_s=limits.install_timeout_s)
    log += (res.text("stdout") + res.text("stderr"))[-5000:]
    state["install_ok"] = res.returncode == 0 and not res.timed_out
    dists: list = []
    if state["install_ok"]:
        flags, dists = audit_install(ivenv, before)
        state["flags"] += flags
        state["flags"] += _audit_names(isite, {p.name for p in isite.iterdir()} - names_before,
                                       trusted - {task.package})
        if not dists:
            state["install_ok"] = False
            log += "\n[install] pip reported success but installed no distribution"
    return dists, log, time.perf_counter() - t0


def _grade(task, workspace, box, limits, agent_run, gdir, t_start) -> GradeReport:
    src, tvenv, tests, reports = (gdir / n for n in ("src", "venv", "tests", "reports"))
    reports.mkdir(parents=True, exist_ok=True)
    state = {"no_output": False, "flags": [], "invalid": False, "install_ok": False,
             "import_ok": False, "test_timed_out": False, "collection_errors": 0, "score": 0.0,
             "agent_exit": False, "test_killed": False, "stream_incomplete": False,
             "worker_exit": False}
    outcomes = {n: "missing" for n in task.manifest.tests}
    canaries: dict = {}
    unexpected = n_twins = 0
    install_s = pytest_s = test_wall = parse_s = 0.0
    test_stdout = install_log = ""
    reported: dict = {}
    hidden = _hidden_for(task)
    try:
        _copy_workspace(workspace, src, limits.workspace_mb << 20)
    except _InvalidWorkspace as exc:
        state["invalid"] = True
        state["flags"].append(str(exc))
    if not state["invalid"]:
        state["flags"] += _sanitize(task, src)
        state["no_output"] = not any(p.suffix == ".py" for p in src.rglob("*.py"))
        state["flags"] += _suspect_constructs(src)
    else:
        state["no_output"] = not any(p.suffix == ".py" and not p.is_symlink()
                                     for p in workspace.rglob("*.py"))
    if not state["invalid"] and not state["no_output"]:
        dists, install_log, install_s = _install(task, box, limits, src, gdir, hidden, state)
        tampered = any(f.startswith("tamper") for f in state["flags"])
        if state["install_ok"] and not tampered:
            make_venv(tvenv)
            state["flags"] += populate_test_venv(tvenv, gdir / "install-venv", dists)
            ph = _phase(gdir, "import")
            res = box.run([str(tvenv / "bin" / "python"), "-I", "-c", f"import {task.package}"],
                          cwd=ph["tmp"], env=ph["env"], limits=limits, rw_paths=[ph["tmp"], ph["home"]],
                          ro_paths=[tvenv], hidden_paths=hidden, timeout_s=IMPORT_TIMEOUT_S)
            state["import_ok"] = res.returncode == 0 and not res.timed_out
            if not state["import_ok"]:
                install_log += "\n[import check]\n" + res.text("stderr")[-3000:]
        if state["import_ok"]:
            dist = {"scripts": console_scripts(gdir / "install-venv", dists),
                    "modules": sorted({task.package, *top_level_names(tvenv, dists)})}
            run = _run_tests(task, box, limits, tvenv, tests, reports, hidden, gdir, state, dist)
            (pytest_s, test_wall, parse_s, test_stdout, reported, unexpected, canaries,
             n_twins) = run
            for node, outcome in reported.items():
                if node in outcomes:
                    outcomes[node] = outcome
    if agent_run is not None:
        state["flags"] += list(agent_run.flags)
    voided = (any(f.startswith(("tamper", "forgery")) for f in state["flags"]) or state["agent_exit"]
              or state["stream_incomplete"])
    n_pass = sum(1 for v in outcomes.values() if v == "passed")
    score = 0.0 if (voided or not state["import_ok"]) else n_pass / len(task.manifest)
    state["score"] = score
    label = _label(state, agent_run)
    return GradeReport(task.id, score, label, state["install_ok"], state["import_ok"], outcomes,
                       state["flags"], unexpected, state["collection_errors"],
                       n_pass if not voided else 0, len(task.manifest), canaries,
                       box.isolation, install_s, pytest_s, test_wall, parse_s,
                       time.perf_counter() - t_start, state["test_timed_out"], test_stdout,
                       install_log, reported, n_twins, state.get("worker_log", ""))


def _run_tests(task, box, limits, tvenv, tests, reports, hidden, gdir, state, dist):
    """The hidden suite (renamed, twinned, shuffled) in a trusted interpreter; the package in a worker.

    Two sandboxes, started together and joined by two pipes. The **worker** runs the test
    venv's interpreter with the package installed and serves requests; it never sees the
    tests. The **trusted** process is the harness's own interpreter with ``-I -S`` (no
    ``.pth`` file of any venv runs), pytest and the reporter; it never imports the package
    (an import hook routes the package's names to the worker, and only plain data comes
    back), so no code of the package runs where the verdicts are made. Outcomes stream to the
    harness as they happen; JUnit, the summary line and the exit code must agree. The worker
    also gets a report descriptor that leads nowhere but to the harness: anything written
    there is ``tamper``.
    """
    suite = canary.build_suite(task.tests_dir, tests, task.manifest.tests, reference=task.reference_dir)
    flags = state["flags"]
    if suite.n_twins < MIN_TWINS:
        flags.append(f"canary:weak:{suite.n_twins}_twins")
    if suite.n_fallback:
        flags.append(f"canary:fallback_flips:{suite.n_fallback}")
    _, cmd_env = split_official_commands(task.commands)
    trusted, worker_code = gdir / "trusted", gdir / "worker-code"
    _copy_files(_TRUSTED_FILES, trusted)
    _copy_files(_WORKER_FILES, worker_code)
    shared = gdir / "shared-tmp"               # the tests' tmp_path: both processes see it
    shared.mkdir()
    # pytest removes its basetemp when it exists: a name the worker cannot guess, made by pytest.
    basetemp = shared / f"pytest-{secrets.token_hex(16)}"
    tph, wph = _phase(gdir, "test"), _phase(gdir, "worker")
    relay = tph["tmp"] / "relay.sock"
    (trusted / "bin").mkdir()
    for name in dist["scripts"]:
        launcher = trusted / "bin" / name
        launcher.write_text(f"#!{sys.executable} -IS\n" + _trusted_launcher(str(relay), name))
        launcher.chmod(0o755)
    junit = reports / "junit.xml"
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    rep_r, rep_w = os.pipe()
    honey_r, honey_w = os.pipe()
    reader, honeypot = StreamReader(rep_r), StreamReader(honey_r)
    wenv = {**wph["env"], **cmd_env, "PATH": f"{tvenv / 'bin'}:{wph['env']['PATH']}",
            "NL2REPO_RPC_IN": str(req_r), "NL2REPO_RPC_OUT": str(resp_w), "NL2REPO_REPORT_FD": str(honey_w)}
    tenv = {**tph["env"], **cmd_env, "PATH": f"{trusted / 'bin'}:{tph['env']['PATH']}",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "NL2REPO_REPORT_FD": str(rep_w),
            "NL2REPO_RPC_IN": str(resp_r), "NL2REPO_RPC_OUT": str(req_w),
            "NL2REPO_MODULES": ",".join(dist["modules"]), "NL2REPO_RELAY": str(relay),
            "NL2REPO_SCRIPTS": ",".join(f"{k}={v}" for k, v in sorted(dist["scripts"].items()))}
    t0 = time.perf_counter()
    worker = wout = werr = None
    try:
        worker = box.spawn([str(tvenv / "bin" / "python"), "-I", "-c",
                            f"import sys; sys.path.insert(0, {str(worker_code)!r}); "
                            "import _nl2repo_worker; _nl2repo_worker.main()"],
                           cwd=wph["tmp"], env=wenv, limits=limits, rw_paths=[shared, wph["tmp"], wph["home"]],
                           ro_paths=[tvenv, worker_code], hidden_paths=hidden,
                           timeout_s=limits.test_timeout_s, stdin=subprocess.DEVNULL,
                           pass_fds=[req_r, resp_w, honey_w])
        wout, werr = Tail(worker.stdout), Tail(worker.stderr)
        for fd in (req_r, resp_w, honey_w):
            os.close(fd)
        req_r = resp_w = honey_w = -1
        boot = _BOOT.format(trusted=str(trusted), bridge=bridge_paths())
        res = box.run([sys.executable, "-I", "-S", "-c", boot, "-p", "no:cacheprovider",
                       "-p", REPORTER_MODULE, "-p", "_nl2repo_trusted", "-o", "addopts=",
                       "-o", "junit_family=xunit1", "--rootdir", str(tests), "--junitxml", str(junit),
                       "--basetemp", str(basetemp), "-q", "--tb=line", "--continue-on-collection-errors",
                       str(tests)],
                      cwd=tests, env=tenv, limits=limits, rw_paths=[reports, shared, tph["tmp"], tph["home"]],
                      ro_paths=[tests, trusted], hidden_paths=hidden, timeout_s=limits.test_timeout_s,
                      pass_fds=[rep_w, resp_r, req_w])
    finally:
        for fd in (rep_w, resp_r, req_w, req_r, resp_w, honey_w):
            if fd >= 0:
                os.close(fd)
        if worker is not None:
            try:
                worker.wait(timeout=2)       # it ends on its own once the trusted side closed the pipe
            except subprocess.TimeoutExpired:
                pass
            kill_process_group(worker)
    test_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    stream = read_stream(reader.value(), reader.overflow)
    planted = honeypot.value()
    stdout = res.text("stdout")
    state["worker_log"] = ("[test process stderr]\n" + res.text("stderr")[-3000:] + "\n[worker]\n"
                           + ((wout.value() + werr.value()).decode("utf-8", "replace")[-5000:] if wout else ""))
    parsed, pytest_s, _, junit_ok = parse_junit(junit)
    state["collection_errors"] = stream.collection_errors
    if planted:
        flags.append(f"tamper:report_honeypot:{len(planted)}_bytes_written_by_the_package")
    if stream.worker_gone is not None:
        state["worker_exit"] = True
        flags.append(f"agent_exit:worker_exit_{worker.returncode}_during:{stream.worker_gone[0] or 'collection'}")
    if stream.ended:
        flags += _cross_check(stream, parsed, junit_ok, parse_summary(stdout), res)
        state["test_timed_out"] = res.timed_out
    else:   # no outcome of a stream that did not end counts, whatever ended it
        state["stream_incomplete"] = True
        flags.append(f"test_run:stream_not_ended:exit_{res.returncode}")
        if res.timed_out:
            state["test_timed_out"] = True
        elif res.killed_by_limit:
            state["test_killed"] = True
        else:   # the trusted interpreter ended before pytest did
            state["agent_exit"] = True
            flags.append(f"agent_exit:test_process_exit_{res.returncode}_before_pytest_finished")
    flags += _foreign_plugins(stream.plugins)
    flags += _foreign_hooks(stream.hookimpls, [*_stdlib_dirs(), *bridge_paths(), os.path.realpath(tests),
                                               os.path.realpath(trusted)])
    reported, unexpected, canaries = {}, 0, {}
    collected = set(stream.collected or ())
    instances: dict = {}
    for node in stream.collected or stream.outcomes:
        info = suite.lookup(node)
        if info is not None:
            instances.setdefault(canary.split_node_id(node)[:3], []).append(node)
    # Only nodes of the suite map score. Every hidden test was renamed, so a node that still
    # carries a manifest test's original name can only have been injected (a star import of
    # the package's own ``test_*`` functions, a forged collector).
    originals = {canary.split_node_id(n)[:3] for n in task.manifest.tests}
    foreign = []
    for node, outcome in stream.outcomes.items():
        info = suite.lookup(node)
        if info is None:
            unexpected += node in collected
            if canary.split_node_id(node)[:3] in originals:
                foreign.append(node)
        elif info[1] == "real":
            reported[info[0]] = outcome
    if foreign:
        flags.append(f"tamper:foreign_node:{len(foreign)}_nodes_named_like_manifest_tests:{foreign[0]}")
    both = weak = missing = lone = 0
    for key, (original, role, partner) in suite.functions.items():
        if role != "twin":
            continue
        reals, twins = instances.get((key[0], key[1], partner), []), instances.get(key, [])
        if stream.ended and len(twins) < len(reals):
            missing += sum(stream.outcomes.get(n) == "passed" for n in reals[len(twins):])
        for real, twin in zip(reals, twins):
            r_out, t_out = stream.outcomes.get(real, "missing"), stream.outcomes.get(twin, "missing")
            canaries[f"{suite.lookup(real)[0]} (twin {key[2]})"] = t_out
            lone += t_out == "passed" and r_out != "passed" and suite.strength.get(key) == "strict"
            if r_out == "passed" and t_out == "passed":
                if suite.strength.get(key) == "strict":
                    both += 1
                else:       # a weak twin passed: its real test does not count
                    weak += 1
                    reported[suite.lookup(real)[0]] = "twin_passed"
            missing += stream.ended and r_out == "passed" and t_out == "missing"
    if both:
        flags.append(f"tamper:canary:{both}_twin_pairs_both_passed")
    if weak:
        flags.append(f"canary:weak_twin_passed:{weak}_pairs_not_scored")
    if lone:   # a buggy package can hit another test's answer; a forger guessing the copy does often
        flags.append(f"canary:strict_twin_passed_alone:{lone}")
    if missing:
        flags.append(f"tamper:canary_missing:{missing}")
    parse_s = time.perf_counter() - t0
    return (pytest_s, test_wall, parse_s, stdout[-20000:], reported, unexpected, canaries,
            suite.n_twins)


def _stdlib_dirs() -> list[str]:
    import sysconfig

    return sorted({os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")})


def _defines(path: str, line, func: str) -> bool:
    """Whether ``path`` defines ``func`` at (or just below) line ``line`` (decorators first)."""
    if not isinstance(line, int) or line < 1:
        return False
    try:
        with open(path, "rb") as fh:
            text = fh.read(4 << 20).decode("utf-8", "replace").splitlines()
    except OSError:
        return False
    return any(re.match(rf"\s*(async\s+)?def\s+{re.escape(func)}\s*\(", row)
               for row in text[line - 1:line + 20])


def _foreign_hooks(hookimpls, roots, files=()) -> list[str]:
    """``tamper`` flags for hook functions whose code was not compiled from a trusted file.

    A hook's code object names the file it was compiled from (``co_filename``); it must be
    a real file under ``roots`` (the standard library, the harness's site-packages, the hidden
    tests) or one of ``files`` (the reporter), and define that function at that line.
    """
    flags = []
    for plugin, file, line, func in sorted(hookimpls, key=str):
        real = os.path.realpath(file) if file.startswith("/") else ""
        inside = real in files or any(real.startswith(r + os.sep) for r in roots)
        if not (inside and _defines(real, line, func)):
            flags.append(f"tamper:hook_code_from:{file}:{plugin}.{func}")
    return flags[:5]


_SUSPECT = {   # constructs honest library code has no use for; reported, never scored
    "pytest_internals": re.compile(r"\b_pytest\b|\bpluggy\b|^\s*(?:import|from)\s+pytest\b", re.M),
    "report_pipe": re.compile(r"NL2REPO_|_nl2repo"),
    "frame_inspection": re.compile(r"\b_getframe\b|\bcurrentframe\b|\bf_back\b|\bf_globals\b"),
    "heap_walk": re.compile(r"\bget_objects\b|\bget_referrers\b"),
    "code_objects": re.compile(r"__code__|\bco_consts\b|\bco_code\b"),
    "proc_self": re.compile(r"/proc/"),
}
SUSPECT_SCAN_BYTES = 1 << 20


def _suspect_constructs(tree: Path) -> list[str]:
    """``suspect:<construct>:<file>`` for the package sources (informational, evadable)."""
    found = {}
    for path in sorted(tree.rglob("*.py"))[:5000]:
        if path.is_symlink() or not path.is_file():
            continue
        with open(path, "rb") as fh:
            text = fh.read(SUSPECT_SCAN_BYTES).decode("utf-8", "replace")
        for name, pattern in _SUSPECT.items():
            if name not in found and pattern.search(text):
                found[name] = path.relative_to(tree).as_posix()
    return [f"suspect:{name}:{where}" for name, where in found.items()]


def _foreign_plugins(plugins) -> list[str]:
    """``tamper`` flags for modules of the package registered as pytest plugins (a
    ``pytest_plugins`` list reached through a star import): the trusted side sees them only
    as remote modules, whose functions are never hooks, but the attempt is flagged."""
    from ._reporter_plugin import REMOTE_PLUGIN

    return [f"tamper:pytest_plugin_from_package:{name}" for name, where in plugins if where == REMOTE_PLUGIN]


def _trusted_launcher(relay: str, name: str) -> str:
    from ._nl2repo_trusted import LAUNCHER

    return LAUNCHER.format(relay=relay, name=name)


_PYTEST_NORMAL_EXIT = (0, 1, 2, 5)   # ok, tests failed, interrupted, no tests collected


def _cross_check(stream, junit: dict, junit_ok: bool, summary: dict | None, res) -> list[str]:
    """``forgery:*`` flags where the stream, the JUnit file, the summary line or the exit disagree."""
    flags = []
    if stream.problems:
        flags.append(f"forgery:stream:{stream.problems[0]}" + (
            f"(+{len(stream.problems) - 1})" if len(stream.problems) > 1 else ""))
    expected = {mangle_node_id(n): o for n, o in stream.outcomes.items()}
    if not junit_ok:
        flags.append("forgery:junit_missing_or_unreadable")
    elif junit != expected:
        differ = sum(junit.get(k) != v for k, v in expected.items()) + len(set(junit) - set(expected))
        flags.append(f"forgery:junit_disagrees:{differ}_nodes")
    if stream.exitstatus not in _PYTEST_NORMAL_EXIT:
        flags.append(f"forgery:pytest_exit_status_{stream.exitstatus}")
    counts = {k: stream.counts.get(k, 0) for k in SUMMARY_KEYS}
    if summary is None:
        flags.append("forgery:summary_line_missing")
    elif summary != counts:
        shown = ",".join(f"{k}={summary[k]}/{counts[k]}" for k in SUMMARY_KEYS if summary[k] != counts[k])
        flags.append(f"forgery:summary_disagrees:{shown}")
    if (not res.timed_out and res.returncode is not None and res.returncode >= 0
            and res.returncode != stream.exitstatus):
        flags.append(f"forgery:exit_code_{res.returncode}_vs_pytest_{stream.exitstatus}")
    return flags


# -- manifests ---------------------------------------------------------------------------

def build_manifest(task: Task, *, sandbox=None, limits=None) -> list[str]:
    """Node IDs that pass when the reference solution is graded in this harness.

    Used at task-build time to freeze ``manifest.json`` (skipped and failing tests are
    excluded, fixing the official denominator drift; canary twins are never reported).
    """
    if task.reference_dir is None:
        raise ValueError(f"task {task.id!r} has no reference solution to build a manifest from")
    report = grade(task, task.reference_dir, sandbox=sandbox, limits=limits)
    return sorted(n for n, o in report.reported.items() if o == "passed")


def check_manifest(task: Task, *, sandbox=None, limits=None) -> GradeReport:
    """Grade the reference; raise :class:`ManifestMismatchError` unless it scores 1.0 cleanly.

    This is the harness's positive control: in an environment it cannot grade in (a
    runtime the sandbox cannot show, a missing build backend) the reference fails, and the
    error names the label, the flags and the end of the install log.
    """
    from .task import ManifestMismatchError

    if task.reference_dir is None:
        raise ValueError(f"task {task.id!r} has no reference solution to validate against")
    report = grade(task, task.reference_dir, sandbox=sandbox, limits=limits)
    failing = [n for n, o in report.outcomes.items() if o != "passed"]
    bad_flags = [f for f in report.flags if f.startswith(("tamper", "forgery", "agent_exit"))]
    if failing or bad_flags or report.score != 1.0:
        tail = " | ".join(report.install_log.strip().splitlines()[-3:])
        raise ManifestMismatchError(task.id, failing, detail=(
            f"label {report.label}" + (f", flags {bad_flags}" if bad_flags else "")
            + (f"; install/import log ends: {tail}" if tail and not report.import_ok else "")))
    return report


_VALIDATED: set = set()


def _validate_reference(task: Task, box, limits: Limits | None) -> None:
    """:func:`check_manifest` once per task, backend and limits in this process."""
    key = (task.id, str(task.root or task.tests_dir), box.isolation, limits)
    if task.reference_dir is None or key in _VALIDATED:
        return
    check_manifest(task, sandbox=box, limits=limits)
    _VALIDATED.add(key)


# -- evaluation and aggregation ----------------------------------------------------------

def _bootstrap_ci(values_by_task: list[float], n_resamples: int = 2000, seed: int = 0):
    import numpy as np

    vals = np.asarray(values_by_task, dtype=float)
    if vals.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = vals[rng.integers(0, vals.size, size=(n_resamples, vals.size))].mean(axis=1)
    return (float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975)))


@dataclass
class Results:
    """Per-run records of :func:`evaluate` and their aggregates (spec §2.5 "Aggregates").

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). Its aggregates (average pass rate, fully-passed rate).

    Examples
    --------
    >>> res = Results(records=[
    ...     {"task_id": "a", "category": "c", "score": 1.0, "label": "passed", "n_passed": 3,
    ...      "n_total": 3, "install_ok": True},
    ...     {"task_id": "b", "category": "c", "score": 0.5, "label": "partial", "n_passed": 1,
    ...      "n_total": 2, "install_ok": True}], agent="demo")
    >>> summary = res.summary()
    >>> summary["avg_pass_rate"], summary["fully_passed_rate"], summary["micro_pass_rate"]
    (0.75, 0.5, 0.8)
    """

    records: list = field(default_factory=list)
    agent: str = ""
    isolation: str = ""

    def summary(self) -> dict:
        """Average / fully-passed / micro pass rates, install rate, per-category, CI, labels."""
        if not self.records:
            raise ValueError("no records to summarize")
        by_task: dict = {}
        for r in self.records:
            by_task.setdefault(r["task_id"], []).append(r)
        task_means = [sum(r["score"] for r in rs) / len(rs) for rs in by_task.values()]
        full = [sum(r["score"] == 1.0 for r in rs) / len(rs) for rs in by_task.values()]
        cats: dict = {}
        for tid, rs in by_task.items():
            cats.setdefault(rs[0]["category"], []).append(sum(r["score"] for r in rs) / len(rs))
        modes: dict = {}
        for r in self.records:
            modes[r["label"]] = modes.get(r["label"], 0) + 1
        return {
            "avg_pass_rate": sum(task_means) / len(task_means),
            "fully_passed_rate": sum(full) / len(full),
            "micro_pass_rate": sum(r["n_passed"] for r in self.records)
            / sum(r["n_total"] for r in self.records),
            "install_rate": sum(r["install_ok"] for r in self.records) / len(self.records),
            "per_category": {c: sum(v) / len(v) for c, v in cats.items()},
            "ci95": _bootstrap_ci(task_means),
            "failure_modes": modes,
            "n_runs": len(self.records),
            "n_tasks": len(by_task),
            "isolation": self.isolation,
        }

    def to_json(self, path) -> Path:
        """Write records + summary atomically (a crash never leaves a half-written file)."""
        path = Path(path)
        payload = {"agent": self.agent, "isolation": self.isolation,
                   "summary": self.summary() if self.records else None, "records": self.records}
        from icml26.core.io import atomic_write_text

        atomic_write_text(path, json.dumps(payload, indent=1, default=str))
        return path


def run_record(task: Task, agent: AgentSpec, run: AgentRun, report: GradeReport) -> dict:
    """One JSON-serialisable record of an (agent, task, run)."""
    rec = report.to_dict()
    rec.update({"agent": agent.name, "category": task.category, "agent_wall_s": run.wall_s,
                "agent_returncode": run.returncode, "agent_timed_out": run.timed_out,
                "agent_killed_by_limit": run.killed_by_limit, "steps": run.steps,
                "finished": run.finished, "step_limit_hit": run.step_limit_hit,
                "agent_stdout": run.stdout[-4000:], "agent_stderr": run.stderr[-4000:]})
    return rec


def _silent_failure(task: Task, agent: AgentSpec, run: AgentRun, report: GradeReport) -> str:
    """A warning when the agent exited non-zero and left nothing to grade ('' otherwise)."""
    if run.returncode in (0, None) or run.timed_out or report.label != "no_output":
        return ""
    tail = run.stderr.strip().splitlines()[-3:]
    return (f"nl2repo: agent {agent.name!r} exited with status {run.returncode} and left no output "
            f"on task {task.id!r} (score 0): " +
            ("its stderr ends: " + " | ".join(tail) if tail else "it wrote nothing to stderr") +
            f"; command: {shlex.join(agent.argv)}")


def evaluate(tasks, agent, *, runs: int = 1, sandbox="auto", limits: Limits | None = None,
             out=None, keep_dir=None, validate: bool = True) -> Results:
    """Run ``agent`` on every task ``runs`` times and grade each run.

    Parameters
    ----------
    tasks : Task or list of Task
    agent : AgentSpec or callable
        An agent, or ``agent(task) -> AgentSpec`` (per-task agents such as the oracle).
    runs : int
        Repetitions per task (``R``).
    sandbox : str or Sandbox
        ``"auto"`` (default), ``"bwrap"``, ``"unshare"``, ``"none"``.
    limits : Limits, optional
        Overrides each task's limits.
    out : path, optional
        Results JSON, rewritten atomically after every run.
    keep_dir : path, optional
        Keep each run's workspace under this folder (default: removed).
    validate : bool
        First grade each task's reference solution (once per process) and refuse to go on,
        with :class:`~icml26.nl2repo.ManifestMismatchError`, unless it scores 1.0 cleanly
        here: an environment the harness cannot grade in fails loudly instead of scoring
        every agent 0.

    Returns
    -------
    Results

    Examples
    --------
    >>> from icml26.nl2repo import builtin_tasks, evaluate, reference_agent  # doctest: +SKIP
    >>> res = evaluate(builtin_tasks(["unitconv"]), reference_agent("oracle"))  # doctest: +SKIP
    >>> res.summary()["avg_pass_rate"]  # doctest: +SKIP
    1.0
    """
    tasks = [tasks] if isinstance(tasks, Task) else list(tasks)
    if not tasks or not all(isinstance(t, Task) for t in tasks):
        raise ValueError("tasks must be a non-empty list of Task")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an integer >= 1, got {runs!r}")
    box = _resolve_sandbox(sandbox)
    results = Results(isolation=box.isolation)
    if validate:
        for task in tasks:
            _validate_reference(task, box, limits)
    for task in tasks:
        spec = agent(task) if callable(agent) and not isinstance(agent, AgentSpec) else agent
        if not isinstance(spec, AgentSpec):
            raise TypeError(f"agent must be an AgentSpec or return one, got {type(spec).__name__}")
        results.agent = spec.name
        for r in range(runs):
            root = Path(tempfile.mkdtemp(prefix="nl2repo-run-"))
            try:
                run = run_agent(task, spec, root / "agent", limits=limits, sandbox=box)
                report = grade(task, root / "agent" / "workspace", sandbox=box, limits=limits,
                               agent_run=run, workdir=root / "grade")
                rec = run_record(task, spec, run, report)
                rec["run"] = r
                warning = _silent_failure(task, spec, run, report)
                if warning:
                    warnings.warn(warning, RuntimeWarning, stacklevel=2)
                    rec["agent_warning"] = warning
                results.records.append(rec)
                if keep_dir is not None:
                    shutil.copytree(root / "agent" / "workspace",
                                    Path(keep_dir) / f"{task.id}-{spec.name}-{r}", symlinks=True)
            finally:
                shutil.rmtree(root, ignore_errors=True)
            if out is not None:
                results.to_json(out)
    return results

