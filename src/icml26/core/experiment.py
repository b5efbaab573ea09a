"""The types every reproduction uses: :class:`Experiment`, :class:`Part`, :class:`Claim`,
:class:`Result`, and the registry.

An *experiment* is one paper's reproduction. It holds one or more named *parts* (the
paper's E1, E2, "scaling", ...). A part has a ``quick`` and a ``full`` config (frozen
dataclasses), the seeds it runs by default, a function ``run(config, seed[, task]) ->
metrics`` that the runner can execute on any worker, and ``summarize(jobs, config) ->
Result`` that aggregates the per-job metrics into tables, figures and claims.

Registration happens when ``icml26.<slug>.experiment`` is imported; discovery imports
every method folder that has such a module, so there is no central list to edit.
(``icml26 list`` describes the methods from their claim tables without importing
them.)

Examples
--------
>>> from dataclasses import dataclass
>>> from icml26.core.experiment import Claim, Experiment, Part, Result
>>> @dataclass(frozen=True)
... class Config:
...     n: int = 10
>>> def run(config, seed):
...     return {"value": float(seed)}
>>> def summarize(jobs, config):
...     mean = sum(j.metrics["value"] for j in jobs) / len(jobs)
...     return Result(claims=[Claim.at_least("mean", mean, 0.0, paper="n/a")])
>>> exp = Experiment(slug="toy", title="Toy", parts=[
...     Part(name="main", run=run, summarize=summarize, quick=Config(2), full=Config(10))])
>>> exp.part("main").config(quick=True).n
2
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil
import traceback
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

__all__ = [
    "Claim",
    "Result",
    "JobResult",
    "Part",
    "Experiment",
    "register",
    "registry",
    "get_experiment",
    "discover",
    "discovery_errors",
    "apply_overrides",
    "ConfigError",
]


class ConfigError(ValueError):
    """A user-facing configuration error (unknown key, unparsable value, bad slug)."""


def _is_bad_number(value: Any) -> bool:
    try:
        return value is None or not math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _fmt(value: Any) -> str:
    from .claims import fmt_number

    if isinstance(value, (np.bool_, np.integer, np.floating)):
        value = value.item()
    return fmt_number(value)


@dataclass
class Claim:
    """One checked claim: what the paper says, what we measured, the bar, the verdict.

    Parameters
    ----------
    name : str
        Short name of the claim ("E1 win rate vs Resample(5)").
    paper : str
        The paper's value or statement, as text.
    measured : float or str or None
        What this run measured (a number, or text for compound measurements).
    bar : str
        The acceptance bar, written down before the run, as text ("≥ 0.62").
    passed : bool
        Whether the measurement meets the bar. A missing or non-finite measurement
        never passes.
    note : str, optional
        Anything a reader needs to interpret the number.
    incomplete : bool, optional
        The claim's measurement is not finished (for example a mean over three seeds of
        which one has run). An incomplete claim never passes; its verdict reads
        "INCOMPLETE", not "FAIL".
    quick_meaningful : bool, optional
        Whether the bar means something at quick (toy) scale too: an exact property check,
        a guarantee that holds at any size. Default False: in a quick run the claim is shown
        as a smoke check ("SMOKE": it ran end to end, numbers at toy scale), not as PASS or
        FAIL. Its measured verdict is still recorded, and exit codes do not change.
    """

    name: str
    paper: str
    measured: Any
    bar: str
    passed: bool
    note: str = ""
    incomplete: bool = False
    quick_meaningful: bool = False
    id: str = ""
    kind: str = "paper"
    interval: tuple | None = None
    inconclusive: bool = False
    not_earned: bool = False
    control: dict | None = None
    competitor: dict | None = None
    known_negative: str = ""
    alt: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.incomplete = bool(self.incomplete)
        self.inconclusive = bool(self.inconclusive) and not self.incomplete
        self.not_earned = bool(self.not_earned) and not (self.incomplete or self.inconclusive)
        self.passed = (bool(self.passed) and not self.incomplete and not self.inconclusive
                       and not self.not_earned)
        if isinstance(self.measured, (np.floating, np.integer, np.bool_)):
            self.measured = self.measured.item()
        if self.interval is not None:
            self.interval = (float(self.interval[0]), float(self.interval[1]))

    @property
    def measured_text(self) -> str:
        text = _fmt(self.measured)
        if self.interval is not None:
            text += f" [{_fmt(self.interval[0])}, {_fmt(self.interval[1])}]"
        return text

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (the resolution the run had), or None."""
        return None if self.interval is None else (self.interval[1] - self.interval[0]) / 2

    @property
    def verdict(self) -> str:
        """``"PASS"``, ``"FAIL"``, ``"NOT EARNED"``, ``"INCONCLUSIVE"`` or ``"INCOMPLETE"``
        (see :mod:`icml26.core.claims`)."""
        if self.incomplete:
            return "INCOMPLETE"
        if self.inconclusive:
            return "INCONCLUSIVE"
        if self.not_earned:
            return "NOT EARNED"
        return "PASS" if self.passed else "FAIL"

    @property
    def counts(self) -> bool:
        """Whether this claim counts toward the method's reproduction verdict (paper claims)."""
        return self.kind == "paper"

    def shown_verdict(self, quick: bool) -> str:
        """What a run shows: :attr:`verdict`, or ``"SMOKE"`` for a quick run of a claim whose
        bar is not meaningful at quick scale (see ``quick_meaningful``)."""
        return "SMOKE" if quick and not self.quick_meaningful else self.verdict

    def quick(self, meaningful: bool = True) -> "Claim":
        """Declare whether this claim's bar is meaningful at quick scale; returns ``self``.

        >>> Claim.at_most("round-trip error", 1e-9, 1e-6).quick().quick_meaningful
        True
        """
        self.quick_meaningful = bool(meaningful)
        return self

    # -- constructors for the common bar shapes --------------------------------------
    @classmethod
    def _with_bar(cls, name, measured, bar, paper, note, interval) -> "Claim":
        from .claims import Bar

        if interval is not None and not any(_is_bad_number(v) for v in interval):
            verdict = bar.interval_verdict(float(interval[0]), float(interval[1]))
            return cls(name, paper, measured, str(bar), verdict == "PASS", note,
                       interval=tuple(interval), inconclusive=verdict == "INCONCLUSIVE")
        ok = not _is_bad_number(measured) and bar.holds(measured)
        return cls(name, paper, measured, str(bar), ok, note)

    @classmethod
    def at_least(cls, name: str, measured: Any, threshold: float, *, paper: str = "",
                 note: str = "", interval: tuple | None = None) -> "Claim":
        """Claim that passes when ``measured >= threshold`` (and is finite); with an
        ``interval``, PASS / FAIL / INCONCLUSIVE from the interval."""
        from .claims import Bar

        return cls._with_bar(name, measured, Bar(">=", low=float(threshold)), paper, note,
                             interval)

    @classmethod
    def at_most(cls, name: str, measured: Any, threshold: float, *, paper: str = "",
                note: str = "", interval: tuple | None = None) -> "Claim":
        """Claim that passes when ``measured <= threshold`` (and is finite); with an
        ``interval``, PASS / FAIL / INCONCLUSIVE from the interval."""
        from .claims import Bar

        return cls._with_bar(name, measured, Bar("<=", high=float(threshold)), paper, note,
                             interval)

    @classmethod
    def between(cls, name: str, measured: Any, low: float, high: float, *,
                paper: str = "", note: str = "", interval: tuple | None = None) -> "Claim":
        """Claim that passes when ``low <= measured <= high`` (and is finite)."""
        from .claims import Bar

        return cls._with_bar(name, measured, Bar("between", low=float(low), high=float(high)),
                             paper, note, interval)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["measured"] = _jsonable(self.measured)
        d["verdict"] = self.verdict
        return _jsonable(d)


