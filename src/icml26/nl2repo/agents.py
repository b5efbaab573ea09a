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


def _pyproject(pkg: str, extra: str = "") -> str:
    return ('[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
            f'[project]\nname = "{pkg}"\nversion = "0.0.1"\n\n[tool.setuptools]\n'
            f'packages = ["{pkg}"]\n{extra}')


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


def control(name: str) -> None:
    spec = _spec()
    pkg = spec["package"]
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
    elif name == "report_patch":
        minimal(_REPORT_PATCH)
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
    elif name == "memhog":
        import mmap

        minimal()
        blocks, chunk = [], 256 << 20
        while len(blocks) * chunk < MEMHOG_BYTES:
            blocks.append(mmap.mmap(-1, chunk))
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
    c.add_argument("name", choices=CONTROLS)
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
