"""Shared timing for the ``*_peers_bench.py`` files: icml26 against the library a user has.

Each pair is measured side by side in one process: one thread (BLAS and torch), CPU time of
the process (``time.process_time``, so other load on the machine does not enter), interleaved
repeats (ours, peer, ours, peer, ...) after a warm-up, and the ratio of the medians
(icml26 / peer). The project's target is a ratio ≤ 1.0, never above 1.2.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from typing import Any, Callable


@contextlib.contextmanager
def one_thread():
    """Limit numpy's BLAS and torch to one thread inside the block."""
    from threadpoolctl import threadpool_limits

    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    before = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        if torch is not None:
            torch.set_num_threads(before)


def cpu_seconds(fn: Callable[[], Any], number: int = 1) -> float:
    """Mean CPU seconds of ``number`` calls of ``fn``."""
    start = time.process_time()
    for _ in range(number):
        fn()
    return (time.process_time() - start) / number


def interleaved(fns: dict, repeats: int = 7, number: int = 1, warmup: int = 1) -> dict:
    """Median CPU seconds of each callable in ``fns``, measured in interleaved rounds."""
    with one_thread():
        for fn in fns.values():
            for _ in range(warmup):
                fn()
        times = {name: [] for name in fns}
        for _ in range(repeats):
            for name, fn in fns.items():
                times[name].append(cpu_seconds(fn, number))
    return {name: statistics.median(t) for name, t in times.items()}


def ratio_row(pair: str, ours: str, peer: str, medians: dict, **extra) -> dict:
    """A result row: both medians and the ratio ours / peer."""
    return {"pair": pair, "icml26": ours, "peer": peer, "icml26_s": medians[ours],
            "peer_s": medians[peer], "ratio": medians[ours] / medians[peer], **extra}


def print_rows(rows: list) -> None:
    for r in rows:
        extra = {k: v for k, v in r.items() if k not in
                 {"pair", "icml26", "peer", "icml26_s", "peer_s", "ratio"}}
        print(f"{r['pair']}: {r['icml26']} {r['icml26_s'] * 1e3:.2f} ms, {r['peer']} "
              f"{r['peer_s'] * 1e3:.2f} ms, ratio {r['ratio']:.2f}"
              + (f"  {extra}" if extra else ""))
