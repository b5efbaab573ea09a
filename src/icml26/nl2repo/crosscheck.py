"""Reading the live report stream and cross-checking it with JUnit XML and pytest's summary.

The harness's plugin (:mod:`icml26.nl2repo._reporter_plugin`) sends every report over a pipe
while the tests run. The stream is the score's source. Two records written later by the same
process -- the JUnit XML file and the terminal summary line (``3 failed, 46 passed, 1 error
in 0.20s``) -- must agree with it exactly: a result file edited after the fact, or an outcome
changed on one path and not the other, shows up as a disagreement, which scores 0 and is
flagged ``forgery``.

References
----------
Our resolution of the forgery audit of the NL2Repo-Bench harness (not from the paper).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["StreamReader", "Stream", "read_stream", "parse_summary", "SUMMARY_KEYS", "RANK"]

STREAM_CAP_BYTES = 256 << 20
SUMMARY_KEYS = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
_SUMMARY = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+|no tests ran) in [0-9.]+s(?: \([^)]*\))?\s*=*$")
_WORD = {"errors": "error", "warnings": "warning"}


class StreamReader:
    """Reads the read end of the report pipe in a thread, up to a cap."""

    def __init__(self, fd: int, cap: int = STREAM_CAP_BYTES):
        self.fd, self.cap = fd, cap
        self.buf = bytearray()
        self.overflow = False
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    break
                if len(self.buf) + len(chunk) > self.cap:
                    self.overflow = True
                    continue          # keep draining so the writer never blocks
                self.buf += chunk
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def value(self, timeout: float = 10.0) -> bytes:
        self.thread.join(timeout)
        return bytes(self.buf)


@dataclass
class Stream:
    """What the plugin reported, per node, and anything wrong with the stream itself."""

    outcomes: dict = field(default_factory=dict)      # node id -> worst outcome
    counts: Counter = field(default_factory=Counter)  # what pytest's summary line counts
    collected: list | None = None
    collection_errors: int = 0
    exitstatus: int | None = None
    started: bool = False
    ended: bool = False
    problems: list = field(default_factory=list)
    plugins: list = field(default_factory=list)        # (name, file) registered after the reporter
    hookimpls: set = field(default_factory=set)        # (plugin, code file, first line, function)
    worker_gone: tuple | None = None                   # (test it happened in, why) when the worker died


def _category(when: str, outcome: str, xfail: bool) -> str:
    """The summary category of one report, as pytest's terminal reporter counts it."""
    if when in ("setup", "teardown"):
        return {"failed": "error", "skipped": "skipped"}.get(outcome, "")
    if xfail:
        return {"skipped": "xfailed", "passed": "xpassed"}.get(outcome, outcome)
    return outcome


def _node_outcome(when: str, outcome: str) -> str:
    if outcome == "failed":
        return "failed" if when == "call" else "error"
    return outcome


def read_stream(data: bytes, overflow: bool = False) -> Stream:
    """Replay the plugin's events; protocol violations are listed in ``problems``."""
    out = Stream()
    if overflow:
        out.problems.append("stream_overflow")
    seen = set()
    collected_set: set = set()
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        if out.ended:
            out.problems.append("event_after_end")
            continue
        try:
            event = json.loads(raw)
            kind = event["ev"]
        except (ValueError, TypeError, KeyError):
            out.problems.append("malformed_line")
            continue
        if kind == "start":
            if out.started:
                out.problems.append("second_start")
            out.started = True
        elif kind == "collect":
            node, outcome = str(event.get("nodeid")), event.get("outcome")
            if ("collect", node) in seen or outcome not in ("failed", "skipped"):
                out.problems.append(f"bad_collect_report:{node}")
                continue
            seen.add(("collect", node))
            out.outcomes[node] = "error" if outcome == "failed" else "skipped"
            out.counts["error" if outcome == "failed" else "skipped"] += 1
            out.collection_errors += outcome == "failed"
        elif kind == "collected":
            if out.collected is not None or not isinstance(event.get("items"), list):
                out.problems.append("second_collection")
                continue
            out.collected = [str(i) for i in event["items"]]
            collected_set = set(out.collected)
        elif kind == "report":
            node, when, outcome = str(event.get("nodeid")), event.get("when"), event.get("outcome")
            if (when not in ("setup", "call", "teardown") or outcome not in ("passed", "failed", "skipped")
                    or (when != "call" and outcome == "passed")):
                out.problems.append(f"bad_report:{node}")
                continue
            if (node, when) in seen:
                out.problems.append(f"duplicate_report:{node}:{when}")
                continue
            if out.collected is None or node not in collected_set:
                out.problems.append(f"unknown_node:{node}")
                continue
            seen.add((node, when))
            category = _category(when, outcome, bool(event.get("xfail")))
            if category:
                out.counts[category] += 1
            new = _node_outcome(when, outcome)
            old = out.outcomes.get(node)
            if old is None or RANK[new] > RANK[old]:
                out.outcomes[node] = new
        elif kind == "plugin":
            out.plugins.append((str(event.get("name")), str(event.get("file"))))
        elif kind == "worker_gone":
            if out.worker_gone is None:
                out.worker_gone = (str(event.get("nodeid")), str(event.get("why"))[:300])
        elif kind == "hookimpl":
            out.hookimpls.add((str(event.get("plugin")), str(event.get("file")), event.get("line"),
                               str(event.get("func"))))
        elif kind == "finish":
            if out.exitstatus is not None:
                out.problems.append("second_finish")
            out.exitstatus = event.get("exitstatus")
        elif kind == "end":
            out.ended = True
        else:
            out.problems.append(f"unknown_event:{kind}")
    if out.ended and not out.started:
        out.problems.append("no_start")
    return out


def parse_summary(text: str) -> dict | None:
    """Counts of the last pytest summary line in ``text`` (``None`` when there is none).

    Examples
    --------
    >>> parse_summary("...\\n3 failed, 46 passed, 1 error in 0.20s\\n")["failed"]
    3
    >>> parse_summary("no tests ran in 0.01s")["passed"]
    0
    """
    for line in reversed(text.splitlines()):
        match = _SUMMARY.match(line.strip())
        if match:
            counts = {k: 0 for k in SUMMARY_KEYS}
            if match.group(1) != "no tests ran":
                for part in match.group(1).split(", "):
                    n, word = part.split(" ", 1)
                    word = _WORD.get(word, word)
                    if word in counts:
                        counts[word] = int(n)
            return counts
    return None
