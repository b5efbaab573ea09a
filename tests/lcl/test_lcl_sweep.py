"""Bad inputs over lcl's public entry points (the shared sweep of #33)."""

import numpy as np
import pytest
from sweep import Entry, check_case, sweep_cases

from icml26.lcl import LCL, FateCompositionRegressor, simulate_lineage_tracing

TINY = dict(hidden_dims=(16, 8), embedding_dim=4, batch_size=6, max_epochs=1, warmup_epochs=0,
            grad_accum_steps=1, val_fraction=0.0, n_unlabeled_per_batch=2)
_DATA = simulate_lineage_tracing(n_clones=12, n_genes=300, seed=3)
_X = np.asarray(_DATA.X.toarray() if hasattr(_DATA.X, "toarray") else _DATA.X, dtype=float)
_CLONE = np.asarray(_DATA.clone)
_MODEL = LCL(**TINY, random_state=0).fit(_X, _CLONE)
_RNG = np.random.default_rng(0)
_Z = _RNG.standard_normal((60, 4))
_Y = _RNG.dirichlet(np.ones(3), size=60)

ENTRIES = [
    Entry("LCL.fit", lambda X, clone_ids: LCL(**TINY, random_state=0).fit(X, clone_ids),
          good=lambda: {"X": _X.copy(), "clone_ids": _CLONE.copy()}, arrays=["X", "clone_ids"],
          aligned=["X", "clone_ids"], skip=["clone_ids:nan", "clone_ids:inf", "clone_ids:wrong_dtype",
                                            "clone_ids:one_sample"]),
    Entry("LCL.transform", lambda X: _MODEL.transform(X), good=lambda: {"X": _X[:20].copy()}, arrays=["X"],
          accepts=["one_sample"]),
    Entry("FateCompositionRegressor.fit", lambda Z, Y: FateCompositionRegressor(hidden=4, max_epochs=2,
                                                                                val_fraction=0.0).fit(Z, Y),
          good=lambda: {"Z": _Z.copy(), "Y": _Y.copy()}, arrays=["Z", "Y"], aligned=["Z", "Y"],
          accepts=["one_sample"]),  # a regression head can be fitted on one cell
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
