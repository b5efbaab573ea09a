"""Bad inputs over fedssa's public functions (#33): the shared sweep plus the inputs the issue
found slipping through (a NaN or all-zero signature at JS distance 0 from every row; Gaussian
KL on shapes that do not broadcast failing with torch's broadcasting message)."""

import numpy as np
import pytest
import torch
from sweep import Entry, check_case, sweep_cases

from icml26.fedssa import gaussian_kl, gaussian_w2, js_distance_matrix, moment_match


def _signatures():
    return np.random.default_rng(0).dirichlet(np.ones(8), size=4)


@pytest.mark.parametrize("row", [np.full(8, np.nan), np.zeros(8), -np.ones(8)])
def test_js_distance_rejects_a_row_that_is_not_a_distribution(row):
    sig = _signatures()
    sig[2] = row
    with pytest.raises(ValueError, match="signatures row 2"):
        js_distance_matrix(sig)


def test_js_distance_of_good_rows_is_unchanged():
    sig = _signatures()
    d = js_distance_matrix(sig)
    assert np.allclose(d, d.T) and (d[~np.eye(4, dtype=bool)] > 0).all()


@pytest.mark.parametrize("fn", [gaussian_kl, gaussian_w2])
@pytest.mark.parametrize("which", ["s1", "mu2", "s2"])
def test_gaussians_of_mismatched_shapes_name_the_argument(fn, which):
    args = {k: torch.rand(3, 4) + 0.5 for k in ("mu1", "s1", "mu2", "s2")}
    args[which] = torch.rand(3, 5) + 0.5
    with pytest.raises(ValueError, match=which):
        fn(**args)


def _gauss():
    g = torch.Generator().manual_seed(0)
    return {k: torch.rand(3, 4, generator=g) + 0.5 for k in ("mu1", "s1", "mu2", "s2")}


_GAUSS_ARGS = ["mu1", "s1", "mu2", "s2"]
# NaN/inf are a loss function's business to propagate (as torch's losses do, and autograd
# reports them); a one-row batch is a valid batch.
_LOSS_SKIP = ["nan", "inf"]

ENTRIES = [
    Entry("js_distance_matrix", lambda signatures: js_distance_matrix(signatures),
          good=lambda: {"signatures": _signatures()}, arrays=["signatures"],
          accepts=["one_sample", "mismatched"]),
    Entry("gaussian_kl", lambda mu1, s1, mu2, s2: gaussian_kl(mu1, s1, mu2, s2), good=_gauss,
          arrays=_GAUSS_ARGS, aligned=_GAUSS_ARGS, accepts=["one_sample"], skip=_LOSS_SKIP),
    Entry("gaussian_w2", lambda mu1, s1, mu2, s2: gaussian_w2(mu1, s1, mu2, s2), good=_gauss,
          arrays=_GAUSS_ARGS, aligned=_GAUSS_ARGS, accepts=["one_sample"], skip=_LOSS_SKIP),
    Entry("moment_match", lambda means, stds, weights: moment_match(means, stds, weights),
          good=lambda: {"means": np.random.default_rng(0).normal(size=(3, 4)),
                        "stds": np.ones((3, 4)), "weights": np.array([1.0, 2.0, 3.0])},
          arrays=["means", "stds", "weights"], aligned=["means", "stds", "weights"],
          accepts=["one_sample"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
