"""The ``icml26`` command: list, run, reproduce, report (plus method subcommands).

Exit codes: 0 when every claim passed; 1 when a claim did not pass (FAIL, NOT EARNED,
INCONCLUSIVE or INCOMPLETE; in a quick run, also a smoke-check bar not met at toy scale);
2 on usage or input errors (a clear message, no traceback); 3 when a job or a part's
``summarize`` crashed (whatever the claims say); 130 when interrupted (Ctrl-C; a previous
report in the ``--out`` folder is kept as it was).

A method folder may ship ``icml26/<slug>/cli.py`` with a ``typer.Typer`` named ``app``;
it is mounted as ``icml26 <slug> ...`` (for example ``icml26 nl2repo evaluate``).
"""

from __future__ import annotations

import importlib
import pkgutil
import shlex
import time
from pathlib import Path
from typing import List, Optional

import typer
import typer.core
from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Table
from rich.text import Text

import icml26
from icml26.core.catalog import PAPERS, catalogue
from icml26.core.report import QUICK_CAVEAT, prepare_out_dir, render_report, write_report

# The experiment machinery (numpy, the methods) is imported by the commands that need it,
# so `icml26 list` and `icml26 --help` start in well under a second.

EXIT_OK, EXIT_CLAIM_FAILED, EXIT_USAGE, EXIT_CRASHED = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it


def _flag_display_type(self, ctx):
    """On/off flags take no value: show no ``<bool>`` placeholder in ``--help``."""
    if getattr(self, "is_flag", False) and self.metavar is None:
        return None
    return _typer_display_type(self, ctx)


# Typer >= 0.21 renders a type placeholder through this method; older releases (those Flower
# pins) show none for flags, so there is nothing to patch.
_typer_display_type = getattr(typer.core.TyperOption, "display_type_rich", None)
if _typer_display_type is not None:
    typer.core.TyperOption.display_type_rich = _flag_display_type

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="ICML 2026 papers as library components with reproducible claims.")
# Markup is off: every dynamic text (job errors, configs, claim names, notes) is printed as
# it is, so ``[/x]`` in an error can neither crash the printing nor vanish from it; styled
# output is built with :func:`_styled` from (text, style) pieces.
console = Console(markup=False)
err_console = Console(stderr=True, soft_wrap=True, markup=False)

_VERDICT_STYLE = {"PASS": "green", "FAIL": "red", "NOT EARNED": "red", "INCONCLUSIVE": "magenta",
                  "INCOMPLETE": "yellow", "SMOKE": "cyan"}
_KIND_LABEL = {"check": "implementation check", "control": "world/protocol check"}


def _styled(*pieces) -> Text:
    """A :class:`rich.text.Text` from strings and ``(text, style)`` pairs; nothing is parsed."""
    return Text.assemble(*[(str(p[0]), p[1]) if isinstance(p, tuple) else str(p)
                           for p in pieces])


