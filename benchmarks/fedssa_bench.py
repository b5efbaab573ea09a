"""FedSSA speed: a local epoch costs O(K |E| d) (log-log slope of time in |E| <= 1.15, with the
Chebyshev band-energy path forced) and the server step at most O(M²) (slope in M <= 2.2).

Run ``python benchmarks/fedssa_bench.py`` for the slopes, or
``pytest benchmarks/fedssa_bench.py --benchmark-only`` for pytest-benchmark timings.
"""

from __future__ import annotations

import pytest
import torch

from icml26.core.stats import loglog_slope
from icml26.fedssa import FedSSAConfig, FedSSAServer
from icml26.fedssa.experiment import epoch_time, server_time, synthetic_payloads

SIZES = (1000, 2000, 4000, 8000, 16000)
CLIENT_COUNTS = (8, 16, 32, 64)
EPOCHS = 20


def measure(sizes=SIZES, client_counts=CLIENT_COUNTS, epochs=EPOCHS, repeats=3) -> dict:
    """Seconds per ``epochs`` local epochs at each graph size and per server step at each M."""
    torch.set_num_threads(1)
    epoch_rows = [epoch_time(n, epochs, repeats) for n in sizes]
    server_rows = [server_time(m, repeats) for m in client_counts]
    return {"epochs": epoch_rows, "server": server_rows,
            "epoch_slope": loglog_slope([r["n_edges"] for r in epoch_rows], [r["seconds"] for r in epoch_rows]),
            "server_slope": loglog_slope([r["n_clients"] for r in server_rows],
                                         [r["seconds"] for r in server_rows])}


@pytest.mark.parametrize("m", [8, 64])
def test_bench_server_step(benchmark, m):
    payloads = synthetic_payloads(m)
    server = FedSSAServer(FedSSAConfig(warmup_rounds=0, n_sem_clusters=3, n_str_clusters=3))
    benchmark(server.aggregate, payloads)


def test_bench_slopes():
    result = measure(sizes=(1000, 4000, 16000), repeats=2)
    assert result["epoch_slope"] <= 1.15
    assert result["server_slope"] <= 2.2


if __name__ == "__main__":
    result = measure()
    print(f"{'nodes':>8} {'|E|':>8} {'seconds/' + str(EPOCHS) + ' epochs':>20}")
    for row in result["epochs"]:
        print(f"{row['n_nodes']:8d} {row['n_edges']:8d} {row['seconds']:20.4f}")
    print(f"slope in |E|: {result['epoch_slope']:.3f} (bar <= 1.15)")
    print(f"{'M':>8} {'seconds/step':>14}")
    for row in result["server"]:
        print(f"{row['n_clients']:8d} {row['seconds']:14.5f}")
    print(f"slope in M: {result['server_slope']:.3f} (bar <= 2.2)")
