"""Bad inputs over emotion_circuits' array functions (the shared sweep of #33)."""

import numpy as np
import pytest
import torch
from sweep import Entry, check_case, sweep_cases

from icml26.emotion_circuits import cosine, hit_rate, specificity


def _vectors():
    g = torch.Generator().manual_seed(0)
    return {"a": torch.randn(4, 8, generator=g), "b": torch.randn(4, 8, generator=g)}


ENTRIES = [
    Entry("cosine", lambda a, b: cosine(a, b), good=_vectors, arrays=["a", "b"], aligned=["a", "b"],
          accepts=["one_sample"]),
    Entry("specificity", lambda effects: specificity(effects), good=lambda: {"effects": np.array([0.5, 0.1, 0.0, 0.2])},
          arrays=["effects"], accepts=["mismatched"], skip=["one_sample"]),
    Entry("hit_rate", lambda categories, labels: hit_rate(categories, labels, 3),
          good=lambda: {"categories": torch.tensor([[0, 1, -1, 2], [1, 1, 0, -2]]), "labels": torch.tensor([0, 1])},
          arrays=["categories", "labels"], aligned=["categories", "labels"], accepts=["one_sample"],
          skip=["categories:nan", "categories:inf", "labels:nan", "labels:inf", "categories:mismatched"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