def _verdict_text(verdict: str) -> Text:
    return Text(verdict, style=_VERDICT_STYLE.get(verdict, ""))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"icml26 {icml26.__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """ICML 2026 papers as library components with reproducible claims."""
    global console, err_console
    console = Console(markup=False)  # read COLUMNS / the terminal size of this invocation
    err_console = Console(stderr=True, soft_wrap=True, markup=False)


def _usage_error(message: str) -> typer.Exit:
    err_console.print(_styled(("error:", "bold red"), " ", message), highlight=False)
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


# -- list ------------------------------------------------------------------------------

def _part_summary(entry: dict) -> str:
    """``3`` default parts, ``3+2`` with two opt-in parts."""
    parts = entry.get("parts", [])
    opt = sum(not p["default"] for p in parts)
    return f"{len(parts) - opt}" + (f"+{opt}" if opt else "")


@app.command("list")
def list_methods(long: bool = typer.Option(False, "--long", help="Titles, part names and "
                                           "headline claims in words.")) -> None:
    """List the papers: slug, status, parts and claim counts (titles with --long).

    Read from the methods' claim tables (claims.toml), without importing them.
    """
    entries = catalogue()
    slugs = list(PAPERS) + sorted(set(entries) - set(PAPERS))
    if not long:
        from rich import box

        table = Table(title="icml26 methods (icml26 list --long for titles and claims)",
                      title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("slug", no_wrap=True)
        table.add_column("headline", no_wrap=True)
        table.add_column("paper claims", overflow="fold")
        table.add_column("parts", no_wrap=True, justify="right")
        table.add_column("recorded", no_wrap=True)
        for slug in slugs:
            entry = entries.get(slug)
            if entry is None:
                table.add_row(slug, Text("not yet", style="dim"), "", "", "")
            elif "error" in entry:
                table.add_row(slug, Text("table error", style="red"), "", "", "")
            else:
                verdict, date = _ledger_cells(slug, entry)
                table.add_row(slug, _headline_cell(slug, entry), verdict,
                              _part_summary(entry), date)
        console.print(table)
        console.print("paper claims: F failed · N not earned · ? inconclusive · I incomplete",
                      style="dim", highlight=False)
        n_impl = sum(1 for s in slugs if s in entries and "error" not in entries[s])
        console.print(f"{n_impl} of {len(slugs)} implemented. "
                      "Run one: icml26 run SLUG (add --quick for a smoke check).",
                      highlight=False)
        return
    for slug in slugs:
        entry = entries.get(slug)
        title = entry.get("title") if entry and "title" in entry else PAPERS.get(slug, ("",))[0]
        if entry is None:
            status = _styled(("not yet", "dim"))
        elif "error" in entry:
            status = _styled(("table error", "red"), f": {entry['error']}")
        else:
            status = _styled(("implemented", "green"))
        console.print(_styled((slug, "bold"), " · ", status), highlight=False)
        console.print(f"  {title}", highlight=False)
        if entry and "parts" in entry:
            console.print("  parts: " + ", ".join(
                p["name"] + ("" if p["default"] else " (opt-in)") for p in entry["parts"]),
                highlight=False)
            for claim in entry.get("claims", []):
                console.print(f"  - {claim}", highlight=False)
            console.print(_styled("  recorded full run: ", _ledger_cell(slug, entry)),
                          highlight=False)
            _print_ledger_details(slug, entry)
        console.print()


def _ledger_cells(slug: str, entry: dict) -> tuple[Text, Text]:
    """(verdict, date) of the recorded full run: ``18/18 pass``, ``2026-12-03`` or ``stale``."""
    from icml26.core import ledger

    led = ledger.load(slug)
    if led is None:
        return Text("not recorded", style="dim"), Text("")
    n = ledger.counts(led)
    if not n["total"]:     # nothing of the paper testable here: say so, with the checks
        n = ledger.counts(led, kind="all")
        text = f"none; checks {n['PASS']}/{n['total']}"
    else:
        text = f"{n['PASS']}/{n['total']}" + (" pass" if n["PASS"] == n["total"] else "")
        # compact, so a row fits 80 columns: "17/20 · 2F 1N 1?" (the legend follows the table)
        tail = " ".join(f"{n[v]}{sym}" for v, sym in (("FAIL", "F"), ("NOT EARNED", "N"),
                                                       ("INCONCLUSIVE", "?"), ("INCOMPLETE", "I"))
                        if n[v])
        text += f" · {tail}" if tail else ""
    verdict = Text(text, style="green" if n["PASS"] == n["total"] else "yellow")
    if (entry.get("ledger") or {}).get("current") is False:
        return verdict, Text("stale", style="bold yellow")
    return verdict, Text(ledger.recorded_date(led))


def _headline_cell(slug: str, entry: dict) -> Text:
    """The recorded verdict of the paper's headline claim (``—`` when none is recorded)."""
    from icml26.core import ledger

    led = ledger.load(slug)
    head = None if led is None else ledger.headline_claim(led, entry.get("headline"))
    if head is None:
        return Text("—", style="dim")
    text = _verdict_text(head["verdict"])
    if head.get("known_negative") and head["verdict"] != "PASS":
        text.append(" (known)", style="dim")
    return text


def _ledger_cell(slug: str, entry: dict) -> Text:
    verdict, date = _ledger_cells(slug, entry)
    return Text.assemble(verdict, " · ", date) if date.plain else verdict


def _print_ledger_details(slug: str, entry: dict) -> None:
    from icml26.core import ledger

    led = ledger.load(slug)
    if led is None:
        return
    head = ledger.headline_claim(led, entry.get("headline"))
    if head is not None:
        console.print(_styled("  headline: ", head["id"], " = ", ledger._fmt(head["measured"]),
                              f" (bar {head['bar']}, paper {head['paper']}) ",
                              _verdict_text(head["verdict"])), highlight=False)
    opt = [p for p in led["parts"] if not p["default"]]
    for p in opt:
        n = sum(c["verdict"] == "PASS" for c in p["claims"])
        console.print(f"  opt-in {p['part']}: {n}/{len(p['claims'])} pass", highlight=False)
    for reason in ((entry.get("ledger") or {}).get("reasons") or [])[:5]:
        console.print(Text(f"  stale: {reason}", style="yellow"), highlight=False)


