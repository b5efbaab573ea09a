"""How many torch threads should a small-model job use on this machine?

Measures the training-step time of a small MLP (the size of the models our experiments
train) with 1 and 2 torch threads, and the throughput of two single-thread processes vs
one two-thread process. Run: ``python benchmarks/core_threads_bench.py``.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor

import torch

STEPS = 300


def steps_per_second(threads: int, steps: int = STEPS, width: int = 256) -> float:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(128, 64), torch.randint(0, 10, (128,))
    start = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return steps / (time.perf_counter() - start)


def test_single_thread_step_rate(benchmark):
    benchmark.pedantic(steps_per_second, args=(1, 50), rounds=3)


if __name__ == "__main__":
    one = steps_per_second(1)
    two = steps_per_second(2)
    with ProcessPoolExecutor(2) as pool:
        start = time.perf_counter()
        list(pool.map(steps_per_second, [1, 1]))
        two_procs = 2 * STEPS / (time.perf_counter() - start)
    print(f"1 thread: {one:.0f} steps/s; 2 threads: {two:.0f} steps/s "
          f"(speed-up {two / one:.2f}x)")
    print(f"2 single-thread processes: {two_procs:.0f} steps/s in total "
          f"({two_procs / two:.2f}x one 2-thread process)")