@dataclass
class JobResult:
    """What one (config, seed, task) job produced."""

    part: str
    seed: int
    task: dict | None
    metrics: dict | None
    seconds: float
    error: str | None = None  # the traceback, when the job raised
    cpu_seconds: float | None = None  # CPU time of the job's process (all its threads)
    warnings: list = field(default_factory=list)  # [{"category", "message", "count"}]
    output: str = ""  # what the job printed (stdout and stderr), for the run's log file

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class Result:
    """What a part's ``summarize`` returns.

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        Named tables (printed in the terminal and the report).
    figures : dict of str to matplotlib.figure.Figure
        Named figures (saved as PNG and embedded in the HTML report).
    claims : list of Claim
        Claims built in code. A method with a claim table (``claims.toml``) returns
        ``measurements`` instead and the core builds its claims from the table.
    notes : list of str
        Findings a reader must see (negative results, caveats, observations).
    measurements : dict of str to value or Measurement
        The named measurements the part's claim table refers to (see
        :mod:`icml26.core.claims`); also recorded in the ledger.
    """

    tables: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)
    claims: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    measurements: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.claims)


@dataclass
class Part:
    """One named part of an experiment (the paper's E1, E2, "scaling", ...).

    Parameters
    ----------
    name : str
        Identifier used with ``icml26 run SLUG --exp NAME``.
    run : callable
        ``run(config, seed) -> dict`` or, when ``tasks`` is given,
        ``run(config, seed, task) -> dict``. Must be a module-level function (picklable)
        and deterministic given its arguments. Metrics must be JSON-serialisable
        (numbers, strings, lists, dicts; numpy scalars/arrays are converted).
    summarize : callable
        ``summarize(jobs, config) -> Result`` with ``jobs`` the successful
        :class:`JobResult` list.
    quick, full : dataclass instance
        Configs: ``quick`` for tests and ``reproduce --quick`` (about a minute at most),
        ``full`` for ``icml26 run`` (at most ten minutes on two cores).
    seeds, quick_seeds : sequence of int
        Seeds run by default in full and quick mode.
    tasks : callable, optional
        ``tasks(config) -> list of dict``: independent jobs per seed (e.g. one per
        benchmark function), so the runner can spread them over workers.
    default : bool, optional
        Whether ``icml26 run SLUG`` runs this part without ``--exp`` (opt-in long
        parts set False). Taken from the method's claim table when it has one.
    description : str, optional
        One line for ``icml26 list`` and the report (likewise from the table).
    threads : int
        Threads each job may use (BLAS/torch). The runner enforces it per job.
    """

    name: str
    run: Callable[..., dict]
    summarize: Callable[[list, Any], Result]
    quick: Any
    full: Any
    seeds: Sequence[int] = (0, 1, 2)
    quick_seeds: Sequence[int] = (0,)
    tasks: Callable[[Any], list] | None = None
    default: bool | None = None
    description: str | None = None
    threads: int = 1
    claim_specs: list = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        for label, cfg in (("quick", self.quick), ("full", self.full)):
            if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
                raise TypeError(f"Part {self.name!r}: {label} must be a dataclass instance")
        if not self.seeds or not self.quick_seeds:
            raise ValueError(f"Part {self.name!r}: seeds and quick_seeds must be non-empty")
        self._declared = (self.default, self.description)
        self.default = True if self.default is None else bool(self.default)
        self.description = "" if self.description is None else self.description

    def config(self, quick: bool = False):
        return self.quick if quick else self.full

    def default_seeds(self, quick: bool = False) -> list[int]:
        return list(self.quick_seeds if quick else self.seeds)


