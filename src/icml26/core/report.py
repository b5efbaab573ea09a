"""Reports: ``results.json`` (every raw number), ``README.md`` and a self-contained
``index.html`` (claim tables coloured by verdict, figures embedded as PNG).

``write_report`` saves figures and ``results.json`` and then renders the two documents
*from* ``results.json``; ``render_report(DIR)`` re-renders an existing report the same
way, so both paths produce identical pages. Every file is written to a temporary name
and renamed into place (mode 0644 under the usual umask), so an interrupted run never
leaves a half-written file.

A report records what was run: the command line (``--exp``, ``--set``, ``--seeds``,
``--only``, ...), each part's config and seeds, package versions and the machine.
Reusing a report folder replaces the previous report: the figures it listed and this run
does not write are removed.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import html
import json
import os
import platform
import re
import tempfile
from pathlib import Path
from typing import Sequence

from .io import atomic_write_text, umask

#: What a table shows for a value that is undefined for a row (no finite measurement).
UNDEFINED = "—"


def jsonable(obj):
    """:func:`icml26.core.experiment.jsonable`, imported on first use (numpy is not needed
    to render a report)."""
    from .experiment import jsonable as convert

    return convert(obj)

__all__ = ["write_report", "render_report", "outcome_to_dict", "versions", "machine",
           "recorded_verdicts",
           "atomic_write_text", "prepare_out_dir", "default_out_dir", "claim_counts",
           "QUICK_CAVEAT"]

#: What every quick-mode report and terminal run says about its verdicts.
QUICK_CAVEAT = ("Quick mode is a smoke check: toy-scale configs show that every part runs end "
                "to end, but the bars are the full runs' and many are not meaningful at this "
                "scale (a sign test over two seeds, an under-trained network), so failures here "
                "are expected. The verdicts that speak for the paper are those of the full runs "
                "(`icml26 run <slug>`, recorded in each method README).")


def default_out_dir() -> Path:
    """``reports/<timestamp>``, the folder a run writes when ``--out`` is not given."""
    return Path("reports") / _dt.datetime.now().strftime("%Y-%m-%d_%H%M%S")


def prepare_out_dir(out_dir: str | Path | None) -> Path:
    """Create the report folder and check that it can be written, before anything runs.

    Raises
    ------
    OSError
        With a message naming the folder, when it cannot be created or written.
    """
    out_dir = default_out_dir() if out_dir is None else Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out_dir, prefix=".icml26-write-check.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OSError(f"cannot write the report folder {str(out_dir)!r}: "
                      f"{exc.strerror or exc}") from exc
    return out_dir


def _package_names() -> list[str]:
    """icml26's declared dependencies (core and every extra), by distribution name."""
    from importlib import metadata

    names = ["numpy", "scipy", "scikit-learn", "pandas", "torch", "matplotlib"]
    try:
        for req in metadata.requires("icml26") or []:
            name = re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0]
            if name and name.lower() not in {"icml26", "pytest", "pytest-benchmark",
                                             "pytest-timeout"} and name not in names:
                names.append(name)
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        pass
    return names


def versions() -> dict:
    """Versions of Python, icml26 and every package it depends on (``None``: not installed).

    Read from the installed distributions' metadata, so nothing is imported.
    """
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ["icml26", *_package_names()]:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def machine() -> dict:
    """The machine a report was made on: OS, CPU, cores, memory, load average."""
    out = {"platform": platform.platform(), "machine": platform.machine(),
           "processor": platform.processor() or None, "cpu_count": os.cpu_count()}
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        out["memory_gib"] = round(pages * size / 2**30, 1)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        out["memory_gib"] = None
    try:
        out["load_average"] = [round(v, 2) for v in os.getloadavg()]
    except (OSError, AttributeError):  # pragma: no cover
        out["load_average"] = None
    return out


#: Resolution of the report's PNG figures (embedded in index.html: size matters).
FIGURE_DPI = 90


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "figure"


def _table_dict(frame) -> dict:
    frame = frame.reset_index(drop=not any(frame.index.names)) if frame.index.nlevels > 1 else frame
    return {"columns": [str(c) for c in frame.columns],
            "rows": jsonable(frame.astype(object).where(frame.notna(), None).values.tolist())}


def _claim_dict(claim) -> dict:
    d = claim.to_dict()
    d["verdict"] = claim.verdict
    return d


