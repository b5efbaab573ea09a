"""RB-PEM against the ask/tell ES libraries a user has: `cmaes` SepCMA and pycma's sep-CMA-ES.

A noisy sphere (n = 20, multiplicative Gaussian noise, σ = 0.1), budget 2,000 evaluations, one
thread, CPU time, interleaved repeats (``benchmarks/peers.py``). Ratio = RB-PEM / peer; target
≤ 1.0, never above 1.2. Run ``python benchmarks/pem_peers_bench.py`` or
``pytest benchmarks/pem_peers_bench.py``.
"""

from __future__ import annotations

import numpy as np

from peers import interleaved, print_rows, ratio_row

N, BUDGET, NOISE = 20, 2000, 0.1


def noisy_sphere(seed: int):
    rng = np.random.default_rng(seed)

    def f(x):
        return float(np.dot(x, x) * (1.0 + NOISE * rng.standard_normal()))

    return f


def run_rbpem(seed: int = 0) -> float:
    from icml26.pem import RBPEM, BudgetedObjective

    obj = BudgetedObjective(noisy_sphere(seed), BUDGET, record_history=False)
    return RBPEM(np.full(N, 3.0), 2.0, bounds=(np.full(N, -5.0), np.full(N, 5.0)),
                 seed=seed).optimize(obj).fun


def run_cmaes_sep(seed: int = 0) -> float:
    from cmaes import SepCMA

    f = noisy_sphere(seed)
    opt = SepCMA(mean=np.full(N, 3.0), sigma=2.0, bounds=np.tile([-5.0, 5.0], (N, 1)), seed=seed)
    used, best = 0, np.inf
    while used + opt.population_size <= BUDGET:
        told = []
        for _ in range(opt.population_size):
            x = opt.ask()
            v = f(x)
            best = min(best, v)
            told.append((x, v))
        used += len(told)
        opt.tell(told)
    return best


def run_pycma_sep(seed: int = 0) -> float:
    import cma

    f = noisy_sphere(seed)
    es = cma.CMAEvolutionStrategy(np.full(N, 3.0), 2.0, {
        "CMA_diagonal": True, "bounds": [-5.0, 5.0], "seed": seed + 1, "verbose": -9,
        "maxfevals": BUDGET})
    while not es.stop():
        X = es.ask()
        es.tell(X, [f(x) for x in X])
    return float(es.result.fbest)


def measure(repeats: int = 7) -> list:
    medians = interleaved({"RB-PEM": run_rbpem, "cmaes SepCMA": run_cmaes_sep,
                           "pycma sep-CMA": run_pycma_sep}, repeats=repeats)
    return [ratio_row("noisy sphere n=20, budget 2000", "RB-PEM", peer, medians)
            for peer in ("cmaes SepCMA", "pycma sep-CMA")]


def test_rbpem_vs_cmaes_and_pycma():
    rows = measure(repeats=5)
    assert all(r["ratio"] <= 1.2 for r in rows), rows


if __name__ == "__main__":
    print_rows(measure())