@dataclass
class Experiment:
    """One paper's reproduction: a slug, a title, and its parts.

    Parameters
    ----------
    slug : str
        The method folder name (``cdal``, ``pem``, ...).
    title : str
        The paper's title.
    parts : list of Part
        The named parts; ``icml26 run SLUG`` runs those with ``default=True``.
    claims : list of str
        The paper's headline claims in words (shown by ``icml26 list``).
    reference : str
        Citation of the paper.
    headline : str, optional
        The name (or the start of the name) of the measured claim that carries the paper's
        headline, as ``"part/claim name"`` or a claim name; ``icml26 list --long`` shows its
        recorded value against its bar. Default: the first claim of the first default part.
    table : ClaimTable, optional
        The method's claim table. Default: ``<package>/<slug>/claims.toml`` when it exists;
        its title, summary, reference, headline and part defaults/descriptions then replace
        the arguments above (which must be left empty, or agree), and each part's claims
        are built from it (:mod:`icml26.core.claims`).
    """

    slug: str
    title: str = ""
    parts: list = field(default_factory=list)
    claims: list = field(default_factory=list)
    reference: str = ""
    headline: str = ""
    table: Any = None

    def __post_init__(self) -> None:
        names = [p.name for p in self.parts]
        if not names:
            raise ValueError(f"Experiment {self.slug!r} has no parts")
        if len(set(names)) != len(names):
            raise ValueError(f"Experiment {self.slug!r} has duplicate part names: {names}")
        if self.table is None:
            from .claims import load_table

            self.table = load_table(self.slug) if _is_method_slug(self.slug) else None
        if self.table is not None:
            self._adopt_table()
        if not self.title:
            raise ValueError(f"Experiment {self.slug!r} has no title (and no claim table)")

    def _adopt_table(self) -> None:
        table = self.table
        names = [p.name for p in self.parts]
        if list(table.parts) != names:
            raise ValueError(f"{table.source}: parts {list(table.parts)} do not match the "
                             f"experiment's parts {names} (same names, same order)")
        for label, mine, theirs in (("title", self.title, table.title),
                                    ("reference", self.reference, table.reference)):
            if mine and mine != theirs:
                raise ValueError(f"{table.source}: {label} differs from the Experiment's; "
                                 "declare it in the table only")
        self.title, self.reference = table.title, table.reference
        self.claims = list(table.summary) or list(self.claims)
        if table.headline:
            self.headline = table.headline
        for part in self.parts:
            spec = table.parts[part.name]
            default, description = part._declared
            if default is not None and bool(default) != spec.default or \
                    description not in (None, "", spec.description):
                raise ValueError(f"{table.source}: part {part.name!r}: default/description "
                                 "differ from the Experiment's; declare them in the table only")
            part.default, part.description = spec.default, spec.description
            part.claim_specs = table.for_part(part.name)

    def part(self, name: str) -> Part:
        for p in self.parts:
            if p.name == name:
                return p
        raise ConfigError(
            f"experiment {self.slug!r} has no part {name!r}; parts: "
            + ", ".join(p.name for p in self.parts))

    def claim_specs(self, *ids: str) -> list:
        """The claim-table rows with these ids (``part/key``), in table order."""
        parts = {i.split("/", 1)[0] for i in ids}
        return [s for name in parts for s in self.part(name).claim_specs if s.id in ids]

    def select(self, names: Sequence[str] | None = None) -> list[Part]:
        """The parts to run: the named ones, or all default parts."""
        if not names:
            return [p for p in self.parts if p.default]
        return [self.part(n) for n in names]


