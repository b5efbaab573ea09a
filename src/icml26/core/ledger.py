"""The ledger of full-run verdicts: what each paper's full run measured, written by the run.

One pair of files per method folder, written by ``icml26 run SLUG --record`` (or
``icml26 ledger record REPORT_DIR`` from a finished full run's report), never by hand:

* ``ledger/<slug>/verdicts.json``: per part, every claim (id ``part/name``, the paper's
  value, measured value, bar, verdict, note), the seeds and the config, and the run that
  produced it (the command, the commit and whether the method folder had uncommitted
  changes, the date, wall and CPU seconds, the machine, package versions);
* ``ledger/<slug>/verdicts-jobs.json.gz``: every job's raw metrics.

The raw metrics make the ledger checkable without rerunning anything: :func:`check`
rebuilds each part's claims by calling its current ``summarize`` on the recorded jobs and
compares names, bars, measured values and verdicts with what was recorded. A changed bar, a
claim that is gone or new, a changed default config or seed list, or a summary that now
computes something else makes the entry *stale*; ``icml26 list`` says so, and
``tests/core/test_core_ledger.py`` fails until the part is run and recorded again.

When only the *reading* of the measurements changes (a core verdict rule, a negative
control or requirement added to a claim table) while every measured value stays,
``python -m icml26.core.ledger rederive SLUG --reason TEXT`` (:func:`rederive`) rewrites
the verdicts from the recorded jobs and keeps each change, with the reason, the date and
the commit, in the ledger's ``rederived`` list; it refuses when a measured value, a bar, a
config or a seed list changed, which need a new recorded run.

Method READMEs and the top-level README show the ledger in blocks between
``<!-- ledger:begin -->`` and ``<!-- ledger:end -->`` that ``python -m icml26.core.ledger
readme`` writes (``--check`` exits 1 when one is out of date; a test runs it).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import gzip
import hashlib
import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["LEDGER_FILE", "JOBS_FILE", "ledger_path", "load", "load_jobs", "ledger_hash",
           "record_report", "record_data", "check", "counts", "verdict_text", "headline_claim",
           "compare", "readme_block", "update_readmes", "git_provenance", "static_check",
           "ledger_root"]

LEDGER_FILE = "verdicts.json"
JOBS_FILE = "verdicts-jobs.json.gz"
BEGIN = "<!-- ledger:begin"
END = "<!-- ledger:end -->"
_ABOUT = ("Written by `icml26 run <slug> --record` (or `icml26 ledger record DIR`) from a full "
          "run; checked by `icml26 list` and the tests; do not edit by hand.")


class LedgerError(ValueError):
    """A report that cannot be recorded (quick, with --set, ...), or a ledger that is broken."""


def ledger_root() -> Path:
    """Where the ledgers live: ``$ICML26_LEDGER``, else ``ledger/`` at the top of the source
    checkout (outside the import path: records are not shipped in the wheel)."""
    from .catalog import package_root

    env = os.environ.get("ICML26_LEDGER")
    return Path(env) if env else package_root().parents[1] / "ledger"


def _root(root: Path | None) -> Path:
    return ledger_root() if root is None else Path(root)


def _pkg(root: Path | None) -> Path:
    from .catalog import package_root

    return package_root() if root is None else Path(root)


def ledger_path(slug: str, root: Path | None = None) -> Path:
    """``<ledger root>/<slug>/verdicts.json`` (see :func:`ledger_root`)."""
    return _root(root) / slug / LEDGER_FILE


def load(slug: str, root: Path | None = None) -> dict | None:
    """The recorded ledger of ``slug`` (None when it has none or it does not parse)."""
    try:
        data = json.loads(ledger_path(slug, root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("parts") else None


def load_jobs(slug: str, root: Path | None = None) -> dict:
    """The recorded jobs of ``slug`` by part name (empty when there are none)."""
    path = _root(root) / slug / JOBS_FILE
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError, EOFError):
        return {}


def ledger_hash(slug: str, root: Path | None = None) -> str | None:
    """SHA-256 of the two ledger files (None when there is no ledger)."""
    folder = _root(root) / slug
    if not (folder / LEDGER_FILE).is_file():
        return None
    digest = hashlib.sha256()
    for name in (LEDGER_FILE, JOBS_FILE):
        path = folder / name
        digest.update(name.encode() + b"\0")
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


# -- provenance -------------------------------------------------------------------------

def git_provenance(paths: Sequence[str | Path] = ()) -> dict:
    """``{"commit", "dirty"}`` of the checkout the package runs from (``None`` outside git).

    ``dirty`` lists the files under ``paths`` (default: the whole package) that differ from
    the commit, so a run made with uncommitted changes to its method says so.
    """
    src = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--", *map(str, paths or [src])],
                                cwd=src, capture_output=True, text=True, timeout=10,
                                check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    dirty = sorted(line[3:].strip() for line in status.splitlines() if line.strip())
    return {"commit": commit or None, "dirty": dirty}


# -- recording --------------------------------------------------------------------------

_OPTIONAL = ("interval", "control", "competitor", "known_negative", "alt")


def _claim_entry(part: str, claim: dict) -> dict:
    entry = {"id": claim.get("id") or f"{part}/{claim['name']}", "name": claim["name"],
             "paper": claim["paper"], "measured": claim["measured"], "bar": claim["bar"],
             "verdict": claim.get("verdict") or ("INCOMPLETE" if claim.get("incomplete")
                                                 else "PASS" if claim.get("passed") else "FAIL"),
             "note": claim.get("note", "")}
    if claim.get("kind", "paper") != "paper":
        entry["kind"] = claim["kind"]
    entry.update({k: claim[k] for k in _OPTIONAL if claim.get(k) not in (None, "", [], {})})
    return entry


def _check_recordable(data: dict, experiment: dict) -> None:
    inv = data.get("invocation") or {}
    slug = experiment["slug"]
    if experiment.get("quick"):
        raise LedgerError(f"{slug}: a quick run is a smoke check; the ledger records full runs")
    if inv.get("set"):
        raise LedgerError(f"{slug}: the run changed its config with --set {inv['set']}; the "
                          "ledger records the parts' own full configs")
    if inv.get("seeds") is not None:
        raise LedgerError(f"{slug}: the run chose --seeds {inv['seeds']}; the ledger records "
                          "the parts' own seeds")
    for part in experiment["parts"]:
        if any(j.get("error") for j in part["jobs"]) or part.get("summarize_error"):
            raise LedgerError(f"{slug}/{part['part']}: a job or summarize failed; fix it and "
                              "rerun before recording")


def record_data(data: dict, slug: str, *, root: Path | None = None) -> Path:
    """Merge the parts of ``slug`` from a report's ``results.json`` data into its ledger.

    Parts in the report replace the same parts in the ledger; other recorded parts stay.
    Raises :class:`LedgerError` for a quick run, a run with ``--set`` or ``--seeds``, a
    failed job, or a report without ``slug``.
    """
    from .experiment import get_experiment
    from .io import atomic_write_bytes, atomic_write_text

    found = [e for e in data.get("experiments", []) if e.get("slug") == slug]
    if not found:
        raise LedgerError(f"the report has no experiment {slug!r}")
    experiment = found[0]
    _check_recordable(data, experiment)
    exp = get_experiment(slug)
    defaults = {p.name: bool(p.default) for p in exp.parts}
    mine = (f"src/icml26/{slug}/", "src/icml26/core/", f"ledger/{slug}/")
    dirty = data.get("dirty")
    run = {"command": data.get("command", ""), "created": data.get("created"),
           "commit": data.get("commit"),
           "dirty": None if dirty is None else [d for d in dirty if d.startswith(mine)
                                                 and not d.endswith((LEDGER_FILE, JOBS_FILE))],
           "machine": data.get("machine"), "versions": data.get("versions"),
           "wall_seconds": experiment.get("seconds"),
           "cpu_seconds": experiment.get("cpu_seconds")}
    run_id = hashlib.sha256(json.dumps(run, sort_keys=True, default=str).encode()).hexdigest()[:12]
    old = load(slug, root) or {}
    parts = {p["part"]: p for p in old.get("parts", [])}
    runs = dict(old.get("runs", {}))
    jobs = load_jobs(slug, root)
    for part in experiment["parts"]:
        name = part["part"]
        if name not in defaults:
            raise LedgerError(f"{slug}: the experiment has no part {name!r} any more")
        parts[name] = {"part": name, "default": defaults[name], "run": run_id,
                       "seeds": part["seeds"], "config": part["config"],
                       "wall_seconds": part.get("seconds"),
                       "cpu_seconds": part.get("cpu_seconds"),
                       "claims": [_claim_entry(name, c) for c in part["claims"]],
                       "tables": part.get("tables", {}), "notes": part.get("notes", [])}
        jobs[name] = [{k: j.get(k) for k in ("seed", "task", "metrics", "seconds",
                                             "cpu_seconds")} for j in part["jobs"]]
    runs[run_id] = run
    order = [p.name for p in exp.parts]
    ordered = sorted(parts.values(), key=lambda p: order.index(p["part"])
                     if p["part"] in order else len(order))
    used = {p["run"] for p in ordered}
    ledger = {"about": _ABOUT, "slug": slug, "title": exp.title,
              "headline": _headline_id(exp, ordered),
              "runs": {k: v for k, v in runs.items() if k in used}, "parts": ordered}
    replaced = {p["part"] for p in experiment["parts"]}
    kept = [{**e, "changes": [c for c in e["changes"] if c.split("/", 1)[0] not in replaced]}
            for e in old.get("rederived", [])]
    if any(e["changes"] for e in kept):
        ledger["rederived"] = [e for e in kept if e["changes"]]
    folder = _root(root) / slug
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / LEDGER_FILE,
                      json.dumps(ledger, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:  # same bytes for same jobs
        gz.write(json.dumps({k: jobs[k] for k in sorted(jobs) if k in parts},
                            sort_keys=True, allow_nan=True).encode("utf-8"))
    atomic_write_bytes(folder / JOBS_FILE, buf.getvalue())
    return folder / LEDGER_FILE


def record_report(report_dir: str | Path, slugs: Sequence[str] | None = None, *,
                  root: Path | None = None) -> list[Path]:
    """Record every (or each named) experiment of the report in ``report_dir``."""
    source = Path(report_dir) / "results.json"
    if not source.is_file():
        raise LedgerError(f"{source} not found; expected a report folder written by icml26")
    data = json.loads(source.read_text(encoding="utf-8"))
    names = list(slugs) if slugs else [e["slug"] for e in data.get("experiments", [])]
    return [record_data(data, slug, root=root) for slug in names]


def _headline_id(exp, parts: list) -> str | None:
    """The recorded id of the experiment's headline claim; None when it declares none (a
    paper none of whose claims can be tested here, like nl2repo's)."""
    ids = [c["id"] for p in parts for c in p["claims"]]
    if exp.headline:
        for cid in ids:
            if cid.startswith(exp.headline) or cid.split("/", 1)[1].startswith(exp.headline):
                return cid
    return None


