"""Run an experiment's (part, config, seed, task) jobs on a chosen backend.

Backends: ``sequential`` (in this process), ``joblib`` (local processes, ``jobs`` of
them) and ``dask`` (a ``distributed`` cluster at ``scheduler``; ``"local"`` starts a
``LocalCluster``). Jobs receive their seed explicitly and limit their own thread pools,
so the same seeds give the same numbers on every backend. A job that raises is recorded
with its traceback; the others go on.

Examples
--------
>>> from icml26.core.runner import run_experiment   # doctest: +SKIP
>>> outcome = run_experiment(get_experiment("pem"), quick=True, jobs=2)  # doctest: +SKIP
>>> outcome.passed  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import socket
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Sequence

from .experiment import Claim, ConfigError, Experiment, JobResult, Part, Result, apply_overrides, jsonable

__all__ = ["PartOutcome", "ExperimentOutcome", "expand_jobs", "run_job", "run_part",
           "collect_warnings", "merge_warnings",
           "run_experiment", "resolve_seeds", "plan_experiment", "count_jobs",
           "check_scheduler"]


@dataclass
class PartOutcome:
    """A part's config, seeds, job results and summarized :class:`Result`."""

    part: str
    config: Any
    seeds: list
    jobs: list
    result: Result
    seconds: float
    summarize_error: str | None = None
    cpu_seconds: float | None = None  # the jobs' CPU seconds plus summarize's
    summarize_warnings: list = field(default_factory=list)

    @property
    def warnings(self) -> list:
        """Every warning of the part's jobs and summarize, merged (most frequent first)."""
        return merge_warnings([j.warnings for j in self.jobs] + [self.summarize_warnings])

    @property
    def failed_jobs(self) -> list:
        return [j for j in self.jobs if not j.ok]

    @property
    def passed(self) -> bool:
        return self.result.passed and not self.failed_jobs and self.summarize_error is None

    def claims_by_name(self) -> dict:
        """The claims keyed by name; raises RuntimeError with the traceback if a job or
        ``summarize`` failed (what a test of a quick run wants to see first)."""
        if self.failed_jobs:
            job = self.failed_jobs[0]
            raise RuntimeError(f"{self.part}: job seed {job.seed} task {job.task} failed:\n{job.error}")
        if self.summarize_error:
            raise RuntimeError(f"{self.part}: summarize failed:\n{self.summarize_error}")
        return {c.name: c for c in self.result.claims}

    def claims_by_id(self) -> dict:
        """The claims keyed by id (``part/measurement``, from the claim table); raises like
        :meth:`claims_by_name`."""
        self.claims_by_name()
        return {c.id: c for c in self.result.claims}


@dataclass
class ExperimentOutcome:
    slug: str
    title: str
    quick: bool
    parts: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def cpu_seconds(self) -> float:
        """CPU seconds of every job and summarize (all worker processes together)."""
        return sum(p.cpu_seconds or 0.0 for p in self.parts)

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.parts)

    @property
    def claims(self) -> list:
        return [c for p in self.parts for c in p.result.claims]


def resolve_seeds(part: Part, quick: bool, n_seeds: int | None) -> list[int]:
    """The part's default seeds, or ``n_seeds`` consecutive seeds from its first one."""
    defaults = part.default_seeds(quick)
    if n_seeds is None:
        return defaults
    if n_seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {n_seeds}")
    if n_seeds <= len(defaults):
        return defaults[:n_seeds]
    start = defaults[0]
    return [start + i for i in range(n_seeds)]


def expand_jobs(part: Part, config, seeds: Sequence[int]) -> list[tuple]:
    """All (part name, config, seed, task) jobs of one part."""
    tasks = part.tasks(config) if part.tasks is not None else [None]
    return [(part.name, config, int(seed), task) for seed in seeds for task in tasks]


@contextlib.contextmanager
def _limited_threads(n: int):
    from threadpoolctl import threadpool_limits

    torch_threads = None
    try:
        import torch

        torch_threads = torch.get_num_threads()
        torch.set_num_threads(n)
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        if torch is not None and torch_threads is not None:
            torch.set_num_threads(torch_threads)


def _tally(caught) -> list[dict]:
    """Warnings caught by ``catch_warnings(record=True)``, one entry per distinct message."""
    counts: dict = {}
    for w in caught:
        key = (w.category.__name__, str(w.message).strip())
        counts[key] = counts.get(key, 0) + 1
    return [{"category": c, "message": m, "count": n} for (c, m), n in counts.items()]