def outcome_to_dict(outcome, out_dir: Path | None = None) -> dict:
    """Serialise an ExperimentOutcome; figures are saved as PNG into ``out_dir``."""
    import dataclasses
    import sys

    plt = sys.modules.get("matplotlib.pyplot")  # close what a legacy summarize made in pyplot
    parts = []
    for p in outcome.parts:
        figures = {}
        for name, fig in p.result.figures.items():
            if out_dir is not None:
                fname = _safe(f"{outcome.slug}__{p.part}__{name}") + ".png"
                fig.savefig(Path(out_dir) / fname, dpi=FIGURE_DPI, bbox_inches="tight")
                figures[name] = fname
            if plt is not None:
                plt.close(fig)
        parts.append({
            "part": p.part,
            "config": jsonable(dataclasses.asdict(p.config)),
            "seeds": list(p.seeds),
            "seconds": p.seconds,
            "passed": p.passed,
            "claims": [_claim_dict(c) for c in p.result.claims],
            "tables": {k: _table_dict(v) for k, v in p.result.tables.items()},
            "figures": figures,
            "notes": list(p.result.notes),
            "measurements": jsonable(p.result.measurements),
            "summarize_error": p.summarize_error,
            "cpu_seconds": p.cpu_seconds,
            "warnings": p.warnings,
            "jobs": [{"seed": j.seed, "task": jsonable(j.task), "seconds": j.seconds,
                      "cpu_seconds": j.cpu_seconds, "metrics": j.metrics, "error": j.error}
                     for j in p.jobs],
        })
    return {"slug": outcome.slug, "title": outcome.title, "quick": outcome.quick,
            "seconds": outcome.seconds, "cpu_seconds": outcome.cpu_seconds,
            "passed": outcome.passed, "parts": parts}


def _listed_figures(out_dir: Path) -> set[str]:
    """Figure files named by the results.json already in ``out_dir`` (if any)."""
    try:
        old = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {fname for e in old.get("experiments", []) for p in e.get("parts", [])
            for fname in p.get("figures", {}).values() if isinstance(fname, str)}


def write_report(outcomes: Sequence, out_dir: str | Path | None = None, *,
                 command: str = "", invocation: dict | None = None,
                 provenance: dict | None = None) -> Path:
    """Write ``results.json``, ``README.md``, ``index.html`` and figure PNGs; return the folder.

    The whole report is built in a temporary sibling folder and swapped in at the end, so an
    interrupted or failing write leaves the previous report in ``out_dir`` exactly as it was.

    Parameters
    ----------
    outcomes : list of ExperimentOutcome
    out_dir : path, optional
        Default ``reports/<timestamp>``. A previous report there is replaced (its figures
        that this report does not write are gone with it); other files in the folder are kept.
    command : str
        The command line that produced the outcomes (shown in both documents).
    invocation : dict, optional
        The parsed options of that command (``exp``, ``set``, ``seeds``, ``only``, ...),
        recorded in ``results.json``.
    provenance : dict, optional
        ``{"commit", "dirty"}`` of the checkout *when the run started*
        (:func:`~icml26.core.ledger.git_provenance`; default: taken now). A run that lasts hours
        must name the code it ran, not the commit the checkout moved to meanwhile; when the two
        differ, the state at the end is kept as ``commit_end`` / ``dirty_end``.
    """
    out_dir = prepare_out_dir(out_dir)
    with _staged_report(out_dir) as stage:
        experiments = [outcome_to_dict(o, stage) for o in outcomes]
        from .ledger import git_provenance

        now = git_provenance()
        start = dict(provenance) if provenance is not None else now
        moved = {f"{k}_end": now[k] for k in ("commit", "dirty") if now.get(k) != start.get(k)}
        data = {
            "created": _dt.datetime.now().isoformat(timespec="seconds"),
            "command": command,
            "invocation": jsonable(invocation or {}),
            "commit": start.get("commit"), "dirty": start.get("dirty"), **moved,
            "versions": versions(),
            "machine": machine(),
            "recorded": recorded_verdicts([o.slug for o in outcomes]),
            "experiments": experiments,
        }
        atomic_write_text(stage / "results.json", json.dumps(data, indent=1, allow_nan=False))
        atomic_write_text(stage / "run.log", run_log(outcomes))
        render_report(stage)
    return out_dir