# -- reading ----------------------------------------------------------------------------

def _claims(ledger: dict, default_only: bool = True) -> list:
    return [c for p in ledger["parts"] if p["default"] or not default_only for c in p["claims"]]


def is_paper_claim(claim: dict) -> bool:
    """Whether a recorded claim counts toward the reproduction verdict (kind ``paper``)."""
    return claim.get("kind", "paper") == "paper"


def counts(ledger: dict, default_only: bool = True, kind: str = "paper") -> dict:
    """``{"PASS", "FAIL", "NOT EARNED", "INCONCLUSIVE", "INCOMPLETE", "known", "total"}``
    over the (default parts') claims of one kind (paper claims by default; ``"all"``).

    ``known`` counts the paper claims that did not pass and are declared known negatives.
    """
    out = {"PASS": 0, "FAIL": 0, "NOT EARNED": 0, "INCONCLUSIVE": 0, "INCOMPLETE": 0,
           "known": 0}
    claims = [c for c in _claims(ledger, default_only)
              if kind == "all" or c.get("kind", "paper") == kind]
    for c in claims:
        out[c["verdict"]] += 1
        out["known"] += bool(c.get("known_negative")) and c["verdict"] != "PASS"
    out["total"] = len(claims)
    return out


def verdict_text(ledger: dict | None, default_only: bool = True) -> str:
    """Paper claims: ``"18/18 pass"``, ``"10/14, 4 not reproduced (2 known)"``,
    ``"9/10, 1 inconclusive"``, ``"not recorded"``."""
    if not ledger:
        return "not recorded"
    n = counts(ledger, default_only)
    if not n["total"]:
        return "no paper claims"
    text = f"{n['PASS']}/{n['total']}"
    if n["PASS"] == n["total"]:
        return text + " pass"
    bad = n["FAIL"] + n["NOT EARNED"]
    if bad:
        text += f", {bad} not reproduced"
        bits = [f"{n['NOT EARNED']} not earned"] if n["NOT EARNED"] else []
        bits += [f"{n['known']} known"] if n["known"] else []
        text += f" ({', '.join(bits)})" if bits else ""
    if n["INCONCLUSIVE"]:
        text += f", {n['INCONCLUSIVE']} inconclusive"
    if n["INCOMPLETE"]:
        text += f", {n['INCOMPLETE']} incomplete"
    return text