# -- run / reproduce -------------------------------------------------------------------

def _fits(table: Table) -> bool:
    """Whether ``table`` prints at the terminal's width without wrapping any cell."""
    from rich.measure import Measurement

    wide = console.options.update_width(10_000)
    return Measurement.get(console, wide, table).maximum <= console.width


def _data_table(title: str, frame) -> Table:
    table = Table(title=title, title_justify="left")
    for col in frame.columns:
        table.add_column(str(col), overflow="fold")
    for row in frame.itertuples(index=False):
        table.add_row(*[f"{v:.4g}" if isinstance(v, float) else str(v) for v in row])
    return table


def _claims_table(title: str, claims, quick: bool = False) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("claim", ratio=3)
    table.add_column("paper", ratio=2)
    table.add_column("measured", ratio=1, overflow="fold")
    table.add_column("bar", ratio=1, overflow="fold")
    table.add_column("verdict", no_wrap=True)
    for c in claims:
        shown = c.shown_verdict(quick)
        text = _verdict_text(shown)
        if shown == "SMOKE":
            text.append(" (met)" if c.passed else " (not met)", style="dim")
        elif c.known_negative and not c.passed:
            text.append(" (known)", style="dim")
        name = c.name + (f" [{_KIND_LABEL[c.kind]}]" if c.kind in _KIND_LABEL else "")
        measured = c.measured_text
        if c.control is not None:
            measured += f"; control {_short(c.control.get('measured'))}"
        if c.competitor is not None:
            measured += f"; competitor {_short(c.competitor.get('measured'))}"
        table.add_row(name, c.paper, measured, c.bar, text)
    return table


def _short(value) -> str:
    from icml26.core.claims import fmt_number

    return fmt_number(value)


def _not_passed(outcome) -> list:
    """Claims shown with a verdict other than PASS (a quick run's smoke checks are not
    listed)."""
    return [c for c in outcome.claims if c.shown_verdict(outcome.quick) not in ("PASS", "SMOKE")]


def _verdict_counts(claims) -> str:
    """``", 2 failed, 1 not earned, 1 inconclusive, 1 incomplete"`` (empty when none)."""
    text = ""
    for verdict, word in (("FAIL", "failed"), ("NOT EARNED", "not earned"),
                          ("INCONCLUSIVE", "inconclusive"), ("INCOMPLETE", "incomplete")):
        n = sum(c.verdict == verdict for c in claims)
        text += f", {n} {word}" if n else ""
    return text


def _outcome_line(outcome) -> str:
    claims = outcome.claims
    n_jobs = sum(len(p.failed_jobs) for p in outcome.parts)
    if outcome.quick:
        checks = [c for c in claims if c.quick_meaningful]
        n_smoke = len(claims) - len(checks)
        text = (f"{outcome.slug}: ran end to end; {n_smoke} smoke check(s) "
                f"({sum(not c.passed for c in claims if not c.quick_meaningful)} bar(s) not met "
                f"at toy scale)")
        if checks:
            text += (f"; claims meaningful at any scale {sum(c.passed for c in checks)}/"
                     f"{len(checks)} passed" + _verdict_counts(checks))
    else:
        paper = [c for c in claims if c.counts]
        other = [c for c in claims if not c.counts]
        text = (f"{outcome.slug}: {sum(c.passed for c in paper)}/{len(paper)} paper claims "
                "passed" + _verdict_counts(paper) if paper
                else f"{outcome.slug}: no claim of the paper tested")
        if other:
            text += (f"; checks {sum(c.passed for c in other)}/{len(other)} passed"
                     + _verdict_counts(other))
    if n_jobs:
        text += f", {n_jobs} job(s) failed"
    return text + f" · {outcome.seconds:.1f} s"