def recorded_verdicts(slugs: Sequence[str]) -> dict:
    """Each method's recorded full-run verdict (from its ledger), for a report to lead with.

    ``{slug: {"verdict": "18/18 pass", "date": "2026-12-03", "current": True/False/None,
    "reasons": [...]}}``; ``current`` comes from the catalogue's check of the ledger against
    the code (None where it is unknown).
    """
    from . import ledger as ledger_module
    from .catalog import catalogue

    try:
        entries = catalogue()
    except Exception:  # noqa: BLE001 - a report never fails for want of the catalogue
        entries = {}
    out = {}
    for slug in slugs:
        led = ledger_module.load(slug)
        check = (entries.get(slug) or {}).get("ledger") or {}
        out[slug] = {"verdict": ledger_module.verdict_text(led),
                     "date": ledger_module.recorded_date(led) if led else None,
                     "current": check.get("current") if led else None,
                     "reasons": check.get("reasons", [])[:3] if led else []}
    return out


_REPORT_FILES = ("results.json", "README.md", "index.html", "run.log")


def run_log(outcomes: Sequence) -> str:
    """Everything the jobs printed and every warning they raised, job by job: what the
    terminal leaves out (third-party progress bars, a method's own chatter)."""
    lines = []
    for o in outcomes:
        for p in o.parts:
            for j in p.jobs:
                head = f"== {o.slug} · {p.part} · seed {j.seed}" + (
                    f" · task {j.task}" if j.task is not None else "")
                body = [j.output.rstrip()] if j.output.strip() else []
                body += [f"warning {w['category']} ×{w['count']}: {w['message']}"
                         for w in j.warnings or []]
                if j.error:
                    body.append(j.error.rstrip())
                if body:
                    lines += [head, *body, ""]
            for w in p.summarize_warnings or []:
                lines.append(f"== {o.slug} · {p.part} · summarize: warning {w['category']} "
                             f"×{w['count']}: {w['message']}")
    return "\n".join(lines) + ("\n" if lines else "(the jobs printed nothing)\n")


def _report_files(out_dir: Path) -> set[str]:
    """The names of the files that belong to the report in ``out_dir`` (if any)."""
    return set(_REPORT_FILES) | {f for f in _listed_figures(out_dir)
                                 if Path(f).name == f and f.endswith(".png")}


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two folders (Linux ``renameat2(RENAME_EXCHANGE)``); False if unsupported."""
    import ctypes
    import errno

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


@contextlib.contextmanager
def _staged_report(out_dir: Path):
    """Yield an empty sibling folder to write a report into, then put it in ``out_dir``'s place.

    A folder that holds only a report (or nothing) is swapped whole: atomically where the
    kernel can exchange two folders, else by two renames. A folder that also holds other
    files keeps them: the new report's files are renamed into it one by one, ``results.json``
    last, and then the old report's stale figures are removed. On any exception (an
    interrupt included) the staged folder is deleted and ``out_dir`` is untouched.
    """
    import shutil

    out_dir = Path(out_dir)
    stage = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.report-", dir=out_dir.parent))
    try:
        yield stage
        os.chmod(stage, 0o777 & ~umask())
        old = _report_files(out_dir)
        present = {p.name for p in out_dir.iterdir()}
        whole = present <= old and out_dir.resolve() != Path.cwd().resolve()
        if whole:  # nothing but a report (or empty), and not our working folder: swap it
            if _exchange(stage, out_dir):
                shutil.rmtree(stage, ignore_errors=True)
            else:
                aside = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
                os.replace(out_dir, aside / "old")
                os.replace(stage, out_dir)
                shutil.rmtree(aside, ignore_errors=True)
            return
        new = sorted(p.name for p in stage.iterdir())
        for name in [n for n in new if n != "results.json"] + ["results.json"]:
            os.replace(stage / name, out_dir / name)
        for name in sorted(old - set(new)):
            if name.endswith(".png"):
                (out_dir / name).unlink(missing_ok=True)
        shutil.rmtree(stage, ignore_errors=True)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def render_report(out_dir: str | Path) -> Path:
    """(Re-)render README.md and index.html from ``out_dir/results.json``."""
    out_dir = Path(out_dir)
    source = out_dir / "results.json"
    if not source.is_file():
        raise FileNotFoundError(f"{source} not found; expected a report folder written by icml26")
    data = json.loads(source.read_text(encoding="utf-8"))
    atomic_write_text(out_dir / "README.md", _markdown(data))
    atomic_write_text(out_dir / "index.html", _html(data, out_dir))
    return out_dir


# -- what the documents say ------------------------------------------------------------

def _verdict_of(claim: dict) -> str:
    if "verdict" in claim:
        return claim["verdict"]
    if claim.get("incomplete"):
        return "INCOMPLETE"
    return "PASS" if claim.get("passed") else "FAIL"


def _shown(claim: dict, quick: bool) -> str:
    """The verdict a report shows: SMOKE for a quick run's claim whose bar is not meaningful
    at quick scale (``quick_meaningful`` false), else the measured verdict."""
    if quick and not claim.get("quick_meaningful", False):
        return "SMOKE"
    return _verdict_of(claim)


def _quick_text(e: dict) -> tuple[str, str]:
    """(text, css class) of a quick run's cell: ran end to end, plus its quick-scale checks."""
    parts = e["parts"]
    if any(_failed_jobs(p) or p.get("summarize_error") for p in parts):
        return "a job or summarize failed", "fail"
    checks = [c for c in _claims(e) if c.get("quick_meaningful")]
    text = "ran end to end (smoke check, numbers at toy scale)"
    if not checks:
        return text, "smoke"
    n = claim_counts(checks)
    text += f"; claims meaningful at any scale: {_counts_text(checks)}"
    bad = n["FAIL"] + n["NOT EARNED"]
    return text, ("fail" if bad else "incomplete" if n["INCOMPLETE"] + n["INCONCLUSIVE"]
                  else "smoke")


