"""Every code block of the top README works: python blocks run, `icml26 run top` lines plan."""

import re
import shlex
from pathlib import Path

import pytest

import icml26.top
from icml26.core.experiment import get_experiment
from icml26.core.runner import plan_experiment

README = Path(icml26.top.__file__).with_name("README.md")


def blocks(lang: str) -> list:
    return re.findall(rf"^```{lang}\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def run_commands() -> list:
    lines = []
    for block in blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line.startswith("icml26 run top"):
                lines.append(line)
    return lines


def parse(command: str) -> dict:
    """The options of one `icml26 run top ...` line (as the CLI takes them)."""
    words, out = shlex.split(command)[3:], {"parts": [], "overrides": {}, "seeds": None, "quick": False}
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--set":
            i += 1
            while i < len(words) and not words[i].startswith("--"):
                key, value = words[i].split("=", 1)
                out["overrides"][key] = value
                i += 1
            continue
        if word == "--exp":
            out["parts"].append(words[i + 1])
        elif word == "--seeds":
            out["seeds"] = int(words[i + 1])
        elif word == "--quick":
            out["quick"] = True
            i -= 1
        elif word not in ("--jobs", "--out"):
            raise AssertionError(f"README command {command!r}: unknown option {word}")
        i += 2
    return out


def test_readme_has_blocks_to_check():
    assert len(blocks("python")) >= 2 and len(run_commands()) >= 3


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_readme_python_block_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here
    exec(compile(blocks("python")[index], f"{README}:python block {index}", "exec"), {})


@pytest.mark.parametrize("command", run_commands())
def test_readme_run_command_is_valid(command):
    options = parse(command)
    plan = plan_experiment(get_experiment("top"), parts=options["parts"] or None,
                           quick=options["quick"], seeds=options["seeds"],
                           overrides=options["overrides"])
    assert plan