def recorded_date(ledger: dict) -> str:
    """The date of the newest run recorded for the default parts (``YYYY-MM-DD``)."""
    runs = ledger.get("runs", {})
    dates = [str(runs.get(p["run"], {}).get("created") or "")[:10] for p in ledger["parts"]
             if p["default"]] or [""]
    return max(dates)


def headline_claim(ledger: dict, headline: str | None = None) -> dict | None:
    """The recorded headline claim: ``headline`` (a claim id from the method's claim table)
    when given, else the id recorded with the ledger (see :attr:`Experiment.headline`)."""
    wanted = headline or ledger.get("headline")
    for c in _claims(ledger, default_only=False):
        if c["id"] == wanted:
            return c
    return None


def _seconds(ledger: dict, key: str) -> float | None:
    values = [p.get(key) for p in ledger["parts"] if p["default"]]
    return None if any(v is None for v in values) else float(sum(values))


def run_seconds(ledger: dict) -> tuple[float | None, float | None]:
    """(wall, CPU) seconds of the recorded default parts' runs.

    Wall is the sum of each distinct run's wall time (parts recorded together share one);
    CPU is the sum over the default parts.
    """
    runs = ledger.get("runs", {})
    used = {p["run"] for p in ledger["parts"] if p["default"]}
    walls = [runs.get(r, {}).get("wall_seconds") for r in used]
    wall = None if not walls or any(w is None for w in walls) else float(sum(walls))
    return wall, _seconds(ledger, "cpu_seconds")


