"""Installing a submitted package without letting it touch the grading environment.

``pip install`` runs the package's own build code (``setup.py``, a build backend) with write
access to the environment it installs into. So the package is installed into a throw-away
**install venv**, which is then audited against a snapshot taken before the install: every
``.pth`` file and every executable, by content, not only new names. Only the files the
installed distributions record (``RECORD``) inside ``site-packages`` are then copied into a
**test venv** that the harness builds afterwards, outside any sandbox, so no code of the
package ever ran with write access to it; console scripts are regenerated from the
distribution's ``entry_points.txt``. The test venv is read-only while the tests run, and only
the package's worker process uses it: the process that runs the tests is the harness's own
interpreter, which never imports the package.

References
----------
Our resolution of the forgery audit of the NL2Repo-Bench harness (not from the paper); the
paper's grader installs into a per-task Docker image.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path, PurePosixPath

__all__ = ["make_venv", "site_packages", "tree_state", "audit_install", "populate_test_venv",
           "bridge_paths", "trusted_import_names", "console_scripts", "top_level_names",
           "REPORTER_MODULE", "BRIDGE_PTH"]

BRIDGE_PTH = "_nl2repo_base.pth"
REPORTER_MODULE = "_nl2repo_reporter"
_SCRIPT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_LAUNCHER = """#!{python} -I
import sys
from {module} import {head}

if __name__ == "__main__":
    sys.argv[0] = {name!r}
    sys.exit({call}())
"""


def site_packages(venv: Path) -> Path:
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return venv / "lib" / ver / "site-packages"


def bridge_paths() -> list[str]:
    """The harness's own ``site-packages`` (pytest, pip, setuptools, …), resolved.

    Resolved, so that a harness run through a symlinked virtual environment (under
    ``/tmp``, say) bridges to folders the sandbox binds.
    """
    paths = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
    return sorted(p for p in paths if os.path.isdir(p))


def make_venv(venv: Path) -> Path:
    """A fresh venv (``--system-site-packages``) bridged to the harness's packages; its site dir."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                    str(venv)], check=True, capture_output=True, timeout=120)
    site = site_packages(venv)
    (site / BRIDGE_PTH).write_text("\n".join(bridge_paths()) + "\n")
    return site


# What the test interpreter imports before (and besides) any package code: its startup
# ``.pth`` hooks and pytest with the plugins it loads. A package that installs a top-level
# module of one of these names would run in their place (``pygments`` is imported by
# ``import pytest``; ``_distutils_hack`` by setuptools' ``distutils-precedence.pth`` at start).
_IMPORT_PROBE = ("import sys\nimport pytest, _pytest.junitxml, _pytest.terminal, _pytest.python, "
                 "_pytest.runner, _pytest.main, _pytest.fixtures, _pytest.assertion.rewrite, "
                 "_pytest.capture, _pytest.logging, _pytest.faulthandler\n"
                 "print(' '.join(sorted({m.split('.')[0] for m in list(sys.modules)})))\n")
_TRUSTED_IMPORTS: dict = {}


