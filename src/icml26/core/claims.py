"""Claims as data: each method's claim table, read without importing the method.

A method folder declares its claims in ``claims.toml`` next to its ``experiment.py``. The
table says, for every claim, which measurement decides it, against which bar, of which kind,
and against which controls; a part's ``summarize`` only *measures*
(``Result(measurements={...})``) and the core builds the verdicts from the table
(:func:`evaluate`), so a bar is found by reading the table, never the code, and ``icml26
list`` reads the tables with :mod:`tomllib` (no torch, no method imported).

The file::

    title = "Depth over Fidelity in Fixed-Budget Noisy Evolution Strategies"
    reference = "…"
    headline = "E1/win_rbpem_vs_sepcma"        # the abstract's main claim (a paper claim)
    summary = ["RB-PEM beats sep-CMA-ES …"]     # the paper's claims in words

    [parts.E1]
    default = true                              # run by `icml26 run SLUG`; false: opt-in
    description = "BBOB noisy suite, fixed budget"

    [[claim]]
    id = "E1/win_rbpem_vs_sepcma"               # <part>/<measurement key>
    name = "E1 RB-PEM win rate vs sep-CMA-ES"   # what the reports show
    paper = "RB-PEM wins most paired runs"      # the paper's statement or number
    kind = "paper"                              # paper | check | control
    bar = [">=", 0.62]                          # [">=", x] | ["<=", x] | ["between", lo, hi] | ["true"]
    negative_control = "win_hard_vs_sepcma"     # a trivial stand-in's measurement: same bar
    competitor = "win_sepcma_tuned"             # the strongest obvious competitor, reported
    requires = ["E1/control_planted"]           # claims of the same part that must PASS first
    known_negative = "…"                        # a negative with a known reason (like xfail)
    no_positive_control = "…"                   # why nothing can show the world has the effect:
                                                # a FAIL then reads INCOMPLETE with this reason
    quick = false                               # is the bar meaningful at quick scale?
    alt = { spec = [">=", 0.7] }                # other bars (the spec's, the old rule), shown

Kinds: a **paper** claim is what the paper says, and only paper claims count toward a
method's reproduction verdict; an **implementation check** (identities, enforced caps, our
own derived bounds) and a **world or protocol check** (planted positive and negative
controls, harness self-tests) are reported beside them.

Verdicts, in the order they are decided:

``INCOMPLETE``
    the measurement is missing, marked incomplete by ``summarize``
    (``Measurement(..., incomplete="why")``), or a claim it ``requires`` did not pass; or
    the claim would FAIL but its table says ``no_positive_control`` (nothing can show that
    the world has the effect, so a FAIL would say nothing);
``INCONCLUSIVE``
    the measurement carries an interval (``Measurement(value, interval=(lo, hi))``) that
    straddles the bar;
``FAIL``
    the value (or the whole interval) is on the wrong side of the bar, or is not finite;
``NOT EARNED``
    the value clears the bar but so does the negative control: the trivial stand-in would
    pass it too, so the claim holds by construction, not because of the method;
``PASS``
    otherwise.

A bar with an interval reads PASS only when the whole interval clears it, FAIL when the
whole interval lies on the wrong side, INCONCLUSIVE otherwise. A negative control is judged
by the same rule: a control with an interval makes a passing claim NOT EARNED when its whole
interval meets the bar, INCONCLUSIVE when its interval straddles the bar (the data cannot
tell whether the stand-in would pass), and lets the PASS stand only when its whole interval
lies on the wrong side; a control without an interval is judged on its value.

Examples
--------
>>> table = parse_table({
...     "title": "Toy", "headline": "main/gain",
...     "parts": {"main": {"description": "a toy"}},
...     "claim": [{"id": "main/gain", "name": "gain", "paper": "> 0", "bar": [">=", 0.1],
...                "negative_control": "gain_random"}]}, slug="toy")
>>> [c.verdict for c in evaluate(table.for_part("main"), {"gain": 0.3, "gain_random": 0.0})]
['PASS']
>>> [c.verdict for c in evaluate(table.for_part("main"), {"gain": 0.3, "gain_random": 0.2})]
['NOT EARNED']
>>> m = Measurement(0.3, interval=(0.05, 0.55))
>>> [c.verdict for c in evaluate(table.for_part("main"), {"gain": m, "gain_random": 0.0})]
['INCONCLUSIVE']
>>> ctrl = Measurement(0.02, interval=(-0.05, 0.12))
>>> [c.verdict for c in evaluate(table.for_part("main"), {"gain": 0.3, "gain_random": ctrl})]
['INCONCLUSIVE']
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["TABLE_FILE", "KINDS", "VERDICTS", "Bar", "ClaimSpec", "PartSpec", "ClaimTable",
           "Measurement", "TableError", "load_table", "parse_table", "evaluate"]

TABLE_FILE = "claims.toml"
KINDS = {"paper": "paper claim", "check": "implementation check",
         "control": "world or protocol check"}
VERDICTS = ("PASS", "FAIL", "NOT EARNED", "INCONCLUSIVE", "INCOMPLETE")
_OPS = {">=": 1, "<=": 1, "between": 2, "true": 0}


class TableError(ValueError):
    """A claim table that does not parse or is inconsistent (names the file and the entry)."""


def _num(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def fmt_number(value: Any) -> str:
    """The project's short number format (4 significant digits, 3 in scientific form)."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f"{value:.3g}"
        return f"{value:.4g}"
    return str(value)