def _is_method_slug(slug: str) -> bool:
    """Whether ``slug`` names a folder of this package (toy experiments in tests do not)."""
    return bool(slug) and slug.isidentifier() and \
        (Path(__file__).resolve().parent.parent / slug).is_dir()


# -- registry -------------------------------------------------------------------------

_REGISTRY: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    """Add an experiment to the registry (re-registering a slug replaces it)."""
    if not isinstance(experiment, Experiment):
        raise TypeError(f"register expects an Experiment, got {type(experiment).__name__}")
    _REGISTRY[experiment.slug] = experiment
    return experiment


def registry() -> dict[str, Experiment]:
    """The registered experiments by slug (after :func:`discover`)."""
    return dict(_REGISTRY)


_DISCOVERY_ERRORS: dict[str, str] = {}


def _method_folders(package: str) -> list[str]:
    pkg = importlib.import_module(package)
    root = Path(pkg.__path__[0])
    return [info.name for info in pkgutil.iter_modules(pkg.__path__)
            if info.ispkg and info.name not in {"core", "zoo"}
            and (root / info.name / "experiment.py").is_file()]


def _import_method(package: str, name: str) -> None:
    try:
        importlib.import_module(f"{package}.{name}.experiment")
        _DISCOVERY_ERRORS.pop(name, None)
    except Exception:  # noqa: BLE001 - reported by discovery_errors()
        _DISCOVERY_ERRORS[name] = traceback.format_exc()