def _recorded_text(data: dict, slug: str) -> str:
    rec = (data.get("recorded") or {}).get(slug)
    if not rec:
        return "not recorded"
    text = rec["verdict"]
    if rec.get("date"):
        text += f" ({rec['date']})"
    if rec.get("current") is False:
        text += " — stale: the code changed since"
    return text


def claim_counts(claims: Sequence[dict]) -> dict:
    """``{"PASS", "FAIL", "NOT EARNED", "INCONCLUSIVE", "INCOMPLETE"}`` counts over claim
    dicts."""
    counts = {"PASS": 0, "FAIL": 0, "NOT EARNED": 0, "INCONCLUSIVE": 0, "INCOMPLETE": 0}
    for c in claims:
        counts[_verdict_of(c)] += 1
    return counts


def _paper(claims: Sequence[dict]) -> list:
    """The paper claims among claim dicts (checks and controls are reported, not counted)."""
    return [c for c in claims if c.get("kind", "paper") == "paper"]


def _claims(e: dict) -> list:
    return [c for p in e["parts"] for c in p["claims"]]


def _experiment_verdict(e: dict) -> str:
    if e["passed"]:
        return "PASS"
    counts = claim_counts(_claims(e))
    clean = not any(_failed_jobs(p) or p.get("summarize_error") for p in e["parts"])
    if not clean or counts["FAIL"] + counts["NOT EARNED"]:
        return "FAIL"
    return "INCONCLUSIVE" if counts["INCONCLUSIVE"] else "INCOMPLETE"


def _counts_text(claims: Sequence[dict]) -> str:
    """``"10/12 paper claims passed, 2 failed; checks 5/5"`` over claim dicts."""
    paper = _paper(claims)
    other = [c for c in claims if c.get("kind", "paper") != "paper"]
    text = f"{claim_counts(paper)['PASS']}/{len(paper)} passed" + _verdict_tail(paper)
    if other:
        text += f"; checks {claim_counts(other)['PASS']}/{len(other)}" + _verdict_tail(other)
    return text


def _verdict_tail(claims: Sequence[dict]) -> str:
    counts = claim_counts(claims)
    return "".join(f", {counts[v]} {word}" for v, word in (
        ("FAIL", "failed"), ("NOT EARNED", "not earned"), ("INCONCLUSIVE", "inconclusive"),
        ("INCOMPLETE", "incomplete")) if counts[v])


_NAN_TEXT = re.compile(r"^\s*(nan|none)(\s*±\s*\S+)?\s*$", re.IGNORECASE)


def _cell(v) -> str:
    if v is None:
        return UNDEFINED
    if isinstance(v, float):
        return f"{v:.4g}"
    text = str(v)
    return UNDEFINED if _NAN_TEXT.match(text) else text


