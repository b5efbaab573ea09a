"""Bad inputs over top's public loss and metric functions (the shared sweep of #33)."""

import pytest
import torch
from sweep import Entry, check_case, sweep_cases

from icml26.top import listnet_loss, ndcg_at_k, top_targets


def _labels():
    return {"labels": torch.randint(0, 16, (2, 12), generator=torch.Generator().manual_seed(0))}


def _scores_targets():
    g = torch.Generator().manual_seed(0)
    targets = top_targets(torch.randint(0, 16, (3, 10), generator=g), 16, window=4, seq_len=6)
    return {"scores": torch.randn(targets.shape, generator=g), "targets": targets}


ENTRIES = [
    Entry("top_targets", lambda labels: top_targets(labels, 16, window=4, seq_len=8), good=_labels,
          # an empty batch is a batch; a one-row batch's targets hold -inf by design
          arrays=["labels"], skip=["nan", "inf", "mismatched", "one_sample"], accepts=["empty"]),
    Entry("listnet_loss", lambda scores, targets: listnet_loss(scores, targets), good=_scores_targets,
          arrays=["scores", "targets"], aligned=["scores", "targets"], accepts=["one_sample"],
          # -inf marks items outside the list; a loss propagates NaN/inf scores (torch's convention)
          skip=["targets:inf", "targets:nan", "scores:nan", "scores:inf"]),
    Entry("ndcg_at_k", lambda scores, targets: ndcg_at_k(scores, targets, k=3), good=_scores_targets,
          arrays=["scores", "targets"], aligned=["scores", "targets"], accepts=["one_sample", "scores:inf"],
          skip=["targets:inf", "targets:nan"]),   # an infinite score (masked logit) ranks first/last
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
