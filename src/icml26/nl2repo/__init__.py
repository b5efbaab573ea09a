"""icml26.nl2repo — a sandboxed NL2Repo-Bench harness whose verdicts the graded code cannot reach.

Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of
Coding Agents", ICML 2026 (arXiv:2512.12730).
"""

from .baselines import CONTROLS, reference_agent, score_legacy
from .harness import (AgentRun, AgentSpec, GradeReport, Results, build_manifest, check_manifest,
                      evaluate, grade, run_agent)
from .sandbox import ProcResult, Sandbox, SandboxUnavailable, make_sandbox
from .task import (Limits, Manifest, ManifestMismatchError, Module, Task, TaskFormatError,
                   builtin_tasks, load_official_task, load_task, tasks_root)

__all__ = ["Limits", "Module", "Manifest", "Task", "TaskFormatError", "ManifestMismatchError",
           "load_task", "builtin_tasks", "load_official_task", "tasks_root", "Sandbox",
           "ProcResult", "SandboxUnavailable", "make_sandbox", "AgentSpec", "AgentRun",
           "GradeReport", "Results", "run_agent", "grade", "evaluate", "check_manifest",
           "build_manifest", "score_legacy", "reference_agent", "CONTROLS"]
