"""Bad inputs over fsba's array functions (#33): the shared sweep plus ``sosp_certificate``
with a non-square Hessian (numpy's broadcast message used to name nothing)."""

import numpy as np
import pytest
from sweep import Entry, check_case, sweep_cases

from icml26.fsba import cubic_step, sosp_certificate


@pytest.mark.parametrize("hess", [np.eye(3)[:2], np.eye(3), np.ones(3)])
def test_sosp_certificate_rejects_a_hessian_of_the_wrong_shape(hess):
    with pytest.raises(ValueError, match="hess must be a square"):
        sosp_certificate(np.zeros(2), hess, eps=1e-3, rho=1.0)


def test_sosp_certificate_rejects_nan():
    with pytest.raises(ValueError, match="hess contains NaN"):
        sosp_certificate(np.zeros(2), np.array([[1.0, np.nan], [0.0, 1.0]]), eps=1e-3, rho=1.0)
    with pytest.raises(ValueError, match="grad contains NaN"):
        sosp_certificate(np.array([0.0, np.nan]), np.eye(2), eps=1e-3, rho=1.0)


def test_sosp_certificate_of_a_saddle_is_unchanged():
    out = sosp_certificate(np.zeros(2), np.diag([-1.0, 2.0]), eps=1e-3, rho=1.0)
    assert out == {"grad_norm": 0.0, "lam_min": -1.0, "is_sosp": False}


def _problem():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4))
    return {"grad": rng.normal(size=4), "hess": A + A.T}


ENTRIES = [
    Entry("sosp_certificate", lambda grad, hess: sosp_certificate(grad, hess, eps=1e-3, rho=1.0),
          good=_problem, arrays=["grad", "hess"], aligned=["grad", "hess"]),
    Entry("cubic_step", lambda G, H: cubic_step(G, H, M=1.0),
          good=lambda: {"G": _problem()["grad"], "H": _problem()["hess"]}, arrays=["G", "H"],
          aligned=["G", "H"]),
]


@pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
def test_bad_input(entry, arg, case):
    check_case(entry, arg, case)
