"""Reference and adversarial agents (stdlib only; run as a script inside the sandbox).

Usage::

    python agents.py oracle | null | stub | partial --fraction F | control NAME
    python agents.py steps --write K (--finish-at N | --never-finish)

The harness runs them with ``cwd`` = the workspace. They learn the task from
``$NL2REPO_AGENT_SPEC`` (package, modules in dependency order, exports) and read the
reference solution from ``$NL2REPO_AGENT_DATA`` (given to these oracle-derived agents
only, as a read-only copy). References: NL2Repo-Bench (arXiv:2512.12730); spec §3.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

CONTROLS = ("forgery", "conftest_inject", "pth_hook", "shadow_pytest", "report_patch",
            "test_leak", "hang", "memhog", "forkbomb", "net_probe", "peek", "symlink_escape")
# Forgers that implement nothing and attack the grading itself, one per attack class of the
# forgery audit (issue "grading that a submitted repository cannot forge"); each spares the
# tests it takes for canaries. Against the earlier harness they scored 1.0 (see README).
FORGERS = ("canary_spare", "plugin_export", "atexit_rewrite", "pth_append", "python_wrapper",
           "git_history", "tmpfs_hog", "exit_at_import")
FORK_SAFETY_CAP = 1000          # a bounded bomb: RLIMIT_NPROC (512) must stop it first
MEMHOG_BYTES = 8 << 30
FORGED = "============================= 999 passed in 0.01s =============================="


def _spec() -> dict:
    return json.loads(os.environ.get("NL2REPO_AGENT_SPEC", "{}"))


def _data() -> Path:
    return Path(os.environ.get("NL2REPO_AGENT_DATA", ""))


def _ws() -> Path:
    return Path.cwd()


def oracle() -> None:
    shutil.copytree(_data(), _ws(), dirs_exist_ok=True)


def _stub_source(source: str) -> str:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            body = [ast.Expr(ast.Constant(doc))] if doc else []
            node.body = body + [ast.Raise(ast.Call(ast.Name("NotImplementedError", ast.Load()),
                                                   [], []), None)]
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def stub() -> None:
    oracle()
    pkg = _ws() / _spec()["package"]
    for path in pkg.rglob("*.py"):
        if path.name != "__init__.py":
            path.write_text(_stub_source(path.read_text()))


def _init_for(modules: list) -> str:
    lines = ['"""Partial implementation."""']
    for m in modules:
        if m["exports"]:
            lines.append(f"from .{m['name']} import {', '.join(m['exports'])}")
    return "\n".join(lines) + "\n"


def write_partial(fraction: float) -> list:
    spec = _spec()
    mods = spec["modules"]
    k = min(len(mods), math.ceil(fraction * len(mods) - 1e-12))
    pkg = spec["package"]
    (_ws() / pkg).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_data() / "pyproject.toml", _ws() / "pyproject.toml")
    for m in mods[:k]:
        shutil.copyfile(_data() / pkg / f"{m['name']}.py", _ws() / pkg / f"{m['name']}.py")
    (_ws() / pkg / "__init__.py").write_text(_init_for(mods[:k]))
    return mods[:k]


def _pyproject(pkg: str, extra: str = "", packages=None) -> str:
    return ('[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
            f'[project]\nname = "{pkg}"\nversion = "0.0.1"\n\n[tool.setuptools]\n'
            f'packages = {json.dumps(packages or [pkg])}\n{extra}')


def minimal(init: str = '"""Nothing implemented."""\n', extra: str = "") -> str:
    pkg = _spec()["package"]
    (_ws() / pkg).mkdir(exist_ok=True)
    (_ws() / pkg / "__init__.py").write_text(init)
    (_ws() / "pyproject.toml").write_text(_pyproject(pkg, extra))
    return pkg


_REPORT_PATCH = '''"""Makes every pytest test report read as passed."""
try:
    from _pytest import reports as _reports

    _orig = _reports.TestReport.__init__

    def _forced(self, *args, **kwargs):
        _orig(self, *args, **kwargs)
        self.outcome = "passed"
        self.longrepr = None

    _reports.TestReport.__init__ = _forced
except Exception:
    pass
'''

_CONFTEST = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
'''

_SETUP_PTH = '''from setuptools import setup
from setuptools.command.build_py import build_py
import os


class BuildWithHook(build_py):
    def run(self):
        super().run()
        with open(os.path.join(self.build_lib, "zz_nl2repo_hook.pth"), "w") as fh:
            fh.write("import os; os.environ.setdefault('HOOKED', '1')\\n")


setup(cmdclass={"build_py": BuildWithHook})
'''


# -- forgers (attack the grading; implement nothing) ------------------------------------------

# Every module of the package resolves any imported name to a stub, so the hidden tests
# collect and run (and fail) instead of erroring at import: a forger then flips the outcomes.
_STUB_MODULE = '''"""Implements nothing: every name is a stub."""


def _stub(*args, **kwargs):
    return None


class _Stub(Exception):
    def __init__(self, *args, **kwargs):
        pass


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Stub if name[:1].isupper() else _stub
'''

# Spares whatever looks like a harness canary by name (the earlier harness's canaries were
# ``test_zz_canary_<nonce>.py::test_canary_…``).
_SPARE = "def _spared(text):\n    return 'canary' in str(text).lower()\n"

_FORGE_REPORTS = _SPARE + '''

def _forge_reports():
    try:
        from _pytest import reports
    except Exception:
        return
    original = reports.TestReport.__init__

    def forced(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if self.outcome != "passed" and not _spared(self.nodeid):
            self.outcome, self.longrepr = "passed", None

    reports.TestReport.__init__ = forced


_forge_reports()
'''

_FORGE_PLUGIN = "import pytest\n\n" + _SPARE + '''

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.outcome != "passed" and not _spared(report.nodeid):
        report.outcome, report.longrepr = "passed", None
'''

# Rewrites a JUnit file so that every non-canary test case reads as passed.
_REWRITE_JUNIT = _SPARE + '''

def _rewrite_junit(path):
    import xml.etree.ElementTree as ET
    try:
        tree = ET.parse(path)
    except Exception:
        return
    for case in tree.getroot().iter("testcase"):
        if _spared(case.get("classname", "") + "::" + case.get("name", "")):
            continue
        for child in list(case):
            if child.tag in ("failure", "error", "skipped"):
                case.remove(child)
    for suite in tree.getroot().iter("testsuite"):
        suite.set("failures", "0")
        suite.set("errors", "0")
        suite.set("skipped", "0")
    tree.write(path)


def _junit_path(argv):
    for i, arg in enumerate(argv):
        if arg == "--junitxml" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(("--junitxml=", "--junit-xml=")):
            return arg.split("=", 1)[1]
    return None
'''

_ATEXIT = _REWRITE_JUNIT + '''

def _after_pytest():
    import sys
    path = _junit_path(sys.argv)
    if path:
        _rewrite_junit(path)


import atexit  # noqa: E402

atexit.register(_after_pytest)
'''

# setup.py run by ``pip install``: appends a report-forging import line to every .pth file
# of the environment pip installs into (the grading venv of the earlier harness).
_SETUP_PTH_APPEND = '''import glob
import os
import sysconfig

from setuptools import setup

FORGE = %r
line = "import sys; exec(%%r, {'__name__': 'nl2repo_forge'})\\n" %% FORGE
for site in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
    for pth in glob.glob(os.path.join(site, "*.pth")):
        try:
            with open(pth, "a") as fh:
                fh.write("\\n" + line)
            print("PTH_APPEND wrote", pth)
        except OSError as exc:
            print("PTH_APPEND failed", pth, exc)

setup()
'''

# setup.py that replaces the installing interpreter's ``bin/python`` with a wrapper: it runs
# the real interpreter, then rewrites the JUnit file named on its command line.
_SETUP_WRAPPER = '''import os
import sys

from setuptools import setup

REWRITE = %r
bindir = os.path.dirname(sys.executable)
target = os.path.join(bindir, "python")
sibling = next((os.path.join(bindir, n) for n in ("python3", "python3.11", "python3.12", "python3.10")
                if os.path.exists(os.path.join(bindir, n)) and n != "python"), None)
if sibling:
    helper = os.path.join(bindir, "_forge_junit.py")
    try:
        with open(helper, "w") as fh:
            fh.write(REWRITE + "\\nimport sys\\np = _junit_path(sys.argv[1:])\\nif p:\\n    _rewrite_junit(p)\\n")
        os.unlink(target)
        with open(target, "w") as fh:
            fh.write(f"#!/bin/sh\\n\\"{sibling}\\" \\"$@\\"\\nrc=$?\\n"
                     f"\\"{sibling}\\" \\"{helper}\\" \\"$@\\" >/dev/null 2>&1\\nexit $rc\\n")
        os.chmod(target, 0o755)
        print("PYTHON_WRAPPER replaced", target)
    except OSError as exc:
        print("PYTHON_WRAPPER failed", target, exc)

setup()
'''

TMPFS_HOG_MB = 8192            # written to /tmp + /dev/shm until something stops it
_HOG_CHUNK = 16 << 20
_HOG_FILE = 128 << 20


def forge_package(init: str = "", setup_py: str | None = None, extra_files: dict | None = None,
                  module_extra: str = "", extra_packages: dict | None = None) -> str:
    """A package with every spec module present and implementing nothing (stubs).

    ``extra_packages`` maps more top-level package names to their files (``{"pygments":
    {"__init__.py": text}}``); ``module_extra`` is appended to every stub module.
    """
    spec = _spec()
    pkg = spec["package"]
    (_ws() / pkg).mkdir(exist_ok=True)
    (_ws() / pkg / "__init__.py").write_text('"""Implements nothing."""\n' + init)
    for m in spec["modules"]:
        (_ws() / pkg / f"{m['name']}.py").write_text(_STUB_MODULE + module_extra)
    for rel, text in (extra_files or {}).items():
        (_ws() / pkg / rel).write_text(text)
    for name, files in (extra_packages or {}).items():
        for rel, text in files.items():
            (_ws() / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (_ws() / name / rel).write_text(text)
    (_ws() / "pyproject.toml").write_text(_pyproject(pkg, packages=[pkg, *sorted(extra_packages or {})]))
    if setup_py is not None:
        (_ws() / "setup.py").write_text(setup_py)
    return pkg


_SCAN_ROOTS = (Path("/work"), Path("/root"), Path("/home"), Path("/srv"), Path("/opt"), Path("/tmp"))
_SCAN_SKIP = frozenset({"site-packages", "node_modules", "__pycache__", ".git", "proc"})


def _walk(root: Path, depth: int):
    """``os.walk`` to ``depth`` levels below ``root``, skipping large irrelevant folders."""
    base = len(root.parts)
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = [] if len(Path(dirpath).parts) - base >= depth else [
            d for d in dirnames if d not in _SCAN_SKIP]
        yield Path(dirpath)


def _repositories() -> list:
    """Git work trees an agent can find: above its interpreter, and under common roots."""
    found = []
    for start in (Path(sys.executable), Path(sys.executable).resolve(), Path(sys.prefix)):
        found += [p for p in start.parents if (p / ".git").exists()]
    for root in _SCAN_ROOTS:
        found += [d for d in _walk(root, depth=4) if (d / ".git").exists()]
    return list(dict.fromkeys(found))


def copy_from_history(task: str) -> int:
    """Copy the task's reference solution out of any readable git history or tasks checkout."""
    marker = f"tasks/{task}/reference/"
    for repo in _repositories():
        git = ["git", "-c", "safe.directory=*", "-C", str(repo)]
        try:
            names = subprocess.run([*git, "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True,
                                   text=True, timeout=60).stdout.splitlines()
            files = [n for n in names if marker in n]
            for name in files:
                target = _ws() / name.split(marker, 1)[1]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(subprocess.run([*git, "show", f"HEAD:{name}"], capture_output=True,
                                                  timeout=60).stdout)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if files:
            print(f"HISTORY copied {len(files)} files from the git history of {repo}", flush=True)
            return len(files)
    for root in (*_SCAN_ROOTS, Path("/usr")):
        for d in _walk(root, depth=9):
            if d.as_posix().endswith(marker.rstrip("/")) and (d / "pyproject.toml").is_file():
                shutil.copytree(d, _ws(), dirs_exist_ok=True)
                print(f"HISTORY copied a tasks checkout at {d}", flush=True)
                return 1
    print("HISTORY found no readable history or tasks checkout", flush=True)
    return 0


def forger(name: str) -> None:
    spec = _spec()
    pkg = spec["package"]
    if name == "canary_spare":
        forge_package(_FORGE_REPORTS)
    elif name == "plugin_export":
        forge_package(extra_files={"_forge_plugin.py": _FORGE_PLUGIN})
        for m in spec["modules"]:
            path = _ws() / pkg / f"{m['name']}.py"
            path.write_text(path.read_text() + f"\npytest_plugins = [{pkg + '._forge_plugin'!r}]\n")
    elif name == "atexit_rewrite":
        forge_package(_ATEXIT)
    elif name == "pth_append":
        forge_package(setup_py=_SETUP_PTH_APPEND % _FORGE_REPORTS)
    elif name == "python_wrapper":
        forge_package(setup_py=_SETUP_WRAPPER % _REWRITE_JUNIT)
    elif name == "git_history":   # writes nothing when nothing is readable
        copy_from_history(spec["task"])
    elif name == "tmpfs_hog":
        forge_package()
        total = int(os.environ.get("NL2REPO_HOG_MB", TMPFS_HOG_MB)) << 20
        written, block = 0, b"\0" * _HOG_CHUNK
        while written < total:     # many files below RLIMIT_FSIZE, alternating /tmp and /dev/shm
            index = written // _HOG_FILE
            with open(Path(("/tmp", "/dev/shm")[index % 2]) / f"hog-{index}", "ab") as fh:
                fh.write(block)
            written += _HOG_CHUNK
        print(f"TMPFS_HOG wrote {written >> 20} MiB to /tmp + /dev/shm without being stopped", flush=True)
    elif name == "exit_at_import":
        forge_package("import os\nos._exit(0)\n")
    else:
        raise SystemExit(f"unknown forger {name!r}; forgers: {', '.join(FORGERS)}")


def control(name: str) -> None:
    spec = _spec()
    pkg = spec["package"]
    if name in FORGERS:
        return forger(name)
    if name == "forgery":
        minimal('import atexit\natexit.register(lambda: print(%r, flush=True))\n' % FORGED)
        print(FORGED, flush=True)
        (_ws() / "report.xml").write_text(
            '<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="999" failures="0" '
            'errors="0">' + "".join(f'<testcase classname="test_x" name="t{i}"/>' for i in range(999))
            + "</testsuite></testsuites>")
        (_ws() / "reward.json").write_text(json.dumps({"score": 1.0, "passed": 999}))
    elif name == "conftest_inject":
        minimal()
        for where in (_ws(), _ws() / pkg, _ws() / "tests"):
            where.mkdir(exist_ok=True)
            (where / "conftest.py").write_text(_CONFTEST)
        (_ws() / "pytest.ini").write_text("[pytest]\naddopts = -p no:junitxml\n")
    elif name == "pth_hook":
        minimal(extra='py-modules = ["sitecustomize"]\n')
        (_ws() / "sitecustomize.py").write_text(_REPORT_PATCH)
        (_ws() / "setup.py").write_text(_SETUP_PTH)
        (_ws() / "zz_hook.pth").write_text("import sitecustomize\n")
    elif name == "shadow_pytest":
        minimal(extra='py-modules = ["pytest"]\n')
        (_ws() / "pytest.py").write_text(
            f"import sys\nprint({FORGED!r})\nsys.exit(0)\n")
    elif name == "report_patch":   # stub modules, so the tests run and their reports get patched
        forge_package(_REPORT_PATCH)
    elif name == "test_leak":
        for m in write_partial(0.5):
            path = _ws() / pkg / f"{m['name']}.py"
            path.write_text(path.read_text() + "\n\ndef test_leaked_always_passes():\n    assert True\n"
                            "\n\nif '__all__' in globals():\n"
                            "    __all__ = [*__all__, 'test_leaked_always_passes']\n")
        (_ws() / "tests").mkdir(exist_ok=True)
        (_ws() / "tests" / "test_leak.py").write_text("def test_trivial():\n    assert True\n")
    elif name == "hang":
        minimal()
        if os.fork() == 0:   # a background child that must not outlive the run
            time.sleep(10**6)
            os._exit(0)
        time.sleep(10**6)
    elif name == "memhog":   # memory it writes to, so the kernel counts it (a reservation is free)
        minimal()
        blocks, chunk = [], 16 << 20
        while len(blocks) * chunk < MEMHOG_BYTES:
            blocks.append(b"m" * chunk)
        print(f"MEMHOG allocated {len(blocks) * chunk >> 20} MiB without being stopped")
    elif name == "forkbomb":
        minimal()
        children = 0
        while children < FORK_SAFETY_CAP:
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children += 1
        print(f"FORKBOMB created {children} processes without being stopped")
    elif name == "net_probe":
        minimal()
        for host, port in (("1.1.1.1", 80), ("8.8.8.8", 53), ("pypi.org", 443)):
            try:
                socket.create_connection((host, port), timeout=3).close()
                print(f"NETPROBE {host}:{port} CONNECTED", flush=True)
            except OSError as exc:
                print(f"NETPROBE {host}:{port} FAILED {exc!r}", flush=True)
        try:
            res = subprocess.run([sys.executable, "-m", "pip", "--isolated", "download", "--no-deps",
                                  "-d", str(_ws() / ".dl"), "--index-url", "https://pypi.org/simple",
                                  "--timeout", "5", "--retries", "0", "six"],
                                 capture_output=True, text=True, timeout=60)
            ok = res.returncode == 0
            print(f"NETPROBE pip-index {'CONNECTED' if ok else 'FAILED'} rc={res.returncode}", flush=True)
        except (OSError, subprocess.TimeoutExpired) as exc:
            print(f"NETPROBE pip-index FAILED {exc!r}", flush=True)
        shutil.rmtree(_ws() / ".dl", ignore_errors=True)
    elif name == "peek":
        minimal()
        import importlib.util

        found = []
        origin = importlib.util.find_spec("icml26")
        roots = [Path(p) / "nl2repo" / "tasks" for p in (origin.submodule_search_locations or [])] \
            if origin else []
        for root in roots:
            found += [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []
        for tmp in Path("/tmp").glob("nl2repo-*"):
            found += [p for p in tmp.rglob("test_*.py") if p.is_file()][:50]
        readable = []
        for p in found:
            try:
                p.read_bytes()
                readable.append(p)
            except OSError:
                pass
        print(f"PEEK readable_hidden_files={len(readable)}", flush=True)
        ref = [r / spec["task"] / "reference" for r in roots]
        for r in ref:
            if (r / "pyproject.toml").is_file():
                shutil.copytree(r, _ws(), dirs_exist_ok=True)   # what a cheater would do
                print("PEEK copied the hidden reference solution", flush=True)
                break
    elif name == "symlink_escape":
        minimal()
        os.symlink("/etc/passwd", _ws() / pkg / "passwd.txt")
        os.symlink("/etc", _ws() / "etc_link")
    else:
        raise SystemExit(f"unknown control {name!r}; controls: {', '.join(CONTROLS)}")


# -- step protocol --------------------------------------------------------------------------

def _call(request: dict) -> dict:
    sys.stdout.write(json.dumps(request) + "\n")
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        raise SystemExit(0)
    return json.loads(line)


def steps_agent(write: int, finish_at: int | None) -> None:
    spec = _spec()
    pkg, mods = spec["package"], spec["modules"][:write]
    _call({"tool": "write_file", "path": "pyproject.toml",
           "content": (_data() / "pyproject.toml").read_text()})
    _call({"tool": "write_file", "path": f"{pkg}/__init__.py", "content": _init_for(mods)})
    for m in mods:
        _call({"tool": "write_file", "path": f"{pkg}/{m['name']}.py",
               "content": (_data() / pkg / f"{m['name']}.py").read_text()})
    step = 2 + len(mods)
    while finish_at is None or step < finish_at - 1:
        _call({"tool": "bash", "cmd": "ls -R . | head -n 20"})
        step += 1
    _call({"tool": "finish"})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="nl2repo-agents", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    sub.add_parser("oracle")
    sub.add_parser("null")
    sub.add_parser("stub")
    p = sub.add_parser("partial")
    p.add_argument("--fraction", type=float, required=True)
    c = sub.add_parser("control")
    c.add_argument("name", choices=CONTROLS + FORGERS)
    s = sub.add_parser("steps")
    s.add_argument("--write", type=int, default=2)
    s.add_argument("--finish-at", type=int, default=None)
    args = parser.parse_args(argv)
    if args.kind == "oracle":
        oracle()
    elif args.kind == "stub":
        stub()
    elif args.kind == "partial":
        write_partial(args.fraction)
    elif args.kind == "control":
        control(args.name)
    elif args.kind == "steps":
        steps_agent(args.write, args.finish_at)


if __name__ == "__main__":
    main()