def _print_outcome(outcome) -> None:
    console.rule(_styled((outcome.slug, "bold"), f": {outcome.title}"))
    for part in outcome.parts:
        moved = []
        for name, frame in part.result.tables.items():
            table = _data_table(f"{outcome.slug} · {part.part} · {name}", frame)
            if _fits(table):
                console.print(table)
            else:
                moved.append(f"{name} ({len(frame)}×{len(frame.columns)})")
        if moved:
            console.print(Text(f"{outcome.slug} · {part.part}: wide table(s) in the report: "
                               f"{'; '.join(moved)}", style="dim"), highlight=False)
        if part.result.claims:
            console.print(_claims_table(f"{outcome.slug} · {part.part} · claims",
                                        part.result.claims, outcome.quick))
        for note in part.result.notes:
            console.print(_styled(("note:", "yellow"), f" {note}"), highlight=False)
        warned = part.warnings
        if warned:
            total = sum(w["count"] for w in warned)
            console.print(Text(f"{outcome.slug} · {part.part}: {total} warning(s), "
                               f"{len(warned)} distinct, collected in the report", style="dim"),
                          highlight=False)
        for job in part.failed_jobs:
            err_console.print(_styled(("job failed", "red"),
                                      f" ({outcome.slug}/{part.part} seed {job.seed} "
                                      f"task {job.task}):\n{job.error}"), highlight=False)
        if part.summarize_error:
            err_console.print(_styled(("summarize failed", "red"),
                                      f" ({outcome.slug}/{part.part}):\n{part.summarize_error}"),
                              highlight=False)
    style = "green" if outcome.passed else "red"
    console.print(Text(_outcome_line(outcome), style=style), highlight=False)


def _failed_summary(outcomes) -> str:
    """``failed: racer: claim A; claim B · pem: claim C`` (empty when everything passed)."""
    pieces = []
    for o in outcomes:
        bad = _not_passed(o)
        if bad:
            pieces.append(f"{o.slug}: " + "; ".join(
                c.name + ("" if c.verdict == "FAIL" else f" ({c.verdict.lower()})") for c in bad))
        elif any(p.failed_jobs or p.summarize_error for p in o.parts):
            pieces.append(f"{o.slug}: a job or summarize failed")
    return ("did not pass: " + " · ".join(pieces)) if pieces else ""


def _smoke_only(outcomes) -> bool:
    """A quick run whose only unmet bars are smoke checks (exit code 1 all the same)."""
    return any(not o.passed for o in outcomes) and not _failed_summary(outcomes)


def _command_line(name: str, args: list, options: dict) -> str:
    words = ["icml26", name, *args]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False or value == []:
            continue
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            for v in value:
                words += [flag, str(v)]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


def _plan(slugs: list, parts: list, quick: bool, seeds: Optional[int], overrides: dict,
          skip_broken: bool = False):
    from icml26.core.experiment import ConfigError, get_experiment
    from icml26.core.runner import plan_experiment

    try:
        experiments = []
        for slug in slugs:
            try:
                experiments.append(get_experiment(slug))
            except ConfigError as exc:
                if not skip_broken:
                    raise
                err_console.print(_styled(("warning:", "yellow"), f" skipping {slug}: "
                                          f"{str(exc).splitlines()[-1]}"), highlight=False)
        plans = [plan_experiment(e, parts=parts or None, quick=quick, seeds=seeds,
                                 overrides=overrides) for e in experiments]
    except (ConfigError, ValueError, TypeError) as exc:
        raise _usage_error(str(exc))
    return experiments, plans


def _print_plan(experiments, plans, device: str = "cpu") -> None:
    import dataclasses

    from icml26.core.runner import expand_jobs

    n_total = 0
    for exp, plan in zip(experiments, plans):
        console.print(_styled((exp.slug, "bold"), f": {exp.title}"), highlight=False)
        for part, cfg, seeds in plan:
            n = len(expand_jobs(part, cfg, seeds))
            n_total += n
            console.print(f"  {part.name}: seeds {seeds}, {n} job(s)", highlight=False)
            console.print(f"    config {dataclasses.asdict(cfg)}", highlight=False,
                          soft_wrap=True)
            if device != "cpu":
                console.print(_device_lines(part, device), highlight=False)
    console.print(f"dry run: {n_total} job(s) in {sum(len(p) for p in plans)} part(s) "
                  "resolved; nothing was run.", highlight=False)