@dataclass(frozen=True)
class Bar:
    """An acceptance bar: ``>= low``, ``<= high``, ``low <= x <= high`` or ``x is True``.

    ``text`` overrides how the bar is shown (for a ``true`` bar that checks a compound
    condition, say what the condition is).
    """

    op: str
    low: float | None = None
    high: float | None = None
    text: str | None = None

    @classmethod
    def parse(cls, value: Any, where: str, text: str | None = None) -> "Bar":
        if not isinstance(value, (list, tuple)) or not value or value[0] not in _OPS:
            raise TableError(f"{where}: bar must be [\">=\", x], [\"<=\", x], "
                             f"[\"between\", lo, hi] or [\"true\"], got {value!r}")
        op, args = value[0], list(value[1:])
        if len(args) != _OPS[op] or any(_num(a) is None or isinstance(a, bool) for a in args):
            raise TableError(f"{where}: bar {value!r}: {op!r} takes {_OPS[op]} finite number(s)")
        args = [float(a) for a in args]
        if op == ">=":
            return cls(op, low=args[0], text=text)
        if op == "<=":
            return cls(op, high=args[0], text=text)
        if op == "between":
            if args[0] > args[1]:
                raise TableError(f"{where}: bar {value!r}: low > high")
            return cls(op, low=args[0], high=args[1], text=text)
        if text is None:
            raise TableError(f"{where}: a [\"true\"] bar needs bar_text saying what is checked")
        return cls(op, text=text)

    def __str__(self) -> str:
        if self.text is not None:
            return self.text
        if self.op == ">=":
            return f"≥ {fmt_number(self.low)}"
        if self.op == "<=":
            return f"≤ {fmt_number(self.high)}"
        return f"∈ [{fmt_number(self.low)}, {fmt_number(self.high)}]"

    def holds(self, value: Any) -> bool:
        """Whether a point value meets the bar (a non-finite or missing value never does)."""
        if self.op == "true":
            return value is True
        x = _num(value)
        if x is None:
            return False
        if self.op == ">=":
            return x >= self.low
        if self.op == "<=":
            return x <= self.high
        return self.low <= x <= self.high

    def interval_verdict(self, low: float, high: float) -> str:
        """PASS when the whole interval meets the bar, FAIL when none of it does,
        INCONCLUSIVE otherwise."""
        if self.op == "true":
            raise TableError("a [\"true\"] bar cannot be decided by an interval")
        if self.holds(low) and self.holds(high):
            return "PASS"
        if self.op == ">=" and high < self.low or self.op == "<=" and low > self.high:
            return "FAIL"
        if self.op == "between" and (high < self.low or low > self.high):
            return "FAIL"
        return "INCONCLUSIVE"


