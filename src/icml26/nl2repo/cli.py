"""``icml26 nl2repo …``: evaluate any agent command on NL2Repo-style tasks.

Examples
--------
icml26 nl2repo evaluate --task csvq --agent oracle
icml26 nl2repo evaluate --task ./my_task --agent 'python my_agent.py --model local' --runs 3
icml26 nl2repo evaluate --task kvlog --agent 'control:forgery' --out results.json

The agent command is resolved in the current directory before grading starts (the agent
then runs in its workspace): ``python my_agent.py`` finds ./my_agent.py, and a command or
script that cannot be found is refused with exit status 2.
"""

from __future__ import annotations

import json
import shlex
import sys
import warnings
from pathlib import Path
from typing import List, Optional

import typer

from .baselines import CONTROLS, reference_agent
from .harness import AgentSpec, check_manifest, evaluate as run_evaluate
from .sandbox import SandboxUnavailable
from .task import BUILTIN_IDS, Limits, TaskFormatError, builtin_tasks, load_task

app = typer.Typer(help="NL2Repo-Bench harness: sandboxed repository-generation grading "
                       "(Ding et al., ICML 2026).", no_args_is_help=True)

_BUILTIN_AGENTS = "oracle | null | stub | partial:F | control:NAME | steps:K"


def _agent(text: str, protocol: str):
    kind, _, arg = text.partition(":")
    if kind in ("oracle", "null", "stub") and not arg:
        return reference_agent(kind)
    if kind == "partial" and arg:
        return reference_agent("partial", fraction=float(arg))
    if kind == "control" and arg:
        return reference_agent("control", control=arg)
    if kind == "steps" and arg:
        return reference_agent("steps", write=int(arg))
    argv = shlex.split(text[4:] if text.startswith("cmd:") else text)
    return AgentSpec(argv=argv, protocol=protocol)


def _tasks(specs: List[str]):
    out = []
    for spec in specs:
        if spec == "all":
            out += builtin_tasks()
        elif spec in BUILTIN_IDS:
            out += builtin_tasks([spec])
        else:
            out.append(load_task(Path(spec)))
    return out


@app.command()
def evaluate(
    task: List[str] = typer.Option(..., "--task", help="Task folder, built-in id, or 'all' (repeatable)."),
    agent: str = typer.Option(..., "--agent", help=f"Agent command line, or {_BUILTIN_AGENTS}."),
    runs: int = typer.Option(1, help="Runs per task."),
    sandbox: str = typer.Option("auto", help="auto | bwrap | unshare | none."),
    wall_s: Optional[float] = typer.Option(None, "--wall-s", help="Agent wall-clock limit (s)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Step limit (step protocol)."),
    protocol: str = typer.Option("subprocess", help="subprocess | steps."),
    out: Optional[Path] = typer.Option(None, help="Results JSON (written atomically)."),
    validate: bool = typer.Option(True, help="Check the reference passes the frozen manifest first."),
) -> None:
    """Run an agent on tasks in the sandbox, grade, and print the summary."""
    try:
        tasks = _tasks(task)
        spec = _agent(agent, protocol)
        limits = None
        if wall_s is not None or max_steps is not None:
            base = tasks[0].limits.__dict__
            limits = Limits(**{**base, **({"wall_s": wall_s} if wall_s is not None else {}),
                               **({"max_steps": max_steps} if max_steps is not None else {})})
        if validate:
            for t in tasks:
                if t.reference_dir is not None:
                    check_manifest(t, sandbox=sandbox)
        with warnings.catch_warnings():   # printed below, once per run, on stderr
            warnings.filterwarnings("ignore", message="nl2repo: agent ", category=RuntimeWarning)
            results = run_evaluate(tasks, spec, runs=runs, sandbox=sandbox, limits=limits, out=out)
    except (ValueError, TypeError, TaskFormatError, SandboxUnavailable) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    summary = results.summary()
    for rec in results.records:
        if rec.get("agent_warning"):
            typer.echo(f"warning: {rec['agent_warning']}", err=True)
        typer.echo(f"{rec['task_id']:<12} run {rec['run']}  score {rec['score']:.4f}  "
                   f"label {rec['label']:<18} passed {rec['n_passed']}/{rec['n_total']}  "
                   f"isolation {rec['isolation']}")
    typer.echo(json.dumps(summary, indent=1, default=str))


@app.command()
def tasks() -> None:
    """List the built-in tasks."""
    for t in builtin_tasks():
        typer.echo(f"{t.id:<10} {t.category:<28} package {t.package:<9} "
                   f"modules {','.join(m.name for m in t.modules):<28} tests {len(t.manifest)}")


@app.command()
def agents() -> None:
    """List the built-in reference and adversarial agents."""
    typer.echo("oracle, null, stub, partial:F, steps:K")
    typer.echo("controls: " + ", ".join(f"control:{c}" for c in CONTROLS))


def main() -> None:  # pragma: no cover - convenience for `python -m`
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
