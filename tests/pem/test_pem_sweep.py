"""Bad inputs over pem's public array functions (the shared sweep of #33)."""

import numpy as np
import pytest
from sweep import Entry, check_case, sweep_cases

from icml26.pem import RBPEM, expected_rank_weights, rank_disagreement

_F = np.random.default_rng(0).standard_normal(8)

ENTRIES = [
    Entry("expected_rank_weights", lambda f_obs: expected_rank_weights(f_obs, rng=0),
          good=lambda: {"f_obs": _F.copy()}, arrays=["f_obs"], accepts=["one_sample"],
          skip=["mismatched", "inf"]),  # +inf is a failed evaluation (nan_policy="worst"): ranked last
    Entry("rank_disagreement", lambda f_a, f_b: rank_disagreement(f_a, f_b),
          good=lambda: {"f_a": _F.copy(), "f_b": _F[::-1].copy()}, arrays=["f_a", "f_b"],
          aligned=["f_a", "f_b"], accepts=["one_sample"]),
    Entry("RBPEM(x0)", lambda x0: RBPEM(x0, 1.0, seed=0), good=lambda: {"x0": np.zeros(4)}, arrays=["x0"],
          skip=["mismatched"], accepts=["one_sample"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
