"""TOP speed and scaling: target construction vs length (log-log slope), the training-step
cost of NTP+TOP vs NTP vs MTP at equal trunk size, and the host reads (device
synchronisations on an accelerator) each objective's training step makes.

Run ``python benchmarks/top_bench.py`` for the numbers (they go in src/icml26/top/README.md),
or ``pytest benchmarks/top_bench.py`` for pytest-benchmark timings.
"""

import torch

from icml26.core.stats import loglog_slope
from icml26.top import top_targets, top_targets_sparse
from icml26.top.experiment import SCALING_FULL, run_scaling


def _labels(length, vocab=256, batch=8, seed=0):
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))


def test_bench_dense_targets_1024(benchmark):
    labels = _labels(1024)
    benchmark(top_targets, labels, 256, 512)


def test_bench_sparse_targets_1024(benchmark):
    labels = _labels(1024)
    benchmark(top_targets_sparse, labels, 256, 512)


def host_reads_per_step() -> dict:
    """Tensor reads on the host (``bool(t)``, ``.item()``, ...) in one loss + backward of the
    experiment's models: each is a device synchronisation on a GPU. The optimizer's own
    ``.item()`` calls read its CPU step counters and are left out."""
    import collections

    from torch.overrides import TorchFunctionMode

    from icml26.top.experiment import build_model, objective_loss
    from icml26.top.gpt import GPTConfig
    from icml26.top.token_order import TOPForCausalLM
    from icml26.top.gpt import TinyGPT

    class Reads(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.n = collections.Counter()

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") in {"__bool__", "item", "tolist", "__int__", "__float__"}:
                self.n[func.__name__] += 1
            return func(*args, **(kwargs or {}))

    config = GPTConfig(vocab_size=12, block_size=16, n_layer=3, n_head=2, n_embd=16)
    ids = torch.randint(0, 12, (4, 10), generator=torch.Generator().manual_seed(0))
    models = {o: build_model(o, config) for o in ("ntp", "top", "mtp")}
    models["top (validate_args=True)"] = TOPForCausalLM(TinyGPT(config), window=None, ignore_index=-100)
    out = {}
    for name, model in models.items():
        with Reads() as reads:
            loss, _ = objective_loss(model, name.split()[0], ids, ids, ids)
            loss.backward()
        out[name] = sum(reads.n.values())
    return out


def main() -> None:
    torch.set_num_threads(1)
    print("host reads per training step (device synchronisations on a GPU):")
    for name, n in host_reads_per_step().items():
        print(f"  {name:26s} {n}")
    metrics = run_scaling(SCALING_FULL, seed=0)
    slope = loglog_slope(metrics["lengths"], metrics["target_seconds"])
    print("top_targets (dense sweep), B=8, V=256, W=(T+W)/2")
    for n, s in zip(metrics["lengths"], metrics["target_seconds"]):
        print(f"  T+W={n:5d}: {s * 1e3:8.2f} ms")
    print(f"  log-log slope: {slope:.3f}  (bar <= 1.15)")
    step = metrics["step_seconds"]
    print("training step (B=32, T=128, 4x128 GPT, V=100), min over repeats:")
    for o, s in step.items():
        print(f"  {o:4s}: {s * 1e3:8.1f} ms  ratio vs NTP {s / step['ntp']:.3f}")
    print(f"  NTP+TOP / NTP: {step['top'] / step['ntp']:.3f}  (bar <= 1.3)")
    sparse = []
    for n in metrics["lengths"]:
        labels = _labels(n)
        import time
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            top_targets_sparse(labels, 256, n // 2)
            best = min(best, time.perf_counter() - t0)
        sparse.append(best)
    print("top_targets_sparse: " + ", ".join(f"{n}: {s * 1e3:.2f} ms" for n, s in zip(metrics["lengths"], sparse))
          + f"; slope {loglog_slope(metrics['lengths'], sparse):.3f} (O(T*W): quadratic when W grows with T)")


if __name__ == "__main__":
    main()