def merge_warnings(lists) -> list[dict]:
    """Merge :func:`_tally` lists (e.g. of a part's jobs), most frequent first."""
    counts: dict = {}
    for entries in lists:
        for w in entries or []:
            key = (w["category"], w["message"])
            counts[key] = counts.get(key, 0) + int(w["count"])
    return [{"category": c, "message": m, "count": n}
            for (c, m), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


@contextlib.contextmanager
def collect_warnings():
    """Record every warning raised inside the block into the yielded list (not printed).

    A run's library warnings that are expected at toy scale (a rank-deficient covariance, few
    tokens for a hidden size) are collected once per part in the report instead of being
    printed once per job.
    """
    import warnings

    collected: list = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield collected
        finally:
            collected.extend(_tally(caught))


@contextlib.contextmanager
def _captured_output(stream):
    """Send the block's prints, stderr writes and log records bound for the terminal (a
    library's logging handlers made before the block hold the real streams) to ``stream``."""
    import logging

    terminal = {id(sys.stdout), id(sys.stderr), id(sys.__stdout__), id(sys.__stderr__)}
    loggers = [logging.getLogger()] + [lg for lg in logging.Logger.manager.loggerDict.values()
                                       if isinstance(lg, logging.Logger)]
    moved = [(h, h.stream) for lg in loggers for h in lg.handlers
             if type(h) is logging.StreamHandler and id(h.stream) in terminal]
    for handler, _ in moved:
        handler.setStream(stream)
    try:
        with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
            yield
    finally:
        for handler, original in moved:
            handler.setStream(original)


# -- the job's device ------------------------------------------------------------------------
@contextlib.contextmanager
def _job_device(device: str | None):
    """Set ``ICML26_DEVICE`` for one job (read by :func:`icml26.core.device.job_device`) and,
    for CUDA, ``CUBLAS_WORKSPACE_CONFIG`` (deterministic cuBLAS); restore the variable after.
    No part's config changes, so recorded ledgers stay current."""
    from .device import DEVICE_ENV, deterministic_cuda_env

    if device is None:
        yield
        return
    if str(device).startswith("cuda"):
        deterministic_cuda_env()
    old = os.environ.get(DEVICE_ENV)
    os.environ[DEVICE_ENV] = str(device)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(DEVICE_ENV, None)
        else:
            os.environ[DEVICE_ENV] = old


def run_job(run_fn, part_name: str, config, seed: int, task, threads: int = 1,
            device: str | None = None) -> JobResult:
    """Run one job, capturing its metrics or its traceback (never raises), its wall and CPU
    seconds, the warnings it raised and what it printed. ``device`` (``"cpu"``, ``"cuda:0"``)
    is where the job's torch work runs (see :func:`_job_device`)."""
    import io

    start, cpu = time.perf_counter(), time.process_time()
    output = io.StringIO()
    with collect_warnings() as caught, _captured_output(output):
        try:
            with _limited_threads(threads), _job_device(device):
                if task is None:
                    metrics = run_fn(config, seed)
                else:
                    metrics = run_fn(config, seed, task)
            if not isinstance(metrics, dict):
                raise TypeError(f"run() must return a dict of metrics, got "
                                f"{type(metrics).__name__}")
            metrics, error = jsonable(metrics), None
        except Exception:  # noqa: BLE001 - a failing job is reported, the run goes on
            metrics, error = None, traceback.format_exc()
    text = output.getvalue()
    if len(text) > JOB_OUTPUT_LIMIT:
        text = text[:JOB_OUTPUT_LIMIT // 2] + "\n[... output cut ...]\n" + text[-JOB_OUTPUT_LIMIT // 2:]
    return JobResult(part_name, seed, task, metrics, time.perf_counter() - start, error=error,
                     cpu_seconds=time.process_time() - cpu, warnings=caught, output=text)


#: Characters of a job's printed output (its prints, third-party progress bars) kept for the
#: run's log file; the terminal shows progress and results only.
JOB_OUTPUT_LIMIT = 20_000


def _execute(jobs: list, run_fns: dict, threads: dict, backend: str, n_jobs: int,
             scheduler: str | None, progress, device: str | None = None) -> list[JobResult]:
    calls = [(run_fns[p], p, cfg, seed, task, threads[p], device) for p, cfg, seed, task in jobs]
    results: list[JobResult | None] = [None] * len(calls)

    def done(i, res):
        results[i] = res
        if progress is not None:
            progress(res)

    if backend == "sequential" or (backend == "joblib" and n_jobs == 1):
        for i, call in enumerate(calls):
            done(i, run_job(*call))
    elif backend == "joblib":
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=n_jobs, return_as="generator")
        for i, res in enumerate(parallel(delayed(run_job)(*c) for c in calls)):
            done(i, res)
    elif backend == "dask":
        from distributed import Client, LocalCluster, as_completed

        cluster = None
        if scheduler in (None, "local"):
            cluster = LocalCluster(n_workers=max(1, n_jobs), threads_per_worker=1,
                                   processes=True, dashboard_address=None)
            client = Client(cluster)
        else:
            client = _connect(scheduler)
        try:
            futures = {client.submit(run_job, *c, pure=False): i for i, c in enumerate(calls)}
            for fut in as_completed(futures):
                done(futures[fut], fut.result())
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    else:
        raise ValueError(f"backend must be 'sequential', 'joblib' or 'dask', got {backend!r}")
    return results  # type: ignore[return-value]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def check_scheduler(address: str, timeout: float = 5.0, *, handshake: bool = False) -> None:
    """Raise :class:`ConfigError` (one line) unless a Dask scheduler answers at ``address``.

    ``"local"`` (a LocalCluster started by the runner) always passes. TCP addresses
    (``tcp://host:port`` or ``host:port``) are probed with a socket; with ``handshake=True``
    a Dask client then connects and disconnects (what the CLI does before any job starts).

    Examples
    --------
    >>> check_scheduler("local")
    """
    if address in (None, "local"):
        return
    text = str(address)
    proto, _, rest = text.rpartition("://")
    if proto not in ("", "tcp"):
        return
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--scheduler {text!r}: expected tcp://HOST:PORT or 'local'")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)),
                                      timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"cannot reach the Dask scheduler at {text!r}: {reason}") from None
    if handshake:
        _connect(address).close()


