"""Bad inputs over inverse_reweight's public entry points (the shared sweep of #33)."""

import numpy as np
import pytest
import torch
from sweep import Entry, check_case, sweep_cases

from icml26.inverse_reweight import InverseReweightLoss, class_balanced_weights, nc_metrics, prior_weights

_COUNTS = np.array([50, 20, 5])
_LOSS = InverseReweightLoss(_COUNTS)


def _batch():
    g = torch.Generator().manual_seed(0)
    return {"logits": torch.randn(12, 3, generator=g), "targets": torch.arange(12) % 3}


ENTRIES = [
    Entry("InverseReweightLoss.forward", lambda logits, targets: _LOSS(logits, targets), good=_batch,
          arrays=["logits", "targets"], aligned=["logits", "targets"], accepts=["one_sample"],
          skip=["targets:nan", "targets:inf", "targets:one_sample", "targets:empty"]),
    Entry("prior_weights", lambda class_counts: prior_weights(class_counts, "inv_freq"),
          good=lambda: {"class_counts": _COUNTS.copy()}, arrays=["class_counts"], skip=["mismatched"]),
    Entry("class_balanced_weights", lambda class_counts: class_balanced_weights(class_counts),
          good=lambda: {"class_counts": _COUNTS.copy()}, arrays=["class_counts"], skip=["mismatched"]),
    Entry("nc_metrics", lambda features, labels: nc_metrics(features, labels),
          good=lambda: {"features": np.random.default_rng(0).standard_normal((30, 4)),
                        "labels": np.arange(30) % 3},
          arrays=["features", "labels"], aligned=["features", "labels"],
          # one sample is one class: the error names labels (features:one_sample cuts both)
          skip=["labels:nan", "labels:inf", "labels:one_sample", "features:one_sample"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
