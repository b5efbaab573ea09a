"""Bad inputs over tcbench's geometry functions (the shared sweep of #33)."""

import numpy as np
import pytest
from sweep import Entry, check_case, sweep_cases

from icml26.tcbench import feature_spread, participation_ratio

_Z = np.random.default_rng(0).standard_normal((40, 6))

ENTRIES = [
    Entry("participation_ratio", lambda Z: participation_ratio(Z), good=lambda: {"Z": _Z.copy()}, arrays=["Z"],
          accepts=["mismatched"], skip=["one_sample"]),  # one row: nan, documented
    Entry("feature_spread", lambda Z: feature_spread(Z), good=lambda: {"Z": _Z.copy()}, arrays=["Z"],
          accepts=["mismatched"], skip=["one_sample"]),  # one row: nan, documented
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
