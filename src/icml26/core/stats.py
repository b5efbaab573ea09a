"""Small aggregation helpers shared by every experiment's ``summarize``."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd

__all__ = ["mean_std", "format_mean_std", "summary_table", "loglog_slope", "best_seconds",
           "sign_test", "win_fraction_interval", "paired_mean_interval", "paired_t_interval",
           "UNDEFINED"]

from .report import UNDEFINED  # "—": a value undefined for a row (no finite measurement)


def mean_std(values: Iterable[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0 for a single value)."""
    arr = np.asarray(list(values), dtype=float)
    if arr.size == 0:
        return float("nan"), float("nan")
    std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    return float(arr.mean()), std


def format_mean_std(values: Iterable[float], digits: int = 3) -> str:
    """``"0.812 ± 0.013"`` for a list of per-seed values.

    Non-finite values (a metric undefined for that seed) are left out. With no finite value
    the cell reads :data:`UNDEFINED` ("—"); with one it is the bare value (a standard deviation
    over one seed means nothing, so no "± 0.000"); when some seeds were left out the count
    of seeds used follows, e.g. ``"0.812 ± 0.013 (2/3 seeds)"``.

    Examples
    --------
    >>> format_mean_std([0.5, 0.7])
    '0.600 ± 0.141'
    >>> format_mean_std([0.5])
    '0.500'
    >>> format_mean_std([float("nan")])
    '—'
    """
    arr = np.asarray(list(values), dtype=float)
    finite = arr[np.isfinite(arr)]
    if finite.size == 0:
        return UNDEFINED
    mean, std = mean_std(finite)
    text = f"{mean:.{digits}f}" if finite.size == 1 else f"{mean:.{digits}f} ± {std:.{digits}f}"
    if finite.size < arr.size:
        text += f" ({finite.size}/{arr.size} seeds)"
    return text


def summary_table(records: Sequence[dict], by: Sequence[str] | str,
                  metrics: Sequence[str], digits: int = 3) -> pd.DataFrame:
    """Group per-seed records by ``by`` and show each metric as ``mean ± std``.

    Parameters
    ----------
    records : list of dict
        One dict per (seed, setting), holding the ``by`` keys and the metrics.
    by : str or list of str
        Columns identifying a row (method name, dataset, ...); row order follows first
        appearance.
    metrics : list of str
        Metric columns to aggregate over seeds.
    """
    by = [by] if isinstance(by, str) else list(by)
    frame = pd.DataFrame.from_records(records)
    missing = [c for c in [*by, *metrics] if c not in frame.columns]
    if missing:
        raise KeyError(f"summary_table: records lack columns {missing}")
    rows = []
    for key, group in frame.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        for m in metrics:
            row[m] = format_mean_std(group[m].astype(float), digits)
        row["seeds"] = len(group)
        rows.append(row)
    return pd.DataFrame(rows)


def loglog_slope(sizes: Sequence[float], costs: Sequence[float]) -> float:
    """Least-squares slope of log(cost) against log(size): the empirical scaling exponent."""
    x = np.log(np.asarray(sizes, dtype=float))
    y = np.log(np.asarray(costs, dtype=float))
    if x.size < 2 or not np.all(np.isfinite(x)) or not np.all(np.isfinite(y)):
        raise ValueError("loglog_slope needs at least two positive, finite (size, cost) pairs")
    return float(np.polyfit(x, y, 1)[0])


def best_seconds(fn, repeats: int = 5, min_seconds: float = 0.02, clock: str = "wall") -> float:
    """Best-of-``repeats`` seconds per call, calls batched to last at least ``min_seconds``
    (millisecond calls timed one by one are dominated by noise on a loaded machine).

    ``clock="cpu"`` times the process's CPU seconds (all its threads) instead of wall-clock
    seconds: other processes on a shared machine then cannot inflate the time, so a scaling
    claim (a log-log slope) does not flip with the load. Use it for CPU-bound code in a
    job with a fixed thread count; wall time stays the default (GPU work, I/O).
    """
    import time

    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    now = time.perf_counter if clock == "wall" else time.process_time
    number = 1
    while True:
        start, wall = now(), time.perf_counter()
        for _ in range(number):
            fn()
        # (a batch that spends a second of wall time waiting, not computing, is long enough)
        if now() - start >= min_seconds or time.perf_counter() - wall >= max(1.0, min_seconds):
            break
        number *= 4
    times = []
    for _ in range(repeats):
        start = now()
        for _ in range(number):
            fn()
        times.append((now() - start) / number)
    return min(times)


