"""Bad inputs over projq's public entry points (the shared sweep of #33)."""

import pytest
import torch
from sweep import Entry, check_case, sweep_cases

from icml26.projq import ActivationStats, GroupQuantizer, ProjQ, gptq_quantize, rtn_quantize, synthetic_layer

_W, _X = synthetic_layer(16, 32, tokens=128, seed=0)
_STATS = ActivationStats.from_tensor(_X)
_Q = GroupQuantizer(3, -1)

ENTRIES = [
    Entry("rtn_quantize", lambda W: rtn_quantize(W, _Q), good=lambda: {"W": _W.clone()}, arrays=["W"],
          accepts=["one_sample", "mismatched"]),
    Entry("gptq_quantize", lambda W, H: gptq_quantize(W, H, _Q), good=lambda: {"W": _W.clone(), "H": _X.T @ _X},
          arrays=["W", "H"], skip=["H:one_sample", "W:one_sample"], accepts=[]),
    Entry("ActivationStats.from_tensor", lambda X: ActivationStats.from_tensor(X), good=lambda: {"X": _X.clone()},
          arrays=["X"], accepts=["one_sample", "mismatched"]),
    Entry("ProjQ.fit", lambda W: ProjQ(bits=3, group_size=-1, rank=2, max_iter=1, tol=0.0).fit(W, _STATS),
          good=lambda: {"W": _W.clone()}, arrays=["W"], skip=["one_sample"]),  # 1 row < rank: rank error
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
