"""Bad inputs over spectral_rl's public entry points (the shared sweep of #33): NaN, inf,
empty, one-sample, wrong-dtype and mismatched inputs give a ValueError/TypeError naming the
argument."""

import numpy as np
import pytest
from sweep import Entry, check_case, sweep_cases

from icml26.spectral_rl import (GridWorld, LinearValueApproximator, SpectralFeatures, laplacian_eigenpairs,
                                stationary_distribution, value_function)

_P = GridWorld.open_room(3, 4).transition("uniform").toarray()
_R = np.linspace(0.0, 1.0, 12)
_FEATS = SpectralFeatures(n_components=3).fit(_P)
_STATES = np.arange(12)

ENTRIES = [
    Entry("stationary_distribution", lambda P: stationary_distribution(P), good=lambda: {"P": _P.copy()},
          arrays=["P"], skip=["one_sample"]),
    Entry("laplacian_eigenpairs", lambda P: laplacian_eigenpairs(P, k=3), good=lambda: {"P": _P.copy()},
          arrays=["P"], skip=["one_sample"]),
    Entry("SpectralFeatures.fit", lambda X: SpectralFeatures(n_components=3).fit(X), good=lambda: {"X": _P.copy()},
          arrays=["X"], skip=["one_sample"]),
    Entry("value_function", lambda P, r: value_function(P, r, 0.9), good=lambda: {"P": _P.copy(), "r": _R.copy()},
          arrays=["P", "r"], skip=["P:one_sample", "r:one_sample", "r:empty"]),
    Entry("LinearValueApproximator.fit", lambda X, y: LinearValueApproximator(_FEATS).fit(X, y),
          good=lambda: {"X": _STATES.copy(), "y": _R.copy()}, arrays=["X", "y"], aligned=["X", "y"],
          accepts=["one_sample"], skip=["X:nan", "X:inf"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