def _connect(address: str):
    """A ``distributed.Client`` for ``address``, or :class:`ConfigError` in one line."""
    from distributed import Client

    check_scheduler(address)
    try:
        return Client(address, timeout="10s")
    except Exception as exc:  # noqa: BLE001 - refused, timed out, or not a Dask scheduler
        raise ConfigError(f"cannot connect to a Dask scheduler at {address!r} "
                          f"({type(exc).__name__}: {_one_line(exc)})") from None


def _close_figures(result: Result) -> None:
    """Release pyplot's hold on a result's figures (they stay savable), so a long session
    or test suite never accumulates open figures."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        for fig in result.figures.values():
            plt.close(fig)


def _summarize(part: Part, jobs: list, config) -> tuple[Result, str | None]:
    ok = [j for j in jobs if j.ok]
    if not ok:
        claim = Claim("all jobs", "-", "0 succeeded", "≥ 1 job succeeds", False)
        return Result(claims=[claim], notes=["every job of this part failed"]), None
    try:
        result = part.summarize(ok, config)
        if not isinstance(result, Result):
            raise TypeError(f"summarize() must return a Result, got {type(result).__name__}")
        _close_figures(result)
        if part.claim_specs:
            from .claims import evaluate

            result.claims = list(result.claims) + evaluate(part.claim_specs, result.measurements)
        return result, None
    except Exception:  # noqa: BLE001
        tb = traceback.format_exc()
        claim = Claim("summarize", "-", "raised", "runs without error", False)
        return Result(claims=[claim], notes=["summarize raised; see the traceback"]), tb


def run_part(experiment: Experiment, part: Part | str, *, quick: bool = False,
             seeds: int | None = None, overrides: dict | None = None,
             backend: str = "sequential", jobs: int = 1, scheduler: str | None = None,
             progress=None) -> PartOutcome:
    """Run one part and summarize it (convenience for tests and notebooks)."""
    if isinstance(part, str):
        part = experiment.part(part)
    return run_experiment(experiment, parts=[part.name], quick=quick, seeds=seeds,
                          overrides=overrides, backend=backend, jobs=jobs,
                          scheduler=scheduler, progress=progress).parts[0]


def run_experiment(experiment: Experiment, *, parts: Sequence[str] | None = None,
                   quick: bool = False, seeds: int | None = None,
                   overrides: dict | None = None, backend: str | None = None,
                   jobs: int = 1, scheduler: str | None = None,
                   progress=None, device: str | None = None) -> ExperimentOutcome:
    """Run the selected parts of an experiment: all their jobs in one pool, then summarize.

    Parameters
    ----------
    experiment : Experiment
    parts : list of str, optional
        Part names; default: the experiment's default parts.
    quick : bool
        Use the quick configs and seeds.
    seeds : int, optional
        Number of seeds (overrides each part's default list).
    overrides : dict of str to str, optional
        ``--set`` overrides, applied to every selected part whose config has the key.
        A key that no selected part's config has is an error.
    backend : {"sequential", "joblib", "dask"}, optional
        Default: ``"dask"`` when ``scheduler`` is given, ``"joblib"`` when ``jobs > 1``.
    jobs : int
        Local worker processes.
    scheduler : str, optional
        Dask scheduler address, or ``"local"`` for a ``LocalCluster``.
    progress : callable, optional
        Called with each finished :class:`JobResult`.
    device : str, optional
        A resolved device (``"cpu"``, ``"cuda:0"``) for the jobs' torch work, passed to every
        job as ``ICML26_DEVICE`` (parts read it with ``job_device()``); None leaves the
        environment as it is (the CPU by default).
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    backend = backend or ("dask" if scheduler else ("joblib" if jobs > 1 else "sequential"))
    start = time.perf_counter()
    plan = plan_experiment(experiment, parts=parts, quick=quick, seeds=seeds,
                           overrides=overrides)
    all_jobs = [job for part, cfg, sd in plan for job in expand_jobs(part, cfg, sd)]
    run_fns = {part.name: part.run for part, _, _ in plan}
    threads = {part.name: part.threads for part, _, _ in plan}
    results = _execute(all_jobs, run_fns, threads, backend, jobs, scheduler, progress, device)
    outcome = ExperimentOutcome(experiment.slug, experiment.title, quick)
    for part, cfg, sd in plan:
        mine = [r for r in results if r.part == part.name]
        t0, c0 = time.perf_counter(), time.process_time()
        with collect_warnings() as caught:
            result, err = _summarize(part, mine, cfg)
        job_time = sum(r.seconds for r in mine)
        job_cpu = sum(r.cpu_seconds or 0.0 for r in mine)
        outcome.parts.append(PartOutcome(part.name, cfg, sd, mine, result,
                                         job_time + time.perf_counter() - t0, err,
                                         cpu_seconds=job_cpu + time.process_time() - c0,
                                         summarize_warnings=caught))
    outcome.seconds = time.perf_counter() - start
    return outcome


def plan_experiment(experiment: Experiment, *, parts: Sequence[str] | None = None,
                    quick: bool = False, seeds: int | None = None,
                    overrides: dict | None = None) -> list[tuple]:
    """The (part, config, seeds) triples a run would execute, with overrides applied.

    A ``--set`` key that no selected part's config has raises :class:`ConfigError`.
    """
    selected = experiment.select(parts)
    overrides = dict(overrides or {})
    known = {f.name for p in selected for f in dataclasses.fields(p.config(quick))}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ConfigError(f"--set {unknown[0]}: unknown config key; known keys: "
                          f"{', '.join(sorted(known))}")
    plan = []
    for part in selected:
        _check_signature(part)
        cfg = part.config(quick)
        keys = {f.name for f in dataclasses.fields(cfg)}
        cfg = apply_overrides(cfg, {k: v for k, v in overrides.items() if k in keys})
        plan.append((part, cfg, resolve_seeds(part, quick, seeds)))
    return plan


def count_jobs(plan: list[tuple]) -> int:
    """Number of jobs in a plan from :func:`plan_experiment`."""
    return sum(len(expand_jobs(part, cfg, sd)) for part, cfg, sd in plan)


def _check_signature(part: Part) -> None:
    params = inspect.signature(part.run).parameters
    want = 3 if part.tasks is not None else 2
    if len(params) < want:
        raise TypeError(f"part {part.name!r}: run must take {want} arguments "
                        f"(config, seed{', task' if want == 3 else ''})")
