"""Reports: ``results.json`` (every raw number), ``README.md`` and a self-contained
``index.html`` (claim tables coloured by verdict, figures embedded as PNG).

``write_report`` saves figures and ``results.json`` and then renders the two documents
*from* ``results.json``; ``render_report(DIR)`` re-renders an existing report the same
way, so both paths produce identical pages. Every file is written to a temporary name
and renamed into place, so an interrupted run never leaves a half-written file.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import os
import platform
import re
import tempfile
from pathlib import Path
from typing import Sequence

from .experiment import jsonable

__all__ = ["write_report", "render_report", "outcome_to_dict", "versions", "atomic_write_text"]


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def versions() -> dict:
    """Versions of Python and the numeric stack, for results.json."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("numpy", "scipy", "sklearn", "pandas", "torch", "icml26"):
        try:
            out[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 - a missing package is recorded as such
            out[name] = None
    return out


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "figure"


def _table_dict(frame) -> dict:
    frame = frame.reset_index(drop=not any(frame.index.names)) if frame.index.nlevels > 1 else frame
    return {"columns": [str(c) for c in frame.columns],
            "rows": jsonable(frame.astype(object).where(frame.notna(), None).values.tolist())}


def outcome_to_dict(outcome, out_dir: Path | None = None) -> dict:
    """Serialise an ExperimentOutcome; figures are saved as PNG into ``out_dir``."""
    import dataclasses

    import matplotlib.pyplot as plt

    parts = []
    for p in outcome.parts:
        figures = {}
        for name, fig in p.result.figures.items():
            if out_dir is not None:
                fname = _safe(f"{outcome.slug}__{p.part}__{name}") + ".png"
                fig.savefig(Path(out_dir) / fname, dpi=110, bbox_inches="tight")
                figures[name] = fname
            plt.close(fig)
        parts.append({
            "part": p.part,
            "config": jsonable(dataclasses.asdict(p.config)),
            "seeds": list(p.seeds),
            "seconds": p.seconds,
            "passed": p.passed,
            "claims": [c.to_dict() for c in p.result.claims],
            "tables": {k: _table_dict(v) for k, v in p.result.tables.items()},
            "figures": figures,
            "notes": list(p.result.notes),
            "summarize_error": p.summarize_error,
            "jobs": [{"seed": j.seed, "task": jsonable(j.task), "seconds": j.seconds,
                      "metrics": j.metrics, "error": j.error} for j in p.jobs],
        })
    return {"slug": outcome.slug, "title": outcome.title, "quick": outcome.quick,
            "seconds": outcome.seconds, "passed": outcome.passed, "parts": parts}


def write_report(outcomes: Sequence, out_dir: str | Path | None = None, *,
                 command: str = "") -> Path:
    """Write ``results.json``, ``README.md``, ``index.html`` and figure PNGs; return the folder."""
    if out_dir is None:
        stamp = _dt.datetime.now().strftime("%Y-%m-%d_%H%M%S")
        out_dir = Path("reports") / stamp
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "created": _dt.datetime.now().isoformat(timespec="seconds"),
        "command": command,
        "versions": versions(),
        "experiments": [outcome_to_dict(o, out_dir) for o in outcomes],
    }
    atomic_write_text(out_dir / "results.json", json.dumps(data, indent=1, allow_nan=False))
    render_report(out_dir)
    return out_dir


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


# -- rendering -----------------------------------------------------------------------

