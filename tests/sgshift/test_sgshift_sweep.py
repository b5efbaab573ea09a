"""Bad inputs over sgshift's public entry points (the shared sweep of #33)."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sweep import Entry, check_case, sweep_cases

from icml26.sgshift import SGShift, make_concept_shift, source_offset

_D = make_concept_shift(n_source=600, n_target=120, p=5, n_informative=2, n_shifted=1, seed=0)
_MODEL = LogisticRegression().fit(_D.X_source, _D.y_source)
_FIT = SGShift(n_lambdas=5).fit(_D.X_target, _D.y_target, source_model=_MODEL)

ENTRIES = [
    Entry("SGShift.fit", lambda X_target, y_target: SGShift(n_lambdas=5).fit(X_target, y_target, source_model=_MODEL),
          good=lambda: {"X_target": _D.X_target.copy(), "y_target": _D.y_target.copy()},
          arrays=["X_target", "y_target"], aligned=["X_target", "y_target"],
          skip=["y_target:one_sample", "y_target:inf"]),
    Entry("SGShift.fit(offset=)", lambda offset: SGShift(n_lambdas=5).fit(_D.X_target, _D.y_target, offset=offset),
          good=lambda: {"offset": source_offset(_MODEL, _D.X_target, "classification")},
          arrays=["offset"], aligned=["offset"], skip=["one_sample"]),
    Entry("SGShift.predict", lambda X: _FIT.predict(X, offset=np.zeros(len(X))),
          good=lambda: {"X": _D.X_target[:10].copy()}, arrays=["X"], accepts=["one_sample"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
