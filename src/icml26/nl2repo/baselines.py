"""Baselines: the official regex scorer and the reference / adversarial agents.

The paper's baselines are LLM agents (OpenHands CodeAct), not runnable offline; the
agents here validate the harness instead (spec §3): ``oracle``, ``null``, ``stub``,
``partial(f)``, twelve negative controls, and a step-protocol agent.

References
----------
Ding et al., NL2Repo-Bench, ICML 2026 (arXiv:2512.12730); the official grader
(``multimodal-art-projection/NL2RepoBench``) and its audit (issues #7, #12, #13, #16).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .harness import AgentSpec
from .task import Task

__all__ = ["score_legacy", "reference_agent", "CONTROLS", "FORGERS", "CONTROL_EXPECTED_LABEL",
           "FORGER_CLASS", "AGENTS_SCRIPT"]

AGENTS_SCRIPT = Path(__file__).resolve().parent / "agents.py"
from .agents import CONTROLS, FORGERS  # noqa: E402  (agents.py is a stdlib-only script)
# The failure label each negative control must receive (with a sandbox on). The package's
# code runs in a worker process, never in the one that runs the tests, so the controls that
# patch pytest in its own process (forgery's atexit print, report_patch, canary_spare,
# atexit_rewrite) find nothing to patch and fail as the stubs they are.
CONTROL_EXPECTED_LABEL = {
    "forgery": "collection_errors", "conftest_inject": "collection_errors",
    "pth_hook": "tamper", "shadow_pytest": "tamper", "report_patch": "partial",
    "test_leak": "collection_errors", "hang": "timeout", "memhog": "resource_killed",
    "forkbomb": "resource_killed", "net_probe": "collection_errors",
    "peek": "collection_errors", "symlink_escape": "workspace_invalid",
    # the forgers of the six attack classes
    "canary_spare": "partial", "plugin_export": "tamper", "atexit_rewrite": "partial",
    "pth_append": "tamper", "python_wrapper": "tamper", "git_history": "no_output",
    "tmpfs_hog": "partial", "exit_at_import": "agent_exit"}
# tmpfs_hog writes 8 GiB into /tmp and /dev/shm: E2's limits (4 GiB of memory, 512 MiB of tmpfs)
# stop it at the tmpfs size (ENOSPC), which is its own failure, not a limit kill a kernel counter
# shows (labels never come from the text it prints); the package it wrote before is graded. Under
# a memory limit below the tmpfs size the memory cgroup kills it: resource_killed (tests).
# The attack class each forger stands for (README "Attack classes").
FORGER_CLASS = {
    "canary_spare": "recognisable canaries", "plugin_export": "in-process forgery",
    "atexit_rewrite": "post-hoc edit of the result file",
    "pth_append": "writable grading environment during install",
    "python_wrapper": "writable grading environment during install",
    "git_history": "readable history", "tmpfs_hog": "resources", "exit_at_import": "labels"}

_PASSED = re.compile(r"(\d+) passed")


def score_legacy(stdout: str, declared_total: int) -> float:
    """The official NL2RepoBench score, for comparison only (spec §2.3 steps 6–7).

    Sums every ``(\\d+) passed`` match on every line of the output and returns
    ``min(passed / declared_total, 1)``. Forgeable: any printed ``"999 passed"`` counts.

    Parameters
    ----------
    stdout : str
        All output of the test command.
    declared_total : int
        ``test_case_count.txt``.

    Examples
    --------
    >>> score_legacy("=== 3 passed, 1 failed in 0.1s ===", 4)
    0.75
    >>> score_legacy("999 passed", 40)
    1.0
    """
    if not isinstance(stdout, str):
        raise TypeError(f"stdout must be a str, got {type(stdout).__name__}")
    if isinstance(declared_total, bool) or not isinstance(declared_total, int) or declared_total < 1:
        raise ValueError(f"declared_total must be an integer >= 1, got {declared_total!r}")
    passed = sum(int(m) for line in stdout.splitlines() for m in _PASSED.findall(line))
    return min(passed / declared_total, 1.0)


def _task_spec(task: Task) -> str:
    return json.dumps({"task": task.id, "package": task.package,
                       "modules": [{"name": m.name, "deps": list(m.deps), "exports": list(m.exports)}
                                   for m in task.modules]})


def reference_agent(kind: str, *, fraction: float | None = None, control: str | None = None,
                    write: int = 2, finish_at: int | None = None):
    """A per-task factory ``task -> AgentSpec`` for the built-in agents.

    Parameters
    ----------
    kind : {"oracle", "null", "stub", "partial", "control", "steps"}
    fraction : float
        For ``partial``: the fraction ``f`` of modules written (``⌈f·K⌉`` in dependency order).
    control : str
        For ``control``: one of :data:`CONTROLS`.
    write, finish_at : int
        For ``steps``: modules written through the tool protocol, and the step at which it
        calls ``finish`` (``None``: never; it then runs into ``max_steps``).

    Examples
    --------
    >>> from icml26.nl2repo import builtin_tasks, reference_agent
    >>> reference_agent("partial", fraction=0.5)(builtin_tasks(["unitconv"])[0]).name
    'partial(0.5)'
    """
    kinds = ("oracle", "null", "stub", "partial", "control", "steps")
    if kind not in kinds:
        raise ValueError(f"kind must be one of {kinds}, got {kind!r}")
    extra: list[str] = []
    name = kind
    if kind == "partial":
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
            raise ValueError(f"fraction must be a number in [0, 1], got {fraction!r}")
        extra = ["--fraction", repr(float(fraction))]
        name = f"partial({fraction:g})"
    elif kind == "control":
        if control not in CONTROLS + FORGERS:
            raise ValueError(f"control must be one of {CONTROLS + FORGERS}, got {control!r}")
        extra = [control]
        name = f"control:{control}"
    elif kind == "steps":
        extra = ["--write", str(write)] + ([] if finish_at is None else ["--finish-at", str(finish_at)])
        name = f"steps(write={write},finish_at={finish_at})"
    if kind == "null":
        argv = [sys.executable, "-I", "-c", "pass"]
    else:   # the script's text on the command line: the sandbox hides icml26's own source
        argv = [sys.executable, "-I", "-c", AGENTS_SCRIPT.read_text(), kind, *extra]

    def factory(task: Task) -> AgentSpec:
        if kind != "null" and task.reference_dir is None:
            raise ValueError(f"task {task.id!r} has no reference solution for agent {name!r}")
        return AgentSpec(argv=list(argv), env={"NL2REPO_AGENT_SPEC": _task_spec(task)},
                         protocol="steps" if kind == "steps" else "subprocess",
                         data=None if kind == "null" else task.reference_dir, name=name)

    factory.agent_name = name
    return factory