# -- checking against the current code --------------------------------------------------

def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        fa, fb = float(a), float(b)
        if math.isnan(fa) and math.isnan(fb):
            return True
        return math.isclose(fa, fb, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _config_diff(recorded: dict, current: dict) -> list[str]:
    out = []
    for key in sorted(set(recorded) | set(current)):
        if key not in current:
            out.append(f"config field {key!r} is gone")
        elif key not in recorded:
            out.append(f"new config field {key!r} = {current[key]!r}")
        elif not _same(recorded[key], current[key]):
            out.append(f"config {key}: {recorded[key]!r} → {current[key]!r}")
    return out


def _resummarize(exp, lp: dict, jobs: dict, dropped: frozenset = frozenset()):
    """Apply the part's current ``summarize`` to its recorded jobs.

    Returns ``(result, reasons)``: ``result`` is None, with the reasons, when the part is
    gone, its config or seeds changed (config fields in ``dropped`` may be gone), its jobs
    are missing or summarize raised.
    """
    from .experiment import ConfigError, JobResult, jsonable
    from .runner import _summarize, collect_warnings

    name = lp["part"]
    try:
        part = exp.part(name)
    except ConfigError:
        return None, [f"{name}: the part no longer exists"]
    current = jsonable(dataclasses.asdict(part.full))
    config_reasons = _config_diff({k: v for k, v in lp["config"].items() if k not in dropped}, current)
    config_reasons += [f"dropped config field {k!r} still exists" for k in sorted(dropped & set(current))]
    if config_reasons:
        return None, [f"{name}: {r}" for r in config_reasons]
    if list(lp["seeds"]) != list(part.default_seeds(False)):
        return None, [f"{name}: seeds {lp['seeds']} → {part.default_seeds(False)}"]
    if name not in jobs:
        return None, [f"{name}: the recorded jobs are missing ({JOBS_FILE})"]
    results = [JobResult(name, j["seed"], j["task"], j["metrics"], j.get("seconds") or 0.0,
                         cpu_seconds=j.get("cpu_seconds")) for j in jobs[name]]
    with collect_warnings():
        result, error = _summarize(part, results, part.full)
    _close(result)
    if error:
        return None, [f"{name}: summarize raised on the recorded jobs: "
                      f"{error.strip().splitlines()[-1]}"]
    return result, []


def _claim_diffs(name: str, then_claims: list, result, *, verdicts: bool = True) -> list[str]:
    from .experiment import jsonable

    now = {c.name: c for c in result.claims}
    then = {c["name"]: c for c in then_claims}
    reasons = [f"{name}: claim {c!r} is no longer produced" for c in then.keys() - now.keys()]
    reasons += [f"{name}: new claim {c!r}" for c in now.keys() - then.keys()]
    for cname in then.keys() & now.keys():
        old, new = then[cname], now[cname]
        if old["bar"] != new.bar:
            reasons.append(f"{name}: {cname!r} bar {old['bar']!r} → {new.bar!r}")
        elif old.get("kind", "paper") != new.kind:
            reasons.append(f"{name}: {cname!r} kind {old.get('kind', 'paper')} → {new.kind}")
        elif not _same(old["measured"], jsonable(new.measured)):
            reasons.append(f"{name}: {cname!r} measured {old['measured']!r} → "
                           f"{jsonable(new.measured)!r} from the same jobs")
        elif verdicts and old["verdict"] != new.verdict:
            reasons.append(f"{name}: {cname!r} verdict {old['verdict']} → {new.verdict}")
    return reasons


def rederive(slug: str, reason: str, root: Path | None = None) -> list[str]:
    """Re-derive ``slug``'s recorded verdicts from its recorded jobs with the current rules.

    For a change in how verdicts are read (a core rule, a control added to a claim's
    table), not in what is measured: every part must keep its config and seeds, and every
    claim its name, bar, kind and measured value, else this raises :class:`LedgerError`
    and the method needs a new recorded run. The verdicts, notes and controls are
    rewritten; each change is kept in the ledger's ``rederived`` list with ``reason``,
    the date and the commit. Returns the changes as ``"id: OLD → NEW"`` lines.
    """
    from .io import atomic_write_text

    ledger, exp, jobs = _open_recorded(slug, reason, root, "rederive needs a reason (what rule changed)")
    changes, parts = [], []
    for lp in ledger["parts"]:
        result, reasons = _resummarize(exp, lp, jobs)
        reasons = reasons or _claim_diffs(lp["part"], lp["claims"], result, verdicts=False)
        if reasons:
            raise LedgerError(f"{slug}: cannot re-derive without a new run: " + "; ".join(reasons))
        now = {c.name: _claim_entry(lp["part"], c.to_dict()) for c in result.claims}
        for c in lp["claims"]:
            new = now[c["name"]]
            if c["verdict"] != new["verdict"]:
                changes.append(f"{c['id']}: {c['verdict']} → {new['verdict']}")
            then_alt = {a["label"]: a["verdict"] for a in c.get("alt", [])}
            changes += [f"{c['id']} ({a['label']} bar): {then_alt[a['label']]} → {a['verdict']}"
                        for a in new.get("alt", [])
                        if a["label"] in then_alt and then_alt[a["label"]] != a["verdict"]]
        parts.append({**lp, "claims": [now[c["name"]] for c in lp["claims"]]})
    if changes:
        ledger["parts"] = parts
        ledger.setdefault("rederived", []).append(
            {"date": _dt.date.today().isoformat(), "commit": git_provenance().get("commit"),
             "reason": reason.strip(), "changes": changes})
        atomic_write_text(_root(root) / slug / LEDGER_FILE,
                          json.dumps(ledger, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    return changes


def _open_recorded(slug: str, reason: str, root: Path | None, missing_reason: str) -> tuple:
    """(ledger, experiment, recorded jobs) of ``slug``, for a re-derivation with ``reason``."""
    from .experiment import get_experiment

    if not reason or not reason.strip():
        raise LedgerError(missing_reason)
    ledger = load(slug, root)
    if ledger is None:
        raise LedgerError(f"{slug}: no ledger recorded")
    return ledger, get_experiment(slug), load_jobs(slug, root)


def migrate(slug: str, reason: str, *, dropped_config: Sequence[str] = (),
            root: Path | None = None) -> list[str]:
    """Re-derive ``slug``'s recorded parts from their recorded jobs after its claims moved
    into a claim table (claims as data): the claims' names, ids and kinds may change, the
    measurements may not.

    The same jobs (seeds, and every config field but those in ``dropped_config``: fields that
    only set a claim's bar, now in the table) are summarised by the current code. Each new
    claim is paired with the old claim of its part that had the same measured value; it
    raises :class:`LedgerError` when a recorded part's config or seeds changed otherwise, its
    jobs are missing, or a new claim with an old counterpart would change its verdict (a
    reading change is :func:`rederive`'s, a new measurement needs a run). The ledger keeps
    each renaming under ``rederived`` with ``reason``, the date and the commit. Returns the
    renamings as ``"old name (VERDICT) → new id (VERDICT)"`` lines.
    """
    from .experiment import jsonable
    from .io import atomic_write_text
    from .report import _table_dict

    ledger, exp, jobs = _open_recorded(slug, reason, root, "migrate needs a reason")
    dropped, lines, parts, problems = frozenset(dropped_config), [], [], []
    for lp in ledger["parts"]:
        name = lp["part"]
        result, why = _resummarize(exp, lp, jobs, dropped)
        if result is None:
            problems += why
            continue
        new = [_claim_entry(name, c.to_dict()) for c in result.claims]
        unused = list(lp["claims"])
        for claim in new:
            match = next((o for o in unused if _same(o["measured"], claim["measured"])
                          and o["measured"] is not None), None)
            if match is None:
                lines.append(f"{claim['id']}: new ({claim['verdict']})")
                continue
            unused.remove(match)
            if match["verdict"] != claim["verdict"]:
                problems.append(f"{claim['id']}: verdict {match['verdict']} → {claim['verdict']} "
                                f"(was {match['name']!r})")
            bars = "" if match["bar"] == claim["bar"] else f", bar {match['bar']} → {claim['bar']}"
            lines.append(f"{match['id']} ({match['verdict']}) → {claim['id']} ({claim['verdict']}{bars})")
        lines += [f"{o['id']} ({o['verdict']}): no longer a claim (measured {o['measured']!r})"
                  for o in unused]
        parts.append({**lp, "config": jsonable(dataclasses.asdict(exp.part(name).full)),
                      "claims": new, "notes": list(result.notes),
                      "tables": {k: _table_dict(v) for k, v in result.tables.items()}})
    if problems:
        raise LedgerError(f"{slug}: cannot migrate without a new run: " + "; ".join(problems))
    ledger["parts"] = parts
    ledger["headline"] = _headline_id(exp, parts)
    ledger.setdefault("rederived", []).append(
        {"date": _dt.date.today().isoformat(), "commit": git_provenance().get("commit"),
         "reason": reason.strip(), "changes": lines,
         **({"dropped_config": sorted(dropped)} if dropped else {})})
    atomic_write_text(_root(root) / slug / LEDGER_FILE,
                      json.dumps(ledger, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    return lines


def check(slug: str, root: Path | None = None) -> dict:
    """Whether ``slug``'s ledger still matches the code: ``{"current", "reasons", "parts"}``.

    For each recorded part: the part exists, its default full config and seeds are the
    recorded ones, and its current ``summarize`` applied to the recorded jobs gives the same
    claims (names, bars, measured values, verdicts). Imports the method; runs no job.
    """
    from .experiment import ConfigError, get_experiment

    ledger = load(slug, root)
    if ledger is None:
        return {"current": False, "reasons": ["no ledger recorded"], "parts": []}
    try:
        exp = get_experiment(slug)
    except ConfigError as exc:
        return {"current": False, "reasons": [f"the method does not import: {exc}"], "parts": []}
    jobs = load_jobs(slug, root)
    reasons, checked = [], []
    for lp in ledger["parts"]:
        result, why = _resummarize(exp, lp, jobs)
        if result is None:
            reasons += why
            continue
        reasons += _claim_diffs(lp["part"], lp["claims"], result)
        checked.append(lp["part"])
    return {"current": not reasons, "reasons": reasons, "parts": checked}


def static_check(slug: str, table, root: Path | None = None) -> dict:
    """Whether ``slug``'s ledger matches its claim table, without importing the method.

    Compares the recorded parts and claims (names, bars, kinds, default flags) with the
    table; the full check against the code (re-deriving every verdict from the recorded
    jobs) is :func:`check`. Returns ``{"hash", "current", "reasons"}``; ``current`` is None
    when nothing is recorded.
    """
    led = load(slug, root)
    if led is None:
        return {"hash": None, "current": None, "reasons": []}
    reasons = []
    recorded_parts = {p["part"] for p in led["parts"]}
    for lp in led["parts"]:
        name = lp["part"]
        spec = table.parts.get(name)
        if spec is None:
            reasons.append(f"{name}: the part is no longer in the claim table")
            continue
        if bool(lp["default"]) != spec.default:
            reasons.append(f"{name}: default {lp['default']} → {spec.default}")
        specs = {c.name: c for c in table.for_part(name)}
        then = {c["name"]: c for c in lp["claims"]}
        reasons += [f"{name}: claim {n!r} is no longer in the table" for n in then.keys() - specs.keys()]
        reasons += [f"{name}: new claim {n!r}" for n in specs.keys() - then.keys()]
        for n in then.keys() & specs.keys():
            if then[n]["bar"] != str(specs[n].bar):
                reasons.append(f"{name}: {n!r} bar {then[n]['bar']!r} → {str(specs[n].bar)!r}")
            elif then[n].get("kind", "paper") != specs[n].kind:
                reasons.append(f"{name}: {n!r} kind {then[n].get('kind', 'paper')} → {specs[n].kind}")
    reasons += [f"{p.name}: default part never recorded" for p in table.parts.values()
                if p.default and p.name not in recorded_parts]
    return {"hash": ledger_hash(slug, root), "current": not reasons, "reasons": reasons}


def _close(result) -> None:
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        for fig in result.figures.values():
            plt.close(fig)


# -- comparing a new run with the ledger (icml26 verify) --------------------------------

def compare(ledger: dict, experiment: dict) -> list[dict]:
    """Claim by claim: recorded vs new measured value and verdict, and whether it held.

    ``experiment`` is one experiment of a report's ``results.json``. Claims recorded for a
    part that was not rerun are left out; a recorded claim the new run lacks (or the reverse)
    is a row with ``held=False``.
    """
    rows = []
    new_parts = {p["part"]: p for p in experiment["parts"]}
    for lp in ledger["parts"]:
        np_ = new_parts.get(lp["part"])
        if np_ is None:
            continue
        new = {c["name"]: _claim_entry(lp["part"], c) for c in np_["claims"]}
        for c in lp["claims"]:
            n = new.pop(c["name"], None)
            rows.append({"id": c["id"], "bar": c["bar"], "recorded": c["measured"],
                         "recorded_verdict": c["verdict"],
                         "new": None if n is None else n["measured"],
                         "new_verdict": "missing" if n is None else n["verdict"],
                         "held": n is not None and n["verdict"] == c["verdict"]
                         and n["bar"] == c["bar"]})
        for n in new.values():
            rows.append({"id": n["id"], "bar": n["bar"], "recorded": None,
                         "recorded_verdict": "not recorded", "new": n["measured"],
                         "new_verdict": n["verdict"], "held": False})
    return rows


# -- README blocks -----------------------------------------------------------------------

def _fmt(value: Any) -> str:
    """:func:`icml26.core.claims.fmt_number`, with "—" for a missing or non-finite value."""
    from .claims import fmt_number

    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return fmt_number(value)


def _md(text: Any) -> str:
    return _fmt(text).replace("|", "\\|").replace("\n", " ")


def _run_line(run: dict, wall: float | None, cpu: float | None) -> str:
    m = run.get("machine") or {}
    bits = [f"`{run.get('command') or 'icml26 run'}`"]
    if run.get("commit"):
        bits.append(f"commit {run['commit'][:10]}" + (" (with uncommitted changes)"
                                                     if run.get("dirty") else ""))
    if run.get("created"):
        bits.append(str(run["created"])[:10])
    if wall is not None:
        bits.append(f"{wall:.0f} s wall")
    if cpu is not None:
        bits.append(f"{cpu:.0f} CPU-s")
    if m.get("cpu_count"):
        load = m.get("load_average")
        bits.append(f"{m['cpu_count']} cores" + (f", load {load[0]}" if load else ""))
    return ", ".join(bits)


def readme_block(ledger: dict | None, slug: str) -> str:
    """The generated Markdown block of a method README (between the ledger markers)."""
    head = (f"{BEGIN} (generated by `python -m icml26.core.ledger readme` from "
            f"`ledger/{slug}/{LEDGER_FILE}`; do not edit) -->")
    if not ledger:
        return "\n".join([head, "", "No full run recorded yet: `icml26 run "
                          f"{slug} --record` records one.", "", END])
    lines = [head, "", f"**Recorded full run: {verdict_text(ledger)}** (default parts)."]
    runs = ledger.get("runs", {})
    ids = list(runs)
    if len(ids) == 1:
        run = runs[ids[0]]
        lines += ["", "Run: " + _run_line(run, run.get("wall_seconds"), run.get("cpu_seconds"))
                  + "."]
    else:
        lines += [""] + [f"- run {i + 1}: " + _run_line(runs[r], runs[r].get("wall_seconds"),
                                                          runs[r].get("cpu_seconds"))
                         for i, r in enumerate(ids)]
    for lp in ledger["parts"]:
        job_s, cpu_s = lp.get("wall_seconds"), lp.get("cpu_seconds")
        cost = "" if job_s is None else f"; {job_s:.0f} s of job time"
        cost += "" if cpu_s is None else f", {cpu_s:.0f} CPU-s"
        which = "" if len(ids) == 1 else f" (run {ids.index(lp['run']) + 1})"
        lines += ["", f"*{lp['part']}*" + ("" if lp["default"] else " (opt-in)") + " — seeds "
                  f"{lp['seeds']}{cost}{which}",
                  "", "| claim | paper | measured | bar | verdict |", "|---|---|---|---|---|"]
        lines += [f"| {_md(c['name'])} | {_md(c['paper'])} | {_md(c['measured'])} | "
                  f"{_md(c['bar'])} | {c['verdict']} |" for c in lp["claims"]]
        for tname, table in (lp.get("tables") or {}).items():
            lines += ["", f"<details><summary>{lp['part']} · {_md(tname)} "
                      f"({len(table['rows'])} rows)</summary>", "",
                      "| " + " | ".join(_md(c) for c in table["columns"]) + " |",
                      "|" + "---|" * len(table["columns"])]
            lines += ["| " + " | ".join(_md(v) for v in row) + " |" for row in table["rows"]]
            lines += ["", "</details>"]
    lines += ["", END]
    return "\n".join(lines)


def summary_block(root: Path | None = None) -> str:
    """The generated methods table of the top-level README: one row per paper, from the
    ledgers and claim tables (the only status the front page shows)."""
    from .catalog import PAPERS, method_folders
    from .claims import TableError, load_table

    head = (f"{BEGIN} (generated by `python -m icml26.core.ledger readme` from each "
            f"`ledger/<slug>/{LEDGER_FILE}` and `claims.toml`; do not edit) -->")
    lines = [head, "", "| paper | headline claim | headline | paper claims (default parts) | "
             "checks | recorded | wall s | CPU s |", "|---|---|---|---|---|---|---:|---:|"]
    slugs = list(PAPERS) + sorted(set(method_folders(_pkg(root))) - set(PAPERS))
    for slug in slugs:
        link = f"[{slug}](src/icml26/{slug}/README.md)"
        try:
            table = load_table(slug, _pkg(root))
        except TableError:
            table = None
        ledger = load(slug, root)
        spec = table.headline_spec if table is not None else None
        claim_text = spec.name if spec is not None else ""
        if ledger is None:
            lines.append(f"| {link} | {_md(claim_text)} | — | not recorded | | | | |")
            continue
        head_claim = headline_claim(ledger, table.headline if table is not None else None)
        if head_claim is not None and not claim_text:
            claim_text = head_claim["name"]
        if head_claim is None and table is not None and not table.headline:
            claim_text = "— (no claim of the paper can be tested here)"
        verdict = "—" if head_claim is None else head_claim["verdict"] + (
            " (known)" if head_claim.get("known_negative") and head_claim["verdict"] != "PASS"
            else "")
        checks = [c for c in _claims(ledger) if not is_paper_claim(c)]
        check_text = (f"{sum(c['verdict'] == 'PASS' for c in checks)}/{len(checks)}"
                      if checks else "")
        wall, cpu = run_seconds(ledger)
        lines.append(f"| {link} | {_md(claim_text)} | {verdict} | {_md(verdict_text(ledger))} | "
                     f"{check_text} | {recorded_date(ledger)} | "
                     f"{_md(None if wall is None else round(wall))} | "
                     f"{_md(None if cpu is None else round(cpu))} |")
    lines += ["", "A paper claim is PASS, FAIL, NOT EARNED (a trivial stand-in clears the bar too), "
              "INCONCLUSIVE (its interval straddles the bar) or INCOMPLETE (a precondition or "
              "measurement is missing); *known* marks a negative with a stated reason. Checks are "
              "implementation and protocol checks, reported apart. Wall and CPU seconds are the "
              "recorded default run's, on the machine its ledger names.", "", END]
    return "\n".join(lines)


_BLOCK = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)


def _replace_block(text: str, block: str) -> str | None:
    if BEGIN not in text:
        return None
    return _BLOCK.sub(lambda _: block, text, count=1)


def update_readmes(root: Path | None = None, *, check_only: bool = False,
                   top: Path | None = None) -> tuple[list[Path], list[Path]]:
    """Rewrite the ledger blocks of every method README (and the top-level README).

    Returns (READMEs that changed or would change, READMEs without a ledger block).
    With ``check_only`` nothing is written.
    """
    from .catalog import method_folders
    from .io import atomic_write_text

    pkg = _pkg(root)
    changed, missing = [], []
    targets = [(pkg / slug / "README.md", readme_block(load(slug, root), slug))
               for slug in method_folders(pkg)]
    top = pkg.parents[1] / "README.md" if top is None else top
    if top.is_file():
        targets.append((top, summary_block(root)))
    for path, block in targets:
        if not path.is_file():
            missing.append(path)
            continue
        text = path.read_text(encoding="utf-8")
        new = _replace_block(text, block)
        if new is None:
            missing.append(path)
            continue
        if new != text:
            changed.append(path)
            if not check_only:
                atomic_write_text(path, new)
    return changed, missing


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    usage = ("usage: python -m icml26.core.ledger readme [--check]\n"
             "       python -m icml26.core.ledger rederive SLUG --reason TEXT\n"
             "       python -m icml26.core.ledger migrate SLUG --reason TEXT [--drop-config KEY ...]")
    if args[:1] == ["migrate"]:
        if len(args) < 4 or args[2] != "--reason" or (args[4:] and args[4] != "--drop-config"):
            print(usage)
            return 2
        try:
            lines = migrate(args[1], args[3], dropped_config=args[5:])
        except LedgerError as exc:
            print(exc)
            return 1
        print("\n".join(lines))
        return 0
    if args[:1] == ["rederive"]:
        if len(args) != 4 or args[2] != "--reason":
            print(usage)
            return 2
        try:
            changes = rederive(args[1], args[3])
        except LedgerError as exc:
            print(exc)
            return 1
        print("\n".join(changes) if changes else f"{args[1]}: no verdict changed")
        return 0
    if not args or args[0] != "readme" or args[1:] not in ([], ["--check"]):
        print(usage)
        return 2
    check_only = args[1:] == ["--check"]
    changed, missing = update_readmes(check_only=check_only)
    for path in missing:
        print(f"no ledger block in {path} (add `{BEGIN} -->` and `{END}` where the table goes)")
    if check_only:
        for path in changed:
            print(f"out of date: {path}")
        if changed:
            print("regenerate with: python -m icml26.core.ledger readme")
        return 1 if changed or missing else 0
    for path in changed:
        print(f"wrote {path}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