def _run_many(slugs: list, *, parts: list, quick: bool, seeds: Optional[int], jobs: int,
              scheduler: Optional[str], out: Optional[Path], overrides: dict, command: str,
              invocation: dict, dry_run: bool, skip_broken: bool = False):
    from icml26.core.experiment import ConfigError
    from icml26.core.runner import check_scheduler

    experiments, plans = _plan(slugs, parts, quick, seeds, overrides, skip_broken)
    device = invocation.get("device") or "cpu"
    if dry_run:
        _print_plan(experiments, plans, device)
        return None, None
    try:
        out_dir = prepare_out_dir(out)
    except OSError as exc:
        raise _usage_error(f"--out: {exc}")
    if (out_dir / "results.json").exists():
        err_console.print(_styled(("warning:", "yellow"),
                                  f" {out_dir} holds a previous report; it will be replaced when "
                                  "this run finishes (kept as it is if the run is interrupted "
                                  "or fails to write)."), highlight=False)
    if scheduler:
        try:
            check_scheduler(scheduler, handshake=True)
        except ConfigError as exc:
            raise _usage_error(str(exc))
    if quick:
        console.print(_styled(("quick mode:", "yellow"), f" {QUICK_CAVEAT}"), highlight=False)
    from icml26.core.ledger import git_provenance

    provenance = git_provenance()  # the code this run loads, whatever the checkout does meanwhile
    try:
        outcomes = _run_with_progress(experiments, plans, parts=parts, quick=quick, seeds=seeds,
                                      overrides=overrides, jobs=jobs, scheduler=scheduler,
                                      device=device)
        # Written before anything is printed, so no printing problem can lose the report;
        # written into a sibling folder and swapped in, so an interrupt keeps the old one.
        report_dir = write_report(outcomes, out_dir, command=command, invocation=invocation,
                                  provenance=provenance)
    except KeyboardInterrupt:
        kept = (" The previous report in " + str(out_dir) + " is kept as it was."
                if (out_dir / "results.json").exists() else "")
        err_console.print(_styled(("interrupted:", "bold yellow"),
                                  " no report was written." + kept), highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED)
    for outcome in outcomes:
        _print_outcome(outcome)
    console.print(f"report: {report_dir.resolve() / 'index.html'}", highlight=False,
                  soft_wrap=True)
    return outcomes, report_dir