def trusted_import_names(python: Path) -> frozenset:
    """Top-level module names a fresh test venv's interpreter imports at start and with pytest.

    Run once per harness process (cached), with ``python`` from a venv made by
    :func:`make_venv` before anything was installed into it.
    """
    if "names" not in _TRUSTED_IMPORTS:
        res = subprocess.run([str(python), "-I", "-c", _IMPORT_PROBE], capture_output=True,
                             text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"})
        if res.returncode != 0:
            raise RuntimeError(f"cannot list what the test interpreter imports: {res.stderr[-500:]}")
        _TRUSTED_IMPORTS["names"] = frozenset(res.stdout.split())
    return _TRUSTED_IMPORTS["names"]


def tree_state(root: Path) -> dict:
    """``relative path -> ("link", target) | ("file", sha256, mode)`` of every file under ``root``."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*filenames, *[d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]]:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                state[rel] = ("link", os.readlink(path))
            else:
                with open(path, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
                state[rel] = ("file", digest, os.stat(path).st_mode & 0o7777)
    return state


def _recorded(venv: Path, site: Path, dist_infos: list) -> set:
    """Every file the new distributions record, relative to the venv root."""
    files = set()
    for dist in dist_infos:
        record = site / dist / "RECORD"
        if not record.is_file():
            continue
        with open(record, newline="", encoding="utf-8", errors="replace") as fh:
            for row in csv.reader(fh):
                if row:
                    full = os.path.normpath(os.path.join(site, row[0]))
                    files.add(os.path.relpath(full, venv))
    return files


def audit_install(venv: Path, before: dict) -> tuple[list, list]:
    """Compare the install venv with its snapshot ``before``.

    Returns
    -------
    flags : list of str
        ``tamper:modified:<path>`` (a file that existed before was changed or removed:
        a ``.pth``, ``bin/python``, ``pyvenv.cfg``), ``tamper:unrecorded:<path>`` (a new file
        no installed distribution records, e.g. written by ``setup.py``).
    dists : list of str
        The ``*.dist-info`` folders the install added.
    """
    site = site_packages(venv)
    after = tree_state(venv)
    flags = [f"tamper:modified:{rel}" for rel in sorted(before) if after.get(rel) != before[rel]]
    site_rel = os.path.relpath(site, venv)
    dists = sorted({PurePosixPath(os.path.relpath(rel, site_rel)).parts[0] for rel in after
                    if rel not in before and rel.startswith(site_rel + os.sep)
                    and PurePosixPath(os.path.relpath(rel, site_rel)).parts[0].endswith(".dist-info")})
    recorded = _recorded(venv, site, dists)
    for rel in sorted(set(after) - set(before)):
        if rel not in recorded and "__pycache__" not in rel.split(os.sep):
            flags.append(f"tamper:unrecorded:{rel}")
    return flags, dists


def _console_scripts(dist: Path) -> list:
    """``(name, module, attribute)`` of the ``console_scripts``/``gui_scripts`` entry points."""
    path = dist / "entry_points.txt"
    if not path.is_file():
        return []
    out, section = [], None
    for line in path.read_text(errors="replace").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
        elif "=" in line and section in ("console_scripts", "gui_scripts"):
            name, _, target = (part.strip() for part in line.partition("="))
            module, _, attr = target.split("[")[0].strip().partition(":")
            out.append((name, module.strip(), attr.strip()))
    return out


def console_scripts(install_venv: Path, dists: list) -> dict:
    """``name -> "module:attr"`` of the installed distributions' console scripts (checked names)."""
    site = site_packages(install_venv)
    out = {}
    for dist in dists:
        for name, module, attr in _console_scripts(site / dist):
            if _SCRIPT_NAME.match(name) and _DOTTED.match(module) and _DOTTED.match(attr):
                out.setdefault(name, f"{module}:{attr}")
    return out


def top_level_names(venv: Path, dists: list) -> list:
    """Importable top-level names the distributions installed (packages and modules)."""
    site = site_packages(venv)
    names = set()
    for rel in _recorded(venv, site, dists):
        inside = os.path.relpath(rel, os.path.relpath(site, venv))
        head = PurePosixPath(inside).parts[0] if not inside.startswith("..") else ""
        if head.endswith((".dist-info", ".data", ".pth")) or head in ("", "__pycache__"):
            continue
        name = head[:-3] if head.endswith(".py") else head.split(".")[0]
        if name.isidentifier():
            names.add(name)
    return sorted(names)


def populate_test_venv(test_venv: Path, install_venv: Path, dists: list) -> list:
    """Copy the recorded ``site-packages`` files of ``dists`` into ``test_venv``; write launchers.

    Files a distribution records outside ``site-packages`` (scripts, data) are not copied:
    console scripts are regenerated from ``entry_points.txt``. Returns notes
    (``dropped:…``) about what was left out.
    """
    src_site, dst_site = site_packages(install_venv), site_packages(test_venv)
    notes = []
    site_rel = os.path.relpath(src_site, install_venv)
    for rel in sorted(_recorded(install_venv, src_site, dists)):
        inside = os.path.relpath(rel, site_rel)
        if inside.startswith(".." + os.sep) or inside == "..":
            if not rel.startswith("bin" + os.sep):
                notes.append(f"dropped:data:{rel}")
            continue
        src = src_site / inside
        if src.is_symlink() or not src.is_file():
            continue
        dst = dst_site / inside
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    python = test_venv / "bin" / "python"
    for dist in dists:
        for name, module, attr in _console_scripts(src_site / dist):
            if not (_SCRIPT_NAME.match(name) and _DOTTED.match(module) and _DOTTED.match(attr)):
                notes.append(f"dropped:script:{name}")
                continue
            launcher = test_venv / "bin" / name
            if launcher.exists() or launcher.is_symlink():
                notes.append(f"dropped:script:{name}")
                continue
            launcher.write_text(_LAUNCHER.format(python=python, module=module, head=attr.split(".")[0],
                                                 name=name, call=attr))
            launcher.chmod(0o755)
    return notes