@dataclass(frozen=True)
class ClaimSpec:
    """One row of a claim table (see the module docstring for the fields)."""

    id: str
    name: str
    paper: str
    bar: Bar
    kind: str = "paper"
    negative_control: str | None = None
    competitor: str | None = None
    requires: tuple = ()
    known_negative: str = ""
    quick: bool = False
    alt: tuple = ()  # ((label, Bar), ...)
    note: str = ""
    no_positive_control: str = ""

    @property
    def part(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def key(self) -> str:
        """The measurement key ``summarize`` returns for this claim."""
        return self.id.split("/", 1)[1]


@dataclass(frozen=True)
class PartSpec:
    name: str
    default: bool = True
    description: str = ""


@dataclass(frozen=True)
class ClaimTable:
    """A method's parsed ``claims.toml``."""

    slug: str
    title: str
    parts: dict
    claims: tuple
    headline: str | None = None
    reference: str = ""
    summary: tuple = ()
    source: str = ""

    def for_part(self, part: str) -> list:
        """The claim specs of one part, in table order."""
        return [c for c in self.claims if c.part == part]

    def claim(self, claim_id: str) -> ClaimSpec:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise KeyError(claim_id)

    @property
    def headline_spec(self) -> ClaimSpec | None:
        return None if self.headline is None else self.claim(self.headline)


_TOP_KEYS = {"title", "reference", "headline", "summary", "parts", "claim"}
_PART_KEYS = {"default", "description"}
_CLAIM_KEYS = {"id", "name", "paper", "bar", "bar_text", "kind", "negative_control",
               "competitor", "requires", "known_negative", "quick", "alt", "note", "no_positive_control"}


def _unknown(keys, allowed, where: str) -> None:
    extra = sorted(set(keys) - allowed)
    if extra:
        raise TableError(f"{where}: unknown key(s) {', '.join(extra)}; allowed: "
                         f"{', '.join(sorted(allowed))}")


def _str(entry: Mapping, key: str, where: str, default: str | None = None) -> str:
    value = entry.get(key, default)
    if not isinstance(value, str):
        raise TableError(f"{where}: {key} must be a string, got {value!r}")
    return value


def parse_table(data: Mapping, slug: str, source: str = "<table>") -> ClaimTable:
    """Validate a parsed ``claims.toml`` and build its :class:`ClaimTable`.

    Raises :class:`TableError` naming the file and the entry: unknown keys, a bad bar or
    kind, a claim id that is not ``<declared part>/<key>`` or is repeated, a ``requires``
    that is not an earlier claim of the same part, a headline that is not a paper claim.
    """
    _unknown(data, _TOP_KEYS, source)
    title = _str(data, "title", source)
    parts_raw = data.get("parts", {})
    if not isinstance(parts_raw, Mapping) or not parts_raw:
        raise TableError(f"{source}: [parts.NAME] tables are required (one per part)")
    parts = {}
    for name, entry in parts_raw.items():
        where = f"{source} [parts.{name}]"
        if not isinstance(entry, Mapping):
            raise TableError(f"{where}: must be a table")
        _unknown(entry, _PART_KEYS, where)
        default = entry.get("default", True)
        if not isinstance(default, bool):
            raise TableError(f"{where}: default must be true or false, got {default!r}")
        parts[name] = PartSpec(name, default, _str(entry, "description", where, ""))
    claims, seen = [], {}
    for i, entry in enumerate(data.get("claim", [])):
        where = f"{source} claim #{i + 1}"
        if not isinstance(entry, Mapping):
            raise TableError(f"{where}: must be a table")
        _unknown(entry, _CLAIM_KEYS, where)
        cid = _str(entry, "id", where)
        where = f"{source} claim {cid!r}"
        part, sep, key = cid.partition("/")
        if not sep or not key or part not in parts:
            raise TableError(f"{where}: id must be '<part>/<measurement key>' with a part "
                             f"declared under [parts]; parts: {', '.join(parts)}")
        if cid in seen:
            raise TableError(f"{where}: repeated id")
        kind = entry.get("kind", "paper")
        if kind not in KINDS:
            raise TableError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        bar_text = entry.get("bar_text")
        if bar_text is not None and not isinstance(bar_text, str):
            raise TableError(f"{where}: bar_text must be a string")
        bar = Bar.parse(entry.get("bar"), where, bar_text)
        requires = entry.get("requires", [])
        if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
            raise TableError(f"{where}: requires must be a list of claim ids")
        for req in requires:
            if req not in seen or seen[req].part != part:
                raise TableError(f"{where}: requires {req!r}, which is not an earlier claim "
                                 f"of part {part!r}")
        alt_raw = entry.get("alt", {})
        if not isinstance(alt_raw, Mapping):
            raise TableError(f"{where}: alt must be a table of label = bar")
        alt = tuple((label, Bar.parse(value, f"{where} alt.{label}"))
                    for label, value in alt_raw.items())
        quick = entry.get("quick", False)
        if not isinstance(quick, bool):
            raise TableError(f"{where}: quick must be true or false")
        for ref in ("negative_control", "competitor"):
            value = entry.get(ref)
            if value is not None and (not isinstance(value, str) or "/" in value):
                raise TableError(f"{where}: {ref} must be a measurement key of part "
                                 f"{part!r} (no '/'), got {value!r}")
        spec = ClaimSpec(id=cid, name=_str(entry, "name", where, key),
                         paper=_str(entry, "paper", where, ""), bar=bar, kind=kind,
                         negative_control=entry.get("negative_control"),
                         competitor=entry.get("competitor"), requires=tuple(requires),
                         known_negative=_str(entry, "known_negative", where, ""),
                         quick=quick, alt=alt, note=_str(entry, "note", where, ""),
                         no_positive_control=_str(entry, "no_positive_control", where, ""))
        if spec.known_negative and kind != "paper":
            raise TableError(f"{where}: known_negative is for paper claims")
        seen[cid] = spec
        claims.append(spec)
    names = [c.name for c in claims]
    for name in names:
        if names.count(name) > 1:
            raise TableError(f"{source}: claim name {name!r} is used twice")
    headline = data.get("headline")
    if headline is not None:
        if headline not in seen:
            raise TableError(f"{source}: headline {headline!r} is not a claim id")
        if seen[headline].kind != "paper":
            raise TableError(f"{source}: headline {headline!r} must be a paper claim")
    summary = data.get("summary", [])
    if not isinstance(summary, list) or not all(isinstance(s, str) for s in summary):
        raise TableError(f"{source}: summary must be a list of strings")
    return ClaimTable(slug=slug, title=title, parts=parts, claims=tuple(claims),
                      headline=headline, reference=_str(data, "reference", source, ""),
                      summary=tuple(summary), source=source)


def table_path(slug: str, root: Path | None = None) -> Path:
    from .catalog import package_root

    return (package_root() if root is None else Path(root)) / slug / TABLE_FILE


def load_table(slug: str, root: Path | None = None) -> ClaimTable | None:
    """The parsed claim table of ``slug`` (None when the folder has no ``claims.toml``)."""
    path = table_path(slug, root)
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TableError(f"{path}: {exc}") from None
    return parse_table(data, slug, str(path))


@dataclass
class Measurement:
    """A measured value with what the verdict needs beyond the number.

    Parameters
    ----------
    value : float or bool or str
        The measurement (a bool for a ``["true"]`` bar).
    interval : (float, float), optional
        A confidence interval for ``value`` (paired bootstrap, exact, t): the verdict is
        then PASS / FAIL / INCONCLUSIVE from the interval.
    incomplete : str, optional
        Why the measurement is not finished (the claim reads INCOMPLETE with this reason).
    note : str, optional
        What a reader needs to interpret the number.
    """

    value: Any
    interval: tuple | None = None
    incomplete: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if hasattr(self.value, "item") and callable(self.value.item):
            self.value = self.value.item()
        if self.interval is not None:
            lo, hi = (_num(v) for v in self.interval)
            if lo is None or hi is None:
                self.interval = None
                self.incomplete = self.incomplete or "the interval is not finite"
            elif lo > hi:
                raise ValueError(f"interval must be (low, high) with low <= high, "
                                 f"got {self.interval!r}")
            else:
                self.interval = (lo, hi)


def _as_measurement(value: Any) -> Measurement:
    return value if isinstance(value, Measurement) else Measurement(value)


def _bar_verdict(bar: Bar, m: Measurement) -> str:
    """How a measurement fares against a bar (a negative control against the claim's bar, the
    claim against an alternative bar): from its interval where it has one (PASS / FAIL /
    INCONCLUSIVE), else from its value; INCOMPLETE when it is missing."""
    if m.value is None:
        return "INCOMPLETE"
    if m.interval is not None and bar.op != "true":
        return bar.interval_verdict(*m.interval)
    return "PASS" if bar.holds(m.value) else "FAIL"


def evaluate(specs: Sequence[ClaimSpec], measurements: Mapping[str, Any]) -> list:
    """Build the :class:`~icml26.core.experiment.Claim` of each spec from a part's
    measurements (keys as in the specs' ids; values plain or :class:`Measurement`)."""
    from .experiment import Claim

    out, by_id = [], {}
    for spec in specs:
        m = _as_measurement(measurements.get(spec.key, Measurement(None, incomplete="not measured")))
        notes = [n for n in (spec.note, m.note) if n]
        claim = Claim(spec.name, spec.paper, m.value, str(spec.bar), False, id=spec.id,
                      kind=spec.kind, interval=m.interval, known_negative=spec.known_negative,
                      quick_meaningful=spec.quick)
        failed_reqs = [r for r in spec.requires if by_id[r].verdict != "PASS"]
        if m.incomplete or failed_reqs:
            claim.incomplete = True
            if failed_reqs:
                notes.append("precondition not met: " + "; ".join(
                    f"{by_id[r].name} ({by_id[r].verdict})" for r in failed_reqs))
            if m.incomplete:
                notes.append(m.incomplete)
        elif m.interval is not None and spec.bar.op != "true":
            verdict = spec.bar.interval_verdict(*m.interval)
            claim.passed = verdict == "PASS"
            claim.inconclusive = verdict == "INCONCLUSIVE"
        else:
            claim.passed = spec.bar.holds(m.value)
        if spec.no_positive_control and not (claim.incomplete or claim.passed or claim.inconclusive):
            # before a FAIL, a positive control must show the world can exhibit the effect
            claim.incomplete = True
            notes.append(f"fails the bar, but a FAIL needs a positive control and there is none: "
                         f"{spec.no_positive_control}")
        if spec.competitor is not None:
            comp = _as_measurement(measurements.get(spec.competitor, Measurement(None)))
            claim.competitor = {"key": spec.competitor, "measured": comp.value,
                                "interval": comp.interval}
        if spec.negative_control is not None:
            ctrl = _as_measurement(measurements.get(spec.negative_control, Measurement(None)))
            ctrl_verdict = _bar_verdict(spec.bar, ctrl)
            claim.control = {"key": spec.negative_control, "measured": ctrl.value,
                             "interval": ctrl.interval, "meets_bar": ctrl_verdict == "PASS",
                             "verdict": ctrl_verdict}
            where = (f"{spec.negative_control} = {fmt_number(ctrl.value)}"
                     + (f" [{fmt_number(ctrl.interval[0])}, {fmt_number(ctrl.interval[1])}]"
                        if ctrl.interval is not None else ""))
            if ctrl.value is None and claim.passed:
                claim.passed, claim.incomplete = False, True
                notes.append(f"negative control {spec.negative_control!r} not measured")
            elif ctrl_verdict == "PASS" and claim.passed:
                claim.passed, claim.not_earned = False, True
                notes.append(f"not earned: the negative control ({where}) meets the bar too")
            elif ctrl_verdict == "INCONCLUSIVE" and claim.passed:
                claim.passed, claim.inconclusive = False, True
                notes.append(f"inconclusive: the negative control's interval ({where}) "
                             "straddles the bar, so the data cannot say the stand-in fails it")
        claim.alt = [{"label": label, "bar": str(bar),
                      "verdict": "INCOMPLETE" if m.incomplete else _bar_verdict(bar, m)}
                     for label, bar in spec.alt]
        claim.note = " · ".join(notes)
        claim.__post_init__()
        by_id[spec.id] = claim
        out.append(claim)
    return out