def _run_with_progress(experiments, plans, *, parts, quick, seeds, overrides, jobs, scheduler,
                       device: str = "cpu"):
    from icml26.core.experiment import ConfigError
    from icml26.core.runner import expand_jobs, run_experiment

    outcomes = []
    columns = (TextColumn("{task.description}", markup=False), BarColumn(bar_width=20),
               MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
               TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        bars = {(exp.slug, part.name): progress.add_task(
                    f"{exp.slug} · {part.name}", total=len(expand_jobs(part, cfg, sd)),
                    start=False)
                for exp, plan in zip(experiments, plans) for part, cfg, sd in plan}
        for exp in experiments:
            for (slug, _), bar in bars.items():
                if slug == exp.slug:  # its clock (elapsed, ETA) starts with its experiment
                    progress.start_task(bar)
            try:
                outcomes.append(run_experiment(
                    exp, parts=parts or None, quick=quick, seeds=seeds, overrides=overrides,
                    jobs=jobs, scheduler=scheduler, device=device,
                    progress=lambda r, s=exp.slug: progress.advance(bars[(s, r.part)])))
            except ConfigError as exc:  # e.g. the scheduler went away
                raise _usage_error(str(exc))
    return outcomes


def _check_common(seeds: Optional[int], jobs: int) -> None:
    if seeds is not None and seeds < 1:
        raise _usage_error(f"--seeds must be >= 1, got {seeds}")
    if jobs < 1:
        raise _usage_error(f"--jobs must be >= 1, got {jobs}")


def _finish(outcomes, quick: bool, head: str) -> None:
    """The run's last line: the verdict, naming what did not pass."""
    failed = _failed_summary(outcomes)
    if quick and _smoke_only(outcomes):
        failed = ("exit code 1 because some smoke-check bars are not met at toy scale "
                  "(quick mode; the recorded full-run verdicts are in `icml26 list`)")
        console.print(Text(head + f"; {failed}", style="yellow"), highlight=False)
    else:
        console.print(Text(head + (f"; {failed}" if failed else ""),
                           style="red" if failed else "green"), highlight=False)
    raise typer.Exit(exit_code(outcomes))


def exit_code(outcomes) -> int:
    """0 every claim passed, 1 a claim did not, 3 a job or a summarize crashed."""
    if any(p.failed_jobs or p.summarize_error for o in outcomes for p in o.parts):
        return EXIT_CRASHED
    return EXIT_OK if all(o.passed for o in outcomes) else EXIT_CLAIM_FAILED


# Options shared by `run` and `reproduce`.
QUICK = typer.Option(False, "--quick", help="Quick configs: a smoke check (seconds to a minute).")
SEEDS = typer.Option(None, "--seeds", help="Number of seeds.")
JOBS = typer.Option(1, "--jobs", help="Local worker processes.")
SCHEDULER = typer.Option(None, "--scheduler", help="Dask scheduler address or 'local'.")
OUT = typer.Option(None, "--out", help="Report folder (default reports/<timestamp>).")
SET = typer.Option(None, "--set", help="Override a config field: key=value.")
DRY_RUN = typer.Option(False, "--dry-run", help="Resolve parts, configs, --set and seeds, "
                       "print them and exit without running.")


# -- --device: where the torch parts run ----------------------------------------------
DEVICE = typer.Option("cpu", "--device", help="Where parts that train or run a torch model "
                      "run: cpu (default), cuda, cuda:N or auto (CUDA when available). Configs "
                      "do not change; --dry-run names the parts that stay on the CPU.")


def _resolve_device_option(device: str) -> str:
    """``--device`` checked and resolved (``auto`` -> ``cuda:0`` or ``cpu``); exit 2 if absent."""
    from icml26.core.device import check_device_spec, resolve_device

    try:
        spec = check_device_spec(device, "--device")
        return spec if spec == "cpu" else str(resolve_device(spec, "--device"))
    except (TypeError, ValueError) as exc:
        raise _usage_error(str(exc))


def _device_lines(part, device: str) -> str:
    from icml26.core.device import device_note

    return "    " + device_note(part, device)


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
    dry_run: bool = DRY_RUN,
    record: bool = typer.Option(False, "--record", help="Record this full run's verdicts in "
                                "the method's ledger (ledger/<slug>/verdicts.json)."),
    device: str = DEVICE,
) -> None:
    """Run one paper's reproduction, print its claims, write a report."""
    _check_common(seeds, jobs)
    device = _resolve_device_option(device)
    if record and (quick or set_ or seeds is not None):
        raise _usage_error("--record records a full run with the parts' own configs and "
                           "seeds: drop --quick, --set and --seeds")
    parts = _split(exp)
    invocation = {"slug": slug, "quick": quick, "exp": parts, "seeds": seeds, "jobs": jobs,
                  "scheduler": scheduler, "out": str(out) if out else None,
                  "set": _parse_sets(set_)}
    if device != "cpu":
        invocation["device"] = device
    command = _command_line("run", [slug], {
        "quick": quick, "exp": parts, "seeds": seeds, "jobs": jobs if jobs != 1 else None,
        "scheduler": scheduler, "out": out, "set": list(set_ or []), "record": record,
        "device": device if device != "cpu" else None})
    outcomes, report_dir = _run_many([slug], parts=parts, quick=quick, seeds=seeds, jobs=jobs,
                         scheduler=scheduler, out=out, overrides=invocation["set"],
                         command=command, invocation=invocation, dry_run=dry_run)
    if outcomes is None:
        raise typer.Exit(EXIT_OK)
    outcome = outcomes[0]
    if record:
        _record(outcome, report_dir)
    _finish(outcomes, quick, _outcome_line(outcome))


def _record(outcome, report_dir) -> None:
    from icml26.core import ledger

    try:
        path = ledger.record_report(report_dir, [outcome.slug])[0]
    except ledger.LedgerError as exc:
        err_console.print(_styled(("not recorded:", "yellow"), f" {exc}"), highlight=False)
        return
    console.print(f"recorded in {path} ({ledger.verdict_text(ledger.load(outcome.slug))}); "
                  "regenerate the README tables with: python -m icml26.core.ledger readme",
                  highlight=False, soft_wrap=True)


