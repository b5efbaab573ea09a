"""Every command in every README runs (issue #28).

The fenced ``bash``/``sh`` and ``python`` blocks of ``README.md`` and of each
``src/icml26/<slug>/README.md`` are extracted and executed, one test per README, so a
failing README names itself:

* ``icml26 run`` / ``icml26 reproduce`` lines run with ``--dry-run`` (parts, configs, ``--set``
  overrides and seeds are resolved and checked; nothing is computed); ``icml26 report DIR``
  gets a freshly written report when DIR is a placeholder such as ``reports/<stamp>``; every
  other ``icml26`` line runs as written;
* ``make TARGET`` lines run as ``make -n TARGET`` (the target exists and expands);
* ``dask scheduler|worker ...`` lines run with ``--help`` appended (the options parse);
* ``python`` blocks run for real, each in a fresh namespace, in a temporary folder.

A block that cannot run offline or quickly is preceded by an HTML comment
``<!-- docs-test: skip (reason) -->``; use it sparingly, always with the reason.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
READMES = [ROOT / "README.md", *sorted((ROOT / "src" / "icml26").glob("*/README.md"))]
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_+-]*)\s*$")


@dataclass
class Block:
    readme: Path
    line: int          # 1-based line of the opening fence
    lang: str
    code: str
    skip: str | None   # the reason, when marked docs-test: skip

    @property
    def where(self) -> str:
        return f"{self.readme.relative_to(ROOT)}:{self.line}"


def blocks(readme: Path) -> list[Block]:
    """The fenced bash/sh/python blocks of a Markdown file."""
    out, lines = [], readme.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group("lang"):
            i += 1
            continue
        start, lang = i, m.group("lang").lower()
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        before = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        skip = SKIP.search(before)
        if lang in {"bash", "sh", "shell", "python", "py"}:
            out.append(Block(readme, start + 1, "python" if lang in {"python", "py"} else "bash",
                             "\n".join(body), skip.group("reason") if skip else None))
        i += 1
    return out


def shell_commands(code: str) -> list[list[str]]:
    """One argv per command of a bash block (comments dropped, ``\\`` continuations joined,
    a trailing ``&`` removed)."""
    commands, pending = [], ""
    for raw in code.splitlines():
        line = pending + raw
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        argv = shlex.split(line, comments=True)
        if argv and argv[-1] == "&":
            argv = argv[:-1]
        if argv:
            commands.append(argv)
    return commands


def _placeholder(arg: str) -> bool:
    return "<" in arg and ">" in arg


def _report_dir(tmp_path: Path) -> Path:
    from icml26.core.example import EXPERIMENT
    from icml26.core.report import write_report
    from icml26.core.runner import run_experiment

    out = tmp_path / "a-report"
    if not (out / "results.json").is_file():
        write_report([run_experiment(EXPERIMENT, quick=True)], out)
    return out


def run_icml26(args: list[str], tmp_path: Path) -> tuple[int, str]:
    from typer.testing import CliRunner

    from icml26.cli import app

    if args and args[0] in {"run", "reproduce"} and "--dry-run" not in args:
        args = [*args, "--dry-run"]
    if args and args[0] == "report":
        args = [str(_report_dir(tmp_path)) if _placeholder(a) else a for a in args]
    result = CliRunner().invoke(app, args)
    text = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        text += "".join(traceback.format_exception(result.exception))
    return result.exit_code, text


def run_command(argv: list[str], tmp_path: Path) -> tuple[int, str]:
    name = Path(argv[0]).name
    if name == "icml26":
        return run_icml26(argv[1:], tmp_path)
    if name == "make":
        proc = subprocess.run(["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
        return proc.returncode, proc.stdout + proc.stderr
    if name == "dask" and len(argv) > 1 and argv[1] in {"scheduler", "worker"}:
        exe = Path(sys.executable).with_name("dask")
        proc = subprocess.run([str(exe), *argv[1:], "--help"], capture_output=True, text=True,
                              timeout=60)
        return proc.returncode, proc.stdout + proc.stderr
    return 127, (f"the docs test does not know how to run {name!r}; run it by hand and mark "
                 "the block with <!-- docs-test: skip (reason) -->")


def run_python(block: Block) -> tuple[int, str]:
    import matplotlib

    matplotlib.use("Agg")
    try:
        exec(compile(block.code, block.where, "exec"), {"__name__": "__docs__"})
    except Exception:  # noqa: BLE001 - reported with the README's line numbers
        return 1, traceback.format_exc(limit=-3)
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")
    return 0, ""


def test_block_extraction_and_skip_marker(tmp_path):
    md = tmp_path / "README.md"
    md.write_text("intro\n\n```bash\nicml26 list   # comment\nicml26 run a \\\n  --quick &\n```\n\n"
                  "<!-- docs-test: skip (needs a GPU) -->\n```python\nimport torch\n```\n"
                  "```text\nnot code\n```\n")
    found = blocks(md)
    assert [(b.lang, b.line, b.skip) for b in found] == [("bash", 3, None),
                                                        ("python", 10, "needs a GPU")]
    assert shell_commands(found[0].code) == [["icml26", "list"], ["icml26", "run", "a", "--quick"]]


def test_every_readme_has_blocks_found():
    assert blocks(ROOT / "README.md"), "the top-level README lost its commands"


def test_top_readme_runs_venv_commands_from_the_venv():
    """`make demo` installs into .venv and activates nothing: a bare `dask` or `icml26` line
    fails as written (`command not found`) on a fresh machine."""
    bare = [shlex.join(argv) for block in blocks(ROOT / "README.md") if block.lang == "bash"
            for argv in shell_commands(block.code)
            if argv and argv[0] in {"icml26", "dask", "pytest", "python", "pip"}]
    assert not bare, f"write these as .venv/bin/...: {bare}"


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_readme_commands_run(readme, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    failures, skipped = [], []
    for block in blocks(readme):
        if block.skip:
            skipped.append(f"{block.where} ({block.skip})")
            continue
        if block.lang == "python":
            code, text = run_python(block)
            if code:
                failures.append(f"{block.where} python block failed:\n{text}")
            continue
        for argv in shell_commands(block.code):
            code, text = run_command(argv, tmp_path)
            if code != 0:
                failures.append(f"{block.where} `{shlex.join(argv)}` exited {code}:\n"
                                f"{text[-2000:]}")
    assert not failures, "\n\n".join(failures)


LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")


@pytest.mark.parametrize("doc", [*READMES, *sorted((ROOT / "docs").glob("*.md"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(doc):
    """A link that works in this checkout but not in a clone (``../shared/...``) fails."""
    bad = []
    for m in LINK.finditer(doc.read_text(encoding="utf-8")):
        target = m.group("target").split("#")[0]
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # an anchor or a URL
        path = (doc.parent / target).resolve()
        if not path.exists() or ROOT not in path.parents and path != ROOT:
            bad.append(target)
    assert not bad, f"{doc.relative_to(ROOT)}: links that do not resolve in a clone: {bad}"