def sign_test(diffs: Iterable[float]) -> dict:
    """One-sided exact sign test of paired differences (H1: more positive than negative).

    Zeros are ties and left out of the binomial test; NaN counts as neither.

    Returns
    -------
    dict with ``wins`` (> 0), ``losses`` (< 0), ``ties`` (== 0) and ``p`` (1.0 with no
    non-zero pair).

    Examples
    --------
    >>> out = sign_test([0.5, 1.0, 0.2, 0.0, 2.0, 0.1])
    >>> out["wins"], out["losses"], out["ties"], round(out["p"], 4)
    (5, 0, 1, 0.0312)
    """
    from scipy.stats import binomtest

    d = np.asarray(diffs, dtype=float)
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    p = float(binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue) if wins + losses else 1.0
    return {"wins": wins, "losses": losses, "ties": int((d == 0).sum()), "p": p}


def win_fraction_interval(wins: int, losses: int, level: float = 0.90) -> tuple[float, float]:
    """Exact (Clopper–Pearson) interval for the fraction of decided pairs that are wins.

    The two-sided ``level`` = 0.90 leaves 5 % on each side, the level of a one-sided exact
    sign test at p < 0.05: the lower end is above 0.5 exactly when that test rejects.
    ``(nan, nan)`` when no pair is decided.

    Examples
    --------
    >>> low, high = win_fraction_interval(55, 20)
    >>> round(low, 3), round(high, 3)
    (0.637, 0.816)
    """
    from scipy.stats import binomtest

    wins, losses = int(wins), int(losses)
    if wins < 0 or losses < 0:
        raise ValueError(f"wins and losses must be >= 0, got {wins}, {losses}")
    if wins + losses == 0:
        return float("nan"), float("nan")
    ci = binomtest(wins, wins + losses).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def paired_mean_interval(diffs: Iterable[float], level: float = 0.95, *, method: str = "BCa",
                         n_resamples: int = 9999, seed: int = 0) -> tuple[float, float]:
    """Bootstrap interval of the mean of paired differences (``scipy.stats.bootstrap``).

    ``diffs`` are per-pair differences (method − baseline on the same seed, token, instance),
    so resampling them is the paired bootstrap. BCa by default; a constant sample gives the
    degenerate interval (value, value); fewer than two values gives ``(nan, nan)``.

    Examples
    --------
    >>> paired_mean_interval([1.0, 1.0, 1.0])
    (1.0, 1.0)
    """
    from scipy.stats import bootstrap

    d = np.asarray(list(diffs), dtype=float)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return float("nan"), float("nan")
    if np.all(d == d[0]):
        return float(d[0]), float(d[0])
    res = bootstrap((d,), np.mean, confidence_level=level, method=method,
                    n_resamples=n_resamples, random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def paired_t_interval(diffs: Iterable[float], level: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of paired differences (``scipy.stats.t``).

    For a handful of seeds, where a bootstrap interval is about [min, max] and too narrow,
    the t-interval keeps its coverage under normal errors. Fewer than two finite values give
    ``(nan, nan)``; a constant sample gives ``(value, value)``.

    Examples
    --------
    >>> lo, hi = paired_t_interval([0.036, 0.040, 0.042])
    >>> round(lo, 4), round(hi, 4)
    (0.0317, 0.0469)
    """
    from scipy import stats as sps

    d = np.asarray(list(diffs), dtype=float)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return float("nan"), float("nan")
    mean = float(d.mean())
    half = float(sps.t.ppf(0.5 + level / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    return mean - half, mean + half