def discover(package: str = "icml26", only: Sequence[str] | None = None) -> dict[str, Experiment]:
    """Import ``<package>.<slug>.experiment`` for every method folder that has one.

    A method whose module fails to import is skipped (its traceback is kept in
    :func:`discovery_errors`) so one broken folder never hides the others. ``only``
    restricts the import to those slugs (``icml26 run SLUG`` imports one method only).
    """
    for name in _method_folders(package):
        if only is None or name in only:
            _import_method(package, name)
    return registry()


def discovery_errors() -> dict[str, str]:
    """Tracebacks of method folders whose ``experiment`` module failed to import."""
    return dict(_DISCOVERY_ERRORS)


def get_experiment(slug: str) -> Experiment:
    """The registered experiment for ``slug`` (importing only that method's folder)."""
    exps = registry() if slug in _REGISTRY else discover(only=[slug])
    if slug in _DISCOVERY_ERRORS:
        raise ConfigError(f"{slug}: its experiment module failed to import:\n"
                          f"{_DISCOVERY_ERRORS[slug]}")
    if slug not in exps:
        known = ", ".join(sorted(_method_folders("icml26"))) or "none"
        raise ConfigError(f"unknown or not yet implemented slug {slug!r}; implemented: {known}")
    return exps[slug]


# -- config overrides -----------------------------------------------------------------

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _parse(text: str, annotation: Any, current: Any, key: str):
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    target = annotation
    if origin is typing.Union or origin is types.UnionType:  # Optional[X] and X | None
        non_none = [a for a in args if a is not type(None)]
        if text.lower() in {"none", "null"} and len(non_none) < len(args):
            return None
        target = non_none[0] if non_none else str
        origin, args = typing.get_origin(target), typing.get_args(target)
    if target is Any or target is inspect.Parameter.empty:
        target = type(current) if current is not None else str
        origin, args = typing.get_origin(target), typing.get_args(target)
    try:
        if target is bool:
            low = text.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise ValueError(text)
        if target in (int, float, str):
            return target(text)
        if origin in (tuple, list) or target in (tuple, list):
            item_type = args[0] if args else (type(current[0]) if current else str)
            items = [s.strip() for s in text.split(",") if s.strip()]
            values = [_parse(s, item_type, None, key) for s in items]
            return tuple(values) if (origin or target) is tuple else values
    except (TypeError, ValueError):
        raise ConfigError(f"--set {key}={text}: expected {getattr(target, '__name__', target)}")
    raise ConfigError(f"--set {key}: fields of type {annotation} cannot be set from the CLI")


def apply_overrides(config, overrides: dict[str, str]):
    """Return ``config`` with string overrides parsed against its dataclass fields.

    Raises :class:`ConfigError` naming the key for unknown keys and unparsable values.
    """
    if not overrides:
        return config
    fields = {f.name: f for f in dataclasses.fields(config)}
    hints = typing.get_type_hints(type(config))
    changes = {}
    for key, text in overrides.items():
        if key not in fields:
            raise ConfigError(
                f"--set {key}: unknown config key for {type(config).__name__}; "
                f"known keys: {', '.join(sorted(fields))}")
        changes[key] = _parse(text, hints.get(key, Any), getattr(config, key), key)
    return dataclasses.replace(config, **changes)


def _jsonable(obj: Any):
    """Convert numpy/pandas/dataclass values to JSON-serialisable Python objects."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        obj = float(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(dataclasses.asdict(obj))
    return obj


jsonable = _jsonable
