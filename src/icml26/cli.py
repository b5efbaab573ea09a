"""The ``icml26`` command: list, run, reproduce, report (plus method subcommands).

Exit codes: 0 when every claim passed, 1 when any claim failed (or a job failed), 2 on
usage or input errors (a clear message, no traceback).

A method folder may ship ``icml26/<slug>/cli.py`` with a ``typer.Typer`` named ``app``;
it is mounted as ``icml26 <slug> ...`` (for example ``icml26 nl2repo evaluate``).
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import icml26
from icml26.core.catalog import PAPERS
from icml26.core.experiment import ConfigError, discover, discovery_errors, get_experiment
from icml26.core.report import render_report, write_report
from icml26.core.runner import count_jobs, plan_experiment, run_experiment

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="ICML 2026 papers as library components with reproducible claims.")
console = Console()
err_console = Console(stderr=True, soft_wrap=True)

EXIT_OK, EXIT_CLAIM_FAILED, EXIT_USAGE = 0, 1, 2


def _usage_error(message: str) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {message}")
    return typer.Exit(EXIT_USAGE)


def _parse_sets(pairs: List[str]) -> dict:
    overrides = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise _usage_error(f"--set expects key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        overrides[key.strip()] = value.strip()
    return overrides


def _split(values: Optional[List[str]]) -> list:
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]


@app.command("list")
def list_methods() -> None:
    """List the nineteen papers: slug, title, claims, implemented or not."""
    exps = discover()
    table = Table(title="icml26 methods")
    for col in ("slug", "paper", "parts", "claims", "status"):
        table.add_column(col, overflow="fold")
    broken = discovery_errors()
    for slug, (title, _) in PAPERS.items():
        exp = exps.get(slug)
        if slug in broken:
            table.add_row(slug, title, "", "", "[red]import error[/]")
        elif exp is None:
            table.add_row(slug, title, "", "", "[dim]not yet[/]")
        else:
            parts = ", ".join(p.name + ("" if p.default else " (opt-in)") for p in exp.parts)
            table.add_row(slug, exp.title, parts, "; ".join(exp.claims), "[green]implemented[/]")
    for slug, exp in exps.items():
        if slug not in PAPERS:
            table.add_row(slug, exp.title, ", ".join(p.name for p in exp.parts),
                          "; ".join(exp.claims), "[green]implemented[/]")
    console.print(table)


def _print_outcome(outcome) -> None:
    console.rule(f"[bold]{outcome.slug}[/]: {outcome.title}")
    for part in outcome.parts:
        for name, frame in part.result.tables.items():
            table = Table(title=f"{outcome.slug} · {part.part} · {name}")
            for col in frame.columns:
                table.add_column(str(col), overflow="fold")
            for row in frame.itertuples(index=False):
                table.add_row(*[f"{v:.4g}" if isinstance(v, float) else str(v) for v in row])
            console.print(table)
        claims = Table(title=f"{outcome.slug} · {part.part} · claims")
        for col in ("claim", "paper", "measured", "bar", "verdict"):
            claims.add_column(col, overflow="fold")
        for c in part.result.claims:
            verdict = "[green]PASS[/]" if c.passed else "[red]FAIL[/]"
            claims.add_row(c.name, c.paper, c.measured_text, c.bar, verdict)
        console.print(claims)
        for note in part.result.notes:
            console.print(f"[yellow]note:[/] {note}")
        for job in part.failed_jobs:
            err_console.print(f"[red]job failed[/] ({outcome.slug}/{part.part} seed {job.seed} "
                              f"task {job.task}):\n{job.error}")
        if part.summarize_error:
            err_console.print(f"[red]summarize failed[/] ({outcome.slug}/{part.part}):\n"
                              f"{part.summarize_error}")
    console.print(f"{outcome.slug}: {'[green]all claims passed' if outcome.passed else '[red]some claims failed'}[/]"
                  f" · {outcome.seconds:.1f} s")


def _run_many(slugs: list, *, parts: list, quick: bool, seeds: Optional[int], jobs: int,
              scheduler: Optional[str], out: Optional[Path], overrides: dict, command: str):
    try:
        experiments = [get_experiment(s) for s in slugs]
        plans = [plan_experiment(e, parts=parts or None, quick=quick, seeds=seeds,
                                 overrides=overrides) for e in experiments]
    except (ConfigError, ValueError, TypeError) as exc:
        raise _usage_error(str(exc))
    total = sum(count_jobs(p) for p in plans)
    outcomes = []
    columns = (TextColumn("[progress.description]{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task("jobs", total=total)
        for exp in experiments:
            progress.update(bar, description=exp.slug)
            outcomes.append(run_experiment(
                exp, parts=parts or None, quick=quick, seeds=seeds, overrides=overrides,
                jobs=jobs, scheduler=scheduler, progress=lambda _r: progress.advance(bar)))
    for outcome in outcomes:
        _print_outcome(outcome)
    report_dir = write_report(outcomes, out, command=command)
    console.print(f"report: {report_dir.resolve() / 'index.html'}")
    return outcomes


def _check_common(seeds: Optional[int], jobs: int) -> None:
    if seeds is not None and seeds < 1:
        raise _usage_error(f"--seeds must be >= 1, got {seeds}")
    if jobs < 1:
        raise _usage_error(f"--jobs must be >= 1, got {jobs}")


# Options shared by `run` and `reproduce`.
QUICK = typer.Option(False, "--quick", help="Quick configs (seconds to a minute).")
SEEDS = typer.Option(None, "--seeds", help="Number of seeds.")
JOBS = typer.Option(1, "--jobs", help="Local worker processes.")
SCHEDULER = typer.Option(None, "--scheduler", help="Dask scheduler address or 'local'.")
OUT = typer.Option(None, "--out", help="Report folder (default reports/<timestamp>).")
SET = typer.Option(None, "--set", help="Override a config field: key=value.")


@app.command()
def run(
    slug: str = typer.Argument(..., help="Method slug (see `icml26 list`)."),
    quick: bool = QUICK,
    exp: Optional[List[str]] = typer.Option(None, "--exp", help="Part(s) to run; default all default parts."),
    seeds: Optional[int] = SEEDS,
    jobs: int = JOBS,
    scheduler: Optional[str] = SCHEDULER,
    out: Optional[Path] = OUT,
    set_: Optional[List[str]] = SET,
) -> None:
    """Run one paper's reproduction, print its tables and claims, write a report."""
    _check_common(seeds, jobs)
    outcomes = _run_many([slug], parts=_split(exp), quick=quick, seeds=seeds, jobs=jobs,
                         scheduler=scheduler, out=out, overrides=_parse_sets(set_),
                         command=f"icml26 run {slug}" + (" --quick" if quick else ""))
    raise typer.Exit(EXIT_OK if all(o.passed for o in outcomes) else EXIT_CLAIM_FAILED)


