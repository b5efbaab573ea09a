"""Bad inputs over safedec's token-level functions (the shared sweep of #33)."""

import numpy as np
import pytest
import torch
from sweep import Entry, check_case, sweep_cases

from icml26.safedec import constrain_logits, sample_tokens


def _batch():
    g = torch.Generator().manual_seed(0)
    return {"logits": torch.randn(4, 5, generator=g),
            "robustness": np.random.default_rng(0).uniform(-1.0, 1.0, (4, 5))}


def _masked(out):
    logits = out[0] if isinstance(out, tuple) else out
    return logits.masked_fill(logits == -np.inf, -1e30)


ENTRIES = [
    # masked tokens come back as -inf by design: the sweep sees them as a large negative logit
    Entry("constrain_logits(hcd)", lambda logits, robustness: _masked(constrain_logits(
              logits, robustness, mode="hcd", fallback_token=0)),
          good=_batch, arrays=["logits", "robustness"], aligned=["logits", "robustness"],
          accepts=["one_sample", "robustness:inf"],   # +inf robustness: unconstrained
          skip=["logits:inf"]),
    Entry("constrain_logits(rcd)", lambda logits, robustness: constrain_logits(logits, robustness, mode="rcd"),
          good=_batch, arrays=["logits", "robustness"], aligned=["logits", "robustness"],
          accepts=["one_sample"], skip=["logits:inf", "robustness:inf"]),
    Entry("sample_tokens", lambda logits, u: sample_tokens(logits, u),
          good=lambda: {"logits": _batch()["logits"], "u": np.linspace(0.1, 0.9, 4)},
          arrays=["logits", "u"], aligned=["logits", "u"], accepts=["one_sample"], skip=["logits:inf"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