def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def _measured(claim: dict) -> str:
    v = claim["measured"]
    if isinstance(v, float):
        return f"{v:.4g}"
    return "n/a" if v is None else str(v)


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _md_table(columns, rows) -> str:
    def esc(s):
        return str(s).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(esc(c) for c in columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(esc(_cell(v)) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _failed_jobs(part: dict) -> list:
    return [j for j in part["jobs"] if j["error"]]


def _markdown(data: dict) -> str:
    out = ["# icml26 reproduction report", "",
           f"Created {data['created']}" + (f" by `{data['command']}`" if data.get("command") else ""),
           "", "Versions: " + ", ".join(f"{k} {v}" for k, v in data["versions"].items() if v), ""]
    out += ["| paper | mode | claims passed | verdict | time (s) |", "|---|---|---|---|---|"]
    for e in data["experiments"]:
        claims = [c for p in e["parts"] for c in p["claims"]]
        n_ok = sum(c["passed"] for c in claims)
        out.append(f"| {e['slug']} | {'quick' if e['quick'] else 'full'} | {n_ok}/{len(claims)} "
                   f"| {_verdict(e['passed'])} | {e['seconds']:.1f} |")
    for e in data["experiments"]:
        out += ["", f"## {e['slug']}: {e['title']}", "",
                f"Mode: {'quick' if e['quick'] else 'full'} · wall time {e['seconds']:.1f} s", ""]
        for p in e["parts"]:
            out += [f"### {p['part']}", "",
                    f"Seeds {p['seeds']} · {p['seconds']:.1f} s of compute", ""]
            out.append(_md_table(["claim", "paper", "measured", "bar", "verdict"],
                                 [[c["name"], c["paper"], _measured(c), c["bar"],
                                   _verdict(c["passed"])] for c in p["claims"]]))
            out.append("")
            for name, t in p["tables"].items():
                out += [f"**{name}**", "", _md_table(t["columns"], t["rows"]), ""]
            for name, fname in p["figures"].items():
                out += [f"![{name}]({fname})", ""]
            for note in p["notes"]:
                out += [f"> {note}", ""]
            failed = _failed_jobs(p)
            if failed:
                out += [f"**{len(failed)} job(s) failed:**", ""]
                for j in failed:
                    last = j["error"].strip().splitlines()[-1]
                    out.append(f"- seed {j['seed']} task {j['task']}: `{last}`")
                out.append("")
            if p.get("summarize_error"):
                out += ["**summarize raised:**", "", "```", p["summarize_error"], "```", ""]
    return "\n".join(out) + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.6em 0 1.2em}td,th{border:1px solid #ccc;padding:.25em .6em;
text-align:left;font-size:.92em}th{background:#f3f3f3}.pass{background:#dff5e1}.fail{background:#fbe0e0}
img{max-width:100%;border:1px solid #eee}blockquote{border-left:4px solid #999;margin:.5em 0;
padding:.2em .8em;background:#fafafa}pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:.8em}
"""


def _html_table(columns, rows, row_classes=None) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row)
                    + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _html(data: dict, out_dir: Path) -> str:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>icml26 report</title>"
             f"<style>{_CSS}</style></head><body><h1>icml26 reproduction report</h1>",
             f"<p>Created {html.escape(data['created'])}</p>"]
    rows, classes = [], []
    for e in data["experiments"]:
        claims = [c for p in e["parts"] for c in p["claims"]]
        rows.append([e["slug"], "quick" if e["quick"] else "full",
                     f"{sum(c['passed'] for c in claims)}/{len(claims)}",
                     _verdict(e["passed"]), f"{e['seconds']:.1f}"])
        classes.append("pass" if e["passed"] else "fail")
    parts.append(_html_table(["paper", "mode", "claims passed", "verdict", "time (s)"], rows,
                             classes))
    for e in data["experiments"]:
        parts.append(f"<h2 id='{html.escape(e['slug'])}'>{html.escape(e['slug'])}: "
                     f"{html.escape(e['title'])}</h2>")
        for p in e["parts"]:
            parts.append(f"<h3>{html.escape(p['part'])}</h3><p>Seeds {p['seeds']} · "
                         f"{p['seconds']:.1f} s of compute</p>")
            parts.append(_html_table(
                ["claim", "paper", "measured", "bar", "verdict"],
                [[c["name"], c["paper"], _measured(c), c["bar"], _verdict(c["passed"])]
                 for c in p["claims"]],
                ["pass" if c["passed"] else "fail" for c in p["claims"]]))
            for name, t in p["tables"].items():
                parts.append(f"<h4>{html.escape(name)}</h4>" + _html_table(t["columns"], t["rows"]))
            for name, fname in p["figures"].items():
                png = out_dir / fname
                if png.is_file():
                    b64 = base64.b64encode(png.read_bytes()).decode("ascii")
                    parts.append(f"<figure><img alt='{html.escape(name)}' "
                                 f"src='data:image/png;base64,{b64}'><figcaption>"
                                 f"{html.escape(name)}</figcaption></figure>")
            for note in p["notes"]:
                parts.append(f"<blockquote>{html.escape(note)}</blockquote>")
            for j in _failed_jobs(p):
                parts.append(f"<p class='fail'>job seed {j['seed']} task "
                             f"{html.escape(str(j['task']))} failed:</p>"
                             f"<pre>{html.escape(j['error'])}</pre>")
            if p.get("summarize_error"):
                parts.append(f"<p class='fail'>summarize raised:</p>"
                             f"<pre>{html.escape(p['summarize_error'])}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts)
