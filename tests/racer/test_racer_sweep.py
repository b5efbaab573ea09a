"""Bad inputs over racer's public entry points (the shared sweep of #33)."""

import numpy as np
import pytest
from sweep import Entry, check_case, sweep_cases

from icml26.racer import RACERCalibrator, crc_threshold, pac_threshold, weighted_vote

_RNG = np.random.default_rng(0)
_SCORES = _RNG.random((200, 4))
_CORRECT = (_RNG.random((200, 4)) < _SCORES).astype(int)
_CAL = RACERCalibrator(alpha=0.2, random_state=0).fit(_SCORES, _CORRECT)
_LEVELS = _RNG.random(200)

ENTRIES = [
    Entry("RACERCalibrator.fit", lambda scores, correct: RACERCalibrator(alpha=0.2, random_state=0).fit(scores, correct),
          good=lambda: {"scores": _SCORES.copy(), "correct": _CORRECT.copy()}, arrays=["scores", "correct"],
          aligned=["scores", "correct"], skip=["correct:inf", "correct:one_sample"],
          accepts=["scores:one_sample"]),  # too few to calibrate: InfeasibleRiskWarning, threshold inf
    Entry("RACERCalibrator.predict_sets", lambda scores: _CAL.predict_sets(scores),
          good=lambda: {"scores": _SCORES[:20].copy()}, arrays=["scores"], accepts=["one_sample"]),
    Entry("crc_threshold", lambda levels: crc_threshold(levels, 0.2), good=lambda: {"levels": _LEVELS.copy()},
          arrays=["levels"], skip=["mismatched", "one_sample", "inf"]),  # +inf is a level
    Entry("pac_threshold", lambda levels: pac_threshold(levels, 0.2, 0.1), good=lambda: {"levels": _LEVELS.copy()},
          arrays=["levels"], skip=["mismatched", "one_sample", "inf"]),  # +inf is a level
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
