"""Speed of the ILR loss: extra cost over cross-entropy and its scaling in |B| + C.

Run ``python benchmarks/inverse_reweight_bench.py`` for the table and the log-log slope,
or ``pytest benchmarks/inverse_reweight_bench.py`` for pytest-benchmark timings.
"""

import torch
import torch.nn.functional as F

from icml26.inverse_reweight import InverseReweightLoss
from icml26.inverse_reweight.experiment import ScalingConfig, run_scaling, scaling_tasks, summarize_scaling

BATCH, CLASSES = 1024, 100


def _inputs():
    gen = torch.Generator().manual_seed(0)
    return torch.randn(BATCH, CLASSES, generator=gen), torch.randint(CLASSES, (BATCH,), generator=gen)


def _forward_backward(loss_fn, logits, targets):
    z = logits.detach().requires_grad_(True)
    loss_fn(z, targets).backward()


def test_bench_cross_entropy(benchmark):
    logits, targets = _inputs()
    benchmark(_forward_backward, lambda z, y: F.cross_entropy(z, y), logits, targets)


def test_bench_inverse_reweight_loss(benchmark):
    logits, targets = _inputs()
    benchmark(_forward_backward, InverseReweightLoss(torch.arange(1, CLASSES + 1)), logits, targets)


def test_bench_inverse_reweight_unchecked(benchmark):
    logits, targets = _inputs()
    loss_fn = InverseReweightLoss(torch.arange(1, CLASSES + 1), check_finite=False)
    benchmark(_forward_backward, loss_fn, logits, targets)


if __name__ == "__main__":
    from icml26.core.experiment import JobResult

    torch.set_num_threads(1)
    config = ScalingConfig()
    jobs = [JobResult("scaling", 0, task, run_scaling(config, 0, task), 0.0) for task in scaling_tasks(config)]
    result = summarize_scaling(jobs, config)
    print(result.tables["scaling"].to_string(index=False))
    from icml26.core.claims import evaluate
    from icml26.core.experiment import get_experiment

    for claim in evaluate(get_experiment("inverse_reweight").part("scaling").claim_specs,
                          result.measurements):
        print(f"{claim.name}: {claim.measured_text} (bar {claim.bar}) -> {claim.verdict}")
    print(*result.notes, sep="\n")
