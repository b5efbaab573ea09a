"""best_seconds(clock="cpu"): timing claims in CPU seconds, so load cannot flip them (#33)."""

import time

import pytest

from icml26.core.stats import best_seconds


def _busy(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_cpu_clock_does_not_count_waiting():
    """Waiting (what another process's load looks like to this one) is not CPU time."""
    def call():
        time.sleep(0.05)
        _busy(0.002)

    # process CPU time also counts this process's other threads (a test runner's or a thread
    # pool's); the best of 5 calls and a 50-ms wait keep the two clocks apart under load
    cpu = best_seconds(call, repeats=5, min_seconds=0.0, clock="cpu")
    wall = best_seconds(call, repeats=2, min_seconds=0.0)
    assert cpu < 0.025 < 0.05 < wall


def test_cpu_clock_batches_short_calls_and_stops_on_waiting_calls():
    assert 0.0015 < best_seconds(lambda: _busy(0.002), repeats=2, min_seconds=0.01, clock="cpu") < 0.02
    start = time.perf_counter()
    best_seconds(lambda: time.sleep(0.3), repeats=1, min_seconds=0.05, clock="cpu")
    assert time.perf_counter() - start < 5.0


def test_unknown_clock_is_rejected():
    with pytest.raises(ValueError, match="clock"):
        best_seconds(lambda: None, clock="gpu")
