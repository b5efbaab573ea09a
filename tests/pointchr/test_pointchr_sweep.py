"""Bad inputs over pointchr's public entry points (the shared sweep of #33): NaN, inf, empty,
one-sample, wrong-dtype and mismatched inputs give a ValueError/TypeError naming the argument."""

import numpy as np
import pytest
import torch
from sweep import Entry, check_case, sweep_cases

from icml26.pointchr import (CurvatureHyperbolicRectifier, PointCHRClassifier, PointNetLite, PoincareOps,
                             make_fine_detail_dataset, quantile_gate, surface_variation)


def _clouds(b=2, n=32, seed=0):
    return torch.from_numpy(make_fine_detail_dataset(1, n, families=("rounded_cube",), seed=seed)
                            .points[:b]).float()


def _chr_inputs():
    gen = torch.Generator().manual_seed(0)
    xyz = _clouds()
    return {"xyz": xyz, "feats": torch.randn(2, 32, 8, generator=gen),
            "curvature": surface_variation(xyz, 8)}


_CHR = CurvatureHyperbolicRectifier(8, hyp_dim=4, k=8)
_NET = PointNetLite(4, use_chr=True, k=8).eval()
_X, _Y, _, _ = make_fine_detail_dataset(2, 24, families=("rounded_cube",), seed=0)

ENTRIES = [
    Entry("surface_variation", lambda points: surface_variation(points, 8),
          good=lambda: {"points": _clouds()}, arrays=["points"], accepts=["one_sample"],
          skip=["mismatched"]),
    Entry("CurvatureHyperbolicRectifier.forward", lambda xyz, feats, curvature: _CHR(xyz, feats, curvature),
          good=_chr_inputs, arrays=["xyz", "feats", "curvature"], aligned=["xyz", "feats", "curvature"],
          accepts=["one_sample"]),
    Entry("PointNetLite.forward", lambda xyz, curvature: _NET(xyz, curvature),
          good=lambda: {"xyz": _clouds(), "curvature": surface_variation(_clouds(), 8)},
          arrays=["xyz", "curvature"], aligned=["xyz", "curvature"], accepts=["one_sample"]),
    Entry("PointCHRClassifier.fit", lambda X, y: PointCHRClassifier(epochs=1, k=8).fit(X, y),
          good=lambda: {"X": _X, "y": _Y}, arrays=["X", "y"], aligned=["X", "y"],
          skip=["y:nan", "y:inf", "y:wrong_dtype", "X:mismatched"]),
    Entry("quantile_gate", lambda curvature: quantile_gate(curvature),
          good=lambda: {"curvature": torch.rand(200, generator=torch.Generator().manual_seed(0))},
          arrays=["curvature"], skip=["one_sample", "mismatched"]),
    Entry("PoincareOps.einstein_midpoint", lambda x, weights: PoincareOps.einstein_midpoint(x, weights=weights),
          good=lambda: {"x": PoincareOps.expmap0(torch.randn(2, 16, 4) * 0.5), "weights": torch.rand(2, 16)},
          arrays=["weights"], aligned=["weights"], accepts=["one_sample"], skip=["nan", "inf"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)


def test_quantile_gate_of_one_point_is_rejected():
    with pytest.raises(ValueError, match="curvature"):
        quantile_gate(np.array([0.3]))