@app.command()
def reproduce(
    quick: bool = QUICK,
    only: Optional[List[str]] = typer.Option(None, "--only", help="Comma-separated slugs."),
    seeds: Optional[int] = SEEDS,
    jobs: int = JOBS,
    scheduler: Optional[str] = SCHEDULER,
    out: Optional[Path] = OUT,
    set_: Optional[List[str]] = SET,
    dry_run: bool = DRY_RUN,
    device: str = DEVICE,
) -> None:
    """Run every implemented reproduction (or --only some) and write one report.

    With --quick (what make demo runs) all nineteen take about 5 minutes on two quiet cores
    with --jobs 2: 282 s wall, 468 CPU-s (fresh clone, 2026-12-05; docs/PERFORMANCE.md keeps
    each measurement).
    """
    from icml26.core.catalog import method_folders

    _check_common(seeds, jobs)
    device = _resolve_device_option(device)
    slugs = _split(only) or method_folders()
    if not slugs:
        console.print("No method is implemented yet; writing an empty report.")
    invocation = {"quick": quick, "only": _split(only), "seeds": seeds, "jobs": jobs,
                  "scheduler": scheduler, "out": str(out) if out else None,
                  "set": _parse_sets(set_)}
    if device != "cpu":
        invocation["device"] = device
    command = _command_line("reproduce", [], {
        "quick": quick, "only": _split(only), "seeds": seeds,
        "jobs": jobs if jobs != 1 else None, "scheduler": scheduler, "out": out,
        "set": list(set_ or []), "device": device if device != "cpu" else None})
    start = time.perf_counter()
    outcomes, report_dir = _run_many(slugs, parts=[], quick=quick, seeds=seeds, jobs=jobs,
                         scheduler=scheduler, out=out, overrides=invocation["set"],
                         command=command, invocation=invocation, dry_run=dry_run,
                         skip_broken=not only)
    if outcomes is None:
        raise typer.Exit(EXIT_OK)
    seconds = time.perf_counter() - start
    if quick:
        ran = sum(not any(p.failed_jobs or p.summarize_error for p in o.parts) for o in outcomes)
        checks = [c for o in outcomes for c in o.claims if c.quick_meaningful]
        head = (f"quick smoke run: {ran}/{len(outcomes)} papers ran end to end; claims meaningful "
                f"at any scale {sum(c.passed for c in checks)}/{len(checks)} passed "
                f"({seconds:.0f} s; the papers' verdicts are the recorded full runs: icml26 list)")
    else:
        head = (f"{sum(o.passed for o in outcomes)}/{len(outcomes)} papers passed every claim "
                f"({seconds:.0f} s)")
    _finish(outcomes, quick, head)


@app.command()
def verify(
    slug: str = typer.Argument(..., help="Method slug with a recorded ledger."),
    exp: Optional[List[str]] = typer.Option(None, "--exp", help="Recorded part(s) to rerun; "
                                            "default: the recorded default parts."),
    jobs: int = JOBS,
    scheduler: Optional[str] = SCHEDULER,
    out: Optional[Path] = OUT,
    dry_run: bool = DRY_RUN,
) -> None:
    """Rerun a paper's recorded full parts and compare, claim by claim, with its ledger.

    Exit 0 when every recorded verdict still holds, 1 when any changed (or a claim is new or
    gone), 2 on usage errors (no ledger, a part that was never recorded).
    """
    from icml26.core import ledger

    _check_common(None, jobs)
    led = ledger.load(slug)
    if led is None:
        raise _usage_error(f"{slug!r} has no recorded ledger; record one with "
                           f"`icml26 run {slug} --record`")
    recorded = [p["part"] for p in led["parts"]]
    parts = _split(exp) or [p["part"] for p in led["parts"] if p["default"]]
    missing = [p for p in parts if p not in recorded]
    if missing:
        raise _usage_error(f"--exp {missing[0]}: no recorded part of that name; recorded: "
                           + ", ".join(recorded))
    invocation = {"slug": slug, "quick": False, "exp": parts, "seeds": None, "jobs": jobs,
                  "scheduler": scheduler, "out": str(out) if out else None, "set": {}}
    command = _command_line("verify", [slug], {"exp": parts, "jobs": jobs if jobs != 1 else None,
                                               "scheduler": scheduler, "out": out})
    outcomes, report_dir = _run_many([slug], parts=parts, quick=False, seeds=None, jobs=jobs,
                                     scheduler=scheduler, out=out, overrides={},
                                     command=command, invocation=invocation, dry_run=dry_run)
    if outcomes is None:
        raise typer.Exit(EXIT_OK)
    import json

    data = json.loads((report_dir / "results.json").read_text(encoding="utf-8"))
    rows = ledger.compare(led, data["experiments"][0])
    table = Table(title=f"{slug}: recorded vs this run", title_justify="left")
    for col in ("claim", "bar", "recorded", "now", "verdict"):
        table.add_column(col, overflow="fold")
    for r in rows:
        verdict = _styled(_verdict_text(r["recorded_verdict"]) if r["recorded_verdict"] in
                          _VERDICT_STYLE else r["recorded_verdict"], " → ",
                          _verdict_text(r["new_verdict"]) if r["new_verdict"] in _VERDICT_STYLE
                          else r["new_verdict"])
        verdict.append("  holds" if r["held"] else "  CHANGED",
                       style="green" if r["held"] else "bold red")
        table.add_row(r["id"], r["bar"], ledger._fmt(r["recorded"]), ledger._fmt(r["new"]),
                      verdict)
    console.print(table)
    changed = [r["id"] for r in rows if not r["held"]]
    if changed:
        console.print(Text(f"{slug}: {len(changed)} of {len(rows)} recorded verdict(s) changed: "
                           + "; ".join(changed), style="red"), highlight=False)
        raise typer.Exit(EXIT_CLAIM_FAILED)
    console.print(Text(f"{slug}: all {len(rows)} recorded verdicts hold", style="green"),
                  highlight=False)
    raise typer.Exit(EXIT_OK)