@app.command()
def reproduce(
    quick: bool = QUICK,
    only: Optional[List[str]] = typer.Option(None, "--only", help="Comma-separated slugs."),
    seeds: Optional[int] = SEEDS,
    jobs: int = JOBS,
    scheduler: Optional[str] = SCHEDULER,
    out: Optional[Path] = OUT,
    set_: Optional[List[str]] = SET,
) -> None:
    """Run every implemented reproduction (or --only some) and write one report."""
    _check_common(seeds, jobs)
    slugs = _split(only) or sorted(discover())
    if not slugs:
        console.print("No method is implemented yet; writing an empty report.")
    start = time.perf_counter()
    outcomes = _run_many(slugs, parts=[], quick=quick, seeds=seeds, jobs=jobs,
                         scheduler=scheduler, out=out, overrides=_parse_sets(set_),
                         command="icml26 reproduce" + (" --quick" if quick else ""))
    n_ok = sum(o.passed for o in outcomes)
    console.print(f"{n_ok}/{len(outcomes)} papers passed every claim "
                  f"({time.perf_counter() - start:.0f} s)")
    raise typer.Exit(EXIT_OK if n_ok == len(outcomes) else EXIT_CLAIM_FAILED)


@app.command()
def report(directory: Path = typer.Argument(..., help="A report folder with results.json.")) -> None:
    """Re-render README.md and index.html of a report folder from its results.json."""
    try:
        out = render_report(directory)
    except (FileNotFoundError, ValueError) as exc:
        raise _usage_error(str(exc))
    console.print(f"report: {out.resolve() / 'index.html'}")


def _mount_method_clis() -> None:
    for info in pkgutil.iter_modules(icml26.__path__):
        if not info.ispkg or info.name in {"core", "zoo"}:
            continue
        if not (Path(icml26.__path__[0]) / info.name / "cli.py").is_file():
            continue
        try:
            sub = getattr(importlib.import_module(f"icml26.{info.name}.cli"), "app", None)
        except Exception as exc:  # noqa: BLE001 - one broken method must not break the CLI
            err_console.print(f"[yellow]warning:[/] icml26.{info.name}.cli failed to import: {exc}")
            continue
        if isinstance(sub, typer.Typer):
            app.add_typer(sub, name=info.name)


_mount_method_clis()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
