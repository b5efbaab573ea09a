"""Bad inputs over cdal's public entry points: the shared sweep plus ``project_simplex``
with NaN (it used to pass NaN through)."""

import numpy as np
import pytest
from sweep import Entry, check_case, sweep_cases

from icml26.cdal import CDAL, make_fair_multiview, project_simplex

_DATA = make_fair_multiview(n=120, seed=0)
_MODEL = CDAL(4, random_state=0).fit(_DATA.views, sensitive=_DATA.groups)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_project_simplex_rejects_non_finite_values(bad):
    V = np.array([[0.2, 0.8], [0.5, bad]])
    with pytest.raises(ValueError, match="V contains NaN"):
        project_simplex(V)


def test_project_simplex_of_finite_rows_is_unchanged():
    out = project_simplex(np.array([[0.5, 0.5], [2.0, 0.0], [-1.0, -3.0]]))
    assert out.tolist() == [[0.5, 0.5], [1.0, 0.0], [1.0, 0.0]]


def _views():
    return {"views": [X.copy() for X in _DATA.views], "sensitive": _DATA.groups.copy()}


ENTRIES = [
    Entry("project_simplex", lambda V: project_simplex(V),
          good=lambda: {"V": np.random.default_rng(0).normal(size=(5, 3))}, arrays=["V"],
          accepts=["one_sample", "mismatched"], skip=["empty"]),
    Entry("CDAL.fit", lambda views, sensitive: CDAL(4, random_state=0).fit(views, sensitive=sensitive),
          good=_views, arrays=["views", "sensitive"], aligned=["views", "sensitive"],
          names={"views": ["views[0]"]},
          # sensitive:one_sample cuts the views too (covered by views:one_sample)
          skip=["sensitive:inf", "views:mismatched", "sensitive:one_sample"]),
    Entry("CDAL.predict", lambda views: _MODEL.predict(views),
          good=lambda: {"views": [X[:20].copy() for X in _DATA.views]}, arrays=["views"],
          names={"views": ["views[0]"]}, accepts=["one_sample"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
