"""Bad inputs over accessibility's array functions (the shared sweep of #33)."""

import numpy as np
import pytest
import torch
from sweep import Entry, check_case, sweep_cases

from icml26.accessibility import bootstrap_gain, participation_ratio, rms_normalize, spectrum

_RNG = np.random.default_rng(0)
_A = _RNG.standard_normal((20, 4))

ENTRIES = [
    Entry("spectrum", lambda cov: spectrum(cov), good=lambda: {"cov": torch.from_numpy(_A.T @ _A)},
          arrays=["cov"], skip=["one_sample"]),
    Entry("participation_ratio", lambda eigenvalues: participation_ratio(eigenvalues),
          good=lambda: {"eigenvalues": np.array([3.0, 2.0, 1.0, 0.5])}, arrays=["eigenvalues"],
          accepts=["one_sample", "mismatched"]),
    Entry("rms_normalize", lambda x: rms_normalize(x), good=lambda: {"x": torch.randn(5, 8)}, arrays=["x"],
          accepts=["one_sample", "mismatched", "empty"], skip=["nan", "inf"]),  # an elementwise op
    Entry("bootstrap_gain", lambda reference_ce, path_ce: bootstrap_gain(reference_ce, path_ce, n_boot=50),
          good=lambda: {"reference_ce": _RNG.random(30) + 1.0, "path_ce": _RNG.random(30) + 0.9},
          arrays=["reference_ce", "path_ce"], aligned=["reference_ce", "path_ce"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