ledger_app = typer.Typer(no_args_is_help=True, help="The ledger of recorded full-run verdicts.")
app.add_typer(ledger_app, name="ledger")


@ledger_app.command("record")
def ledger_record(
    directory: Path = typer.Argument(..., help="A full run's report folder (results.json)."),
    only: Optional[List[str]] = typer.Option(None, "--only", help="Comma-separated slugs."),
) -> None:
    """Record the full-run verdicts of a finished report in each method's ledger."""
    from icml26.core import ledger

    try:
        paths = ledger.record_report(directory, _split(only) or None)
    except (ledger.LedgerError, ValueError) as exc:
        raise _usage_error(str(exc))
    for path in paths:
        slug = path.parent.name
        console.print(f"recorded {slug}: {ledger.verdict_text(ledger.load(slug))} in {path}",
                      highlight=False, soft_wrap=True)


@ledger_app.command("check")
def ledger_check(slugs: Optional[List[str]] = typer.Argument(None, help="Slugs (default all "
                                                               "with a ledger).")) -> None:
    """Check each ledger against the code: recorded jobs re-summarized by today's code.

    Exit 1 naming what changed when a ledger is stale (a bar, a claim, a config, the seeds).
    """
    from icml26.core import ledger
    from icml26.core.catalog import method_folders

    names = _split(slugs) or [s for s in method_folders() if ledger.load(s) is not None]
    stale = 0
    for slug in names:
        result = ledger.check(slug)
        if result["current"]:
            console.print(Text(f"{slug}: current ({ledger.verdict_text(ledger.load(slug))})",
                               style="green"), highlight=False)
            continue
        stale += 1
        console.print(Text(f"{slug}: stale", style="bold yellow"), highlight=False)
        for reason in result["reasons"]:
            console.print(f"  {reason}", highlight=False)
    raise typer.Exit(EXIT_CLAIM_FAILED if stale else EXIT_OK)


@ledger_app.command("readme")
def ledger_readme(check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 "
                                             "when a README's ledger block is out of date.")) -> None:
    """Regenerate the ledger tables of every method README and of the top-level README."""
    from icml26.core import ledger

    raise typer.Exit(ledger.main(["readme", "--check"] if check else ["readme"]))


@app.command()
def report(directory: Path = typer.Argument(..., help="A report folder with results.json.")) -> None:
    """Re-render README.md and index.html of a report folder from its results.json."""
    try:
        out = render_report(directory)
    except (FileNotFoundError, ValueError) as exc:
        raise _usage_error(str(exc))
    console.print(f"report: {out.resolve() / 'index.html'}", highlight=False, soft_wrap=True)


def _mount_method_clis() -> None:
    for info in pkgutil.iter_modules(icml26.__path__):
        if not info.ispkg or info.name == "core":
            continue
        if not (Path(icml26.__path__[0]) / info.name / "cli.py").is_file():
            continue
        try:
            sub = getattr(importlib.import_module(f"icml26.{info.name}.cli"), "app", None)
        except Exception as exc:  # noqa: BLE001 - one broken method must not break the CLI
            err_console.print(_styled(("warning:", "yellow"),
                                      f" icml26.{info.name}.cli failed to import: {exc}"))
            continue
        if isinstance(sub, typer.Typer):
            app.add_typer(sub, name=info.name)


_mount_method_clis()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