def _measured(claim: dict) -> str:
    v = claim["measured"]
    text = f"{v:.4g}" if isinstance(v, float) else _cell(v)
    if claim.get("interval"):
        lo, hi = claim["interval"]
        text += f" [{_cell(lo)}, {_cell(hi)}]"
    for role in ("control", "competitor"):
        if claim.get(role):
            text += f"; {role} {_cell(claim[role].get('measured'))}"
    return text


def _mode(e: dict) -> str:
    return "quick" if e["quick"] else "full"


def _failed_jobs(part: dict) -> list:
    return [j for j in part["jobs"] if j["error"]]


def _run_lines(data: dict) -> list[tuple[str, str]]:
    """(label, text) pairs describing what was run and where."""
    rows = []
    if data.get("command"):
        rows.append(("command", data["command"]))
    inv = data.get("invocation") or {}
    for key in ("exp", "only", "seeds", "set", "jobs", "scheduler", "quick"):
        if inv.get(key) not in (None, [], {}, ""):
            rows.append((f"--{key}", json.dumps(inv[key]) if isinstance(inv[key], (dict, list))
                         else str(inv[key])))
    m = data.get("machine") or {}
    if m:
        rows.append(("machine", ", ".join(str(x) for x in [
            m.get("platform"), m.get("machine"), m.get("processor"),
            f"{m.get('cpu_count')} cores" if m.get("cpu_count") else None,
            f"{m.get('memory_gib')} GiB" if m.get("memory_gib") else None,
            f"load average {m['load_average']}" if m.get("load_average") else None] if x)))
    rows.append(("versions", ", ".join(f"{k} {v}" for k, v in data["versions"].items() if v)))
    return rows


def _failed_names(data: dict) -> list[tuple[str, str, str]]:
    """(slug, claim name, verdict) of every claim shown as FAIL or INCOMPLETE (a quick run's
    smoke checks are not listed)."""
    return [(e["slug"], c["name"], _shown(c, e["quick"])) for e in data["experiments"]
            for c in _claims(e) if _shown(c, e["quick"]) not in ("PASS", "SMOKE")]


def _any_quick(data: dict) -> bool:
    return any(e["quick"] for e in data["experiments"])


_KIND_LABEL = {"check": "implementation check", "control": "world/protocol check"}


def _claim_rows(p: dict, quick: bool = False) -> list:
    return [[c["name"] + (f" [{_KIND_LABEL[c['kind']]}]" if c.get("kind") in _KIND_LABEL
                          else ""),
             c["paper"], _measured(c), c["bar"], _shown_cell(c, quick)]
            for c in p["claims"]]


def _shown_cell(c: dict, quick: bool) -> str:
    shown = _shown(c, quick)
    if shown == "SMOKE":
        return "SMOKE (bar met)" if _verdict_of(c) == "PASS" else "SMOKE (bar not met)"
    if c.get("known_negative") and shown != "PASS":
        return f"{shown} (known: {c['known_negative']})"
    return shown


def _warning_lines(p: dict) -> list[str]:
    return [f"{w['category']} ×{w['count']}: {w['message']}" for w in p.get("warnings") or []]


_CLAIM_COLUMNS = ["claim", "paper", "measured", "bar", "verdict"]


def figure_caption(name: str, slug: str, part: str) -> str:
    """A caption in words for a figure named by an identifier (``e1_risk_vs_alpha``)."""
    words = re.sub(r"[_]+", " ", name).strip()
    words = re.sub(r"\s+", " ", words)
    if words:
        words = words[0].upper() + words[1:]
    return f"{words} ({slug}, part {part})"


def _cpu_text(d: dict) -> str:
    cpu = d.get("cpu_seconds")
    return f" ({cpu:.1f} CPU-s)" if isinstance(cpu, (int, float)) else ""


# -- Markdown --------------------------------------------------------------------------

def _md_table(columns, rows) -> str:
    def esc(s):
        return str(s).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(esc(c) for c in columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(esc(_cell(v)) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _markdown(data: dict) -> str:
    out = ["# icml26 reproduction report", "",
           f"Created {data['created']}" + (f" by `{data['command']}`" if data.get("command") else ""),
           ""]
    if _any_quick(data):
        out += [f"> **{QUICK_CAVEAT}**", ""]
        out += ["| paper | recorded full run | this quick run | time (s) |", "|---|---|---|---|"]
        for e in data["experiments"]:
            out.append(f"| [{e['slug']}](#{e['slug']}) | {_recorded_text(data, e['slug'])} | "
                       f"{_quick_text(e)[0] if e['quick'] else _counts_text(_claims(e))} | "
                       f"{e['seconds']:.1f} |")
    else:
        out += ["| paper | mode | claims | verdict | time (s) |", "|---|---|---|---|---|"]
        for e in data["experiments"]:
            out.append(f"| [{e['slug']}](#{e['slug']}) | {_mode(e)} | "
                       f"{_counts_text(_claims(e))} | {_experiment_verdict(e)} | "
                       f"{e['seconds']:.1f} |")
    failed = _failed_names(data)
    if failed:
        out += ["", "Claims that did not pass:", ""]
        out += [f"- {slug}: {name} ({verdict})" for slug, name, verdict in failed]
    out += ["", "## What was run", ""]
    out += [f"- {label}: `{text}`" if label == "command" else f"- {label}: {text}"
            for label, text in _run_lines(data)]
    for e in data["experiments"]:
        out += ["", f"<a id=\"{e['slug']}\"></a>", "", f"## {e['slug']}: {e['title']}", "",
                f"Mode: {_mode(e)} · wall time {e['seconds']:.1f} s"
                + _cpu_text(e) + " · claims "
                + (_quick_text(e)[0] if e["quick"] else _counts_text(_claims(e))), ""]
        if e["quick"]:
            out += [f"Recorded full run: {_recorded_text(data, e['slug'])}", ""]
        for p in e["parts"]:
            out += [f"### {p['part']}", "",
                    f"Seeds {p['seeds']} · {p['seconds']:.1f} s of compute" + _cpu_text(p), ""]
            if p["claims"]:
                out += [_md_table(_CLAIM_COLUMNS, _claim_rows(p, e["quick"])), ""]
            warned = _warning_lines(p)
            if warned:
                out += [f"Warnings collected in this part ({len(warned)} distinct):", ""]
                out += [f"- `{w}`" for w in warned] + [""]
            for name, t in p["tables"].items():
                out += [f"**{name}**", "", _md_table(t["columns"], t["rows"]), ""]
            for name, fname in p["figures"].items():
                out += [f"![{figure_caption(name, e['slug'], p['part'])}]({fname})", "",
                        f"*{figure_caption(name, e['slug'], p['part'])}*", ""]
            for note in p["notes"]:
                out += [f"> {note}", ""]
            jobs_failed = _failed_jobs(p)
            if jobs_failed:
                out += [f"**{len(jobs_failed)} job(s) failed:**", ""]
                for j in jobs_failed:
                    last = j["error"].strip().splitlines()[-1]
                    out.append(f"- seed {j['seed']} task {j['task']}: `{last}`")
                out.append("")
            if p.get("summarize_error"):
                out += ["**summarize raised:**", "", "```", p["summarize_error"], "```", ""]
            out += [f"Config: `{json.dumps(p['config'])}`", ""]
    return "\n".join(out) + "\n"


# -- HTML ------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;margin:0;color:#222;display:grid;
grid-template-columns:minmax(12em,16em) minmax(0,1fr)}
nav#contents{position:sticky;top:0;height:100vh;overflow-y:auto;border-right:1px solid #ddd;
padding:1em .8em;font-size:.88em;background:#fafafa;box-sizing:border-box}
nav#contents ul{list-style:none;padding-left:.8em;margin:.2em 0}nav#contents>ul{padding-left:0}
nav#contents a{text-decoration:none;color:#1a4f8b}nav#contents a:hover{text-decoration:underline}
main{max-width:1100px;padding:0 1.5em 4em;min-width:0}
h2.paper{position:sticky;top:0;background:#fff;z-index:2;margin:0;padding:.5em 0;
border-bottom:1px solid #ddd}
h3.part{position:sticky;top:2.6em;background:#fff;z-index:1;margin:.8em 0 .4em;padding:.2em 0}
@media (max-width:800px){body{display:block}nav#contents{position:static;height:auto}}
.recorded-pass{background:#dff5e1}.recorded-fail{background:#fbe0e0}
.recorded-none{background:#f0f0f0}
.scroll{overflow-x:auto;max-width:100%;margin:.6em 0 1.2em;border:1px solid #e4e4e4}
details.table>summary{cursor:pointer;font-weight:600;margin:.6em 0}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .6em;
text-align:left;font-size:.92em;vertical-align:top}th{background:#f3f3f3;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.pass{background:#dff5e1}.fail{background:#fbe0e0}.incomplete{background:#fff3cd}
.smoke{background:#eef3fb}
.caveat{border:2px solid #d9a400;background:#fff8e1;padding:.6em 1em;margin:1em 0}
img{max-width:100%;border:1px solid #eee}figure{margin:1em 0}figcaption{font-size:.9em;color:#444}
blockquote{border-left:4px solid #999;margin:.5em 0;padding:.2em .8em;background:#fafafa}
pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:.8em}
dl.run{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;font-size:.9em}
dl.run dt{font-weight:600}dl.run dd{margin:0;overflow-wrap:anywhere}
"""

_NUMERIC = re.compile(r"^[-+−]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?%?"
                      r"(\s*±\s*[\d.]+(e[-+]?\d+)?%?)?(\s*\(\d+/\d+ seeds\))?$", re.IGNORECASE)


def _is_numeric(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)) or v is None:
        return True
    text = str(v).strip()
    return text == UNDEFINED or bool(_NUMERIC.match(text))


_NUM_TD = "<td class='num'>"


def _css_class(verdict: str) -> str:
    return {"PASS": "pass", "FAIL": "fail", "NOT EARNED": "fail", "INCONCLUSIVE": "incomplete",
            "INCOMPLETE": "incomplete", "SMOKE": "smoke"}.get(verdict.split(" (")[0], "fail")


def _html_table(columns, rows, row_classes=None) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    numeric = [bool(rows) and all(_is_numeric(r[i]) for r in rows if i < len(r))
               for i in range(len(columns))]
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes else ""
        cells = "".join(
            (_NUM_TD if k < len(numeric) and numeric[k] else "<td>")
            + f"{html.escape(_cell(v))}</td>" for k, v in enumerate(row))
        body.append(f"<tr{cls}>{cells}</tr>")
    return (f"<div class='scroll'><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _anchor(*names: str) -> str:
    return _safe("-".join(names))


#: Data tables longer than this are collapsed in the HTML report (click to open).
LONG_TABLE_ROWS = 12


def _recorded_class(data: dict, slug: str) -> str:
    rec = (data.get("recorded") or {}).get(slug)
    if not rec:
        return "recorded-none"
    text = str(rec.get("verdict", ""))
    return "recorded-pass" if text.endswith(" pass") and rec.get("current") is not False \
        else "recorded-fail"


def _contents(data: dict) -> str:
    esc = html.escape
    items = ["<li><a href='#summary'>Summary</a></li>",
             "<li><a href='#what-was-run'>What was run</a></li>"]
    for e in data["experiments"]:
        sub = "".join(f"<li><a href='#{_anchor(e['slug'], p['part'])}'>{esc(p['part'])}</a></li>"
                      for p in e["parts"])
        items.append(f"<li><a href='#{_anchor(e['slug'])}'>{esc(e['slug'])}</a>"
                     f"<ul>{sub}</ul></li>")
    return f"<nav id='contents' aria-label='Contents'><strong>Contents</strong><ul>{''.join(items)}</ul></nav>"


def _html(data: dict, out_dir: Path) -> str:
    esc = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
             f"<title>icml26 report</title><style>{_CSS}</style></head><body>"
             + _contents(data) + "<main>"
             f"<h1 id='summary'>icml26 reproduction report</h1>",
             f"<p>Created {esc(data['created'])}"
             + (f" by <code>{esc(data['command'])}</code>" if data.get("command") else "")
             + "</p>"]
    rows, classes = [], []
    if _any_quick(data):
        parts.append(f"<p class='caveat'><strong>{esc(QUICK_CAVEAT)}</strong></p>")
        columns = ("paper", "recorded full run", "this quick run", "time (s)")
        for e in data["experiments"]:
            text, cls = _quick_text(e) if e["quick"] else (_counts_text(_claims(e)),
                                                           _css_class(_experiment_verdict(e)))
            rows.append([f"<a href='#{_anchor(e['slug'])}'>{esc(e['slug'])}</a>",
                         f"<span class='{_recorded_class(data, e['slug'])}'>"
                         f"{esc(_recorded_text(data, e['slug']))}</span>",
                         esc(text), f"{e['seconds']:.1f}"])
            classes.append(cls)
    else:
        columns = ("paper", "mode", "claims", "verdict", "time (s)")
        for e in data["experiments"]:
            verdict = _experiment_verdict(e)
            rows.append([f"<a href='#{_anchor(e['slug'])}'>{esc(e['slug'])}</a>", _mode(e),
                         esc(_counts_text(_claims(e))), verdict, f"{e['seconds']:.1f}"])
            classes.append(_css_class(verdict))
    head = "".join(f"<th>{c}</th>" for c in columns)
    body = "".join(f"<tr class='{cls}'>" + "".join(
        (_NUM_TD if k == len(columns) - 1 else "<td>") + f"{v}</td>" for k, v in enumerate(row))
        + "</tr>" for row, cls in zip(rows, classes))
    parts.append(f"<div class='scroll'><table><thead><tr>{head}</tr></thead>"
                 f"<tbody>{body}</tbody></table></div>")
    failed = _failed_names(data)
    if failed:
        parts.append("<p>Claims that did not pass:</p><ul>" + "".join(
            f"<li><a href='#{_anchor(slug)}'>{esc(slug)}</a>: {esc(name)} "
            f"<span class='{_css_class(v)}'>{v}</span></li>" for slug, name, v in failed) + "</ul>")
    parts.append("<h2 id='what-was-run'>What was run</h2><dl class='run'>" + "".join(
        f"<dt>{esc(label)}</dt><dd>" + (f"<code>{esc(text)}</code>" if label == "command"
                                        else esc(text)) + "</dd>"
        for label, text in _run_lines(data)) + "</dl>")
    n_fig = 0
    for e in data["experiments"]:
        claims_text = _quick_text(e)[0] if e["quick"] else _counts_text(_claims(e))
        parts.append(f"<h2 class='paper' id='{_anchor(e['slug'])}'>{esc(e['slug'])}: "
                     f"{esc(e['title'])}</h2>"
                     f"<p>Mode: {_mode(e)} · wall time {e['seconds']:.1f} s{_cpu_text(e)} · "
                     f"claims {esc(claims_text)}</p>")
        if e["quick"]:
            parts.append(f"<p>Recorded full run: {esc(_recorded_text(data, e['slug']))}</p>")
        for p in e["parts"]:
            parts.append(f"<h3 class='part' id='{_anchor(e['slug'], p['part'])}'>"
                         f"{esc(e['slug'])} · {esc(p['part'])}</h3>"
                         f"<p>Seeds {esc(str(p['seeds']))} · {p['seconds']:.1f} s of compute"
                         f"{_cpu_text(p)}</p>")
            if p["claims"]:
                parts.append(_html_table(_CLAIM_COLUMNS, _claim_rows(p, e["quick"]),
                                         [_css_class(_shown(c, e["quick"]))
                                          for c in p["claims"]]))
            warned = _warning_lines(p)
            if warned:
                parts.append(f"<details><summary>{len(warned)} distinct warning(s) collected in "
                             f"this part</summary><ul>" + "".join(
                                 f"<li><code>{esc(w)}</code></li>" for w in warned)
                             + "</ul></details>")
            for name, fname in p["figures"].items():
                png = out_dir / fname
                if png.is_file():
                    n_fig += 1
                    caption = figure_caption(name, e["slug"], p["part"])
                    b64 = base64.b64encode(png.read_bytes()).decode("ascii")
                    parts.append(f"<figure><img alt='{esc(caption)}' "
                                 f"src='data:image/png;base64,{b64}'><figcaption>Figure {n_fig}. "
                                 f"{esc(caption)}</figcaption></figure>")
            for note in p["notes"]:
                parts.append(f"<blockquote>{esc(note)}</blockquote>")
            for name, t in p["tables"].items():
                table = _html_table(t["columns"], t["rows"])
                if len(t["rows"]) > LONG_TABLE_ROWS:
                    parts.append(f"<details class='table'><summary>{esc(name)} "
                                 f"({len(t['rows'])} rows)</summary>{table}</details>")
                else:
                    parts.append(f"<h4>{esc(name)}</h4>" + table)
            for j in _failed_jobs(p):
                parts.append(f"<p class='fail'>job seed {j['seed']} task "
                             f"{esc(str(j['task']))} failed:</p><pre>{esc(j['error'])}</pre>")
            if p.get("summarize_error"):
                parts.append(f"<p class='fail'>summarize raised:</p>"
                             f"<pre>{esc(p['summarize_error'])}</pre>")
            parts.append(f"<details><summary>config</summary><pre>"
                         f"{esc(json.dumps(p['config'], indent=1))}</pre></details>")
    parts.append("</main></body></html>")
    return "\n".join(parts)
