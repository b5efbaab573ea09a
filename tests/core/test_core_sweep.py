"""The bad-input sweep helper itself: it passes a careful entry point and catches a careless one."""

import numpy as np
import pytest

from icml26.core.validation import check_matrix, check_same_length, check_vector
from sweep import CASES, Entry, check_case, sweep_cases

X = np.arange(12.0).reshape(6, 2)
Y = np.arange(6.0)


def careful(X, y):
    X = check_matrix(X, "X", min_samples=2)
    y = check_vector(y, "y")
    check_same_length(X=X, y=y)
    if X.shape[1] != 2:
        raise ValueError(f"X must have 2 features, got {X.shape[1]}")
    return float(X.mean() + y.mean())


def careless(X, y):
    return float(np.mean(X) + np.mean(y))


GOOD = Entry("careful", careful, lambda: {"X": X, "y": Y}, arrays=["X", "y"], aligned=["X", "y"])


@pytest.mark.parametrize("entry, arg, case", sweep_cases([GOOD]))
def test_a_careful_entry_point_passes_every_case(entry, arg, case):
    check_case(entry, arg, case)


@pytest.mark.parametrize("case", ["nan", "inf", "empty", "one_sample", "mismatched"])
def test_a_careless_entry_point_is_caught(case):
    bad = Entry("careless", careless, lambda: {"X": X, "y": Y}, arrays=["X", "y"],
                aligned=["X", "y"])
    with pytest.raises(AssertionError):
        check_case(bad, "X", case)


def test_an_error_that_does_not_name_the_argument_is_caught():
    def vague(X, y):
        raise ValueError("bad input")

    with pytest.raises(AssertionError, match="without naming 'X'"):
        check_case(Entry("vague", vague, lambda: {"X": X, "y": Y}, arrays=["X"]), "X", "nan")


def test_accepted_cases_must_return_finite_values():
    e = Entry("mean", careless, lambda: {"X": X, "y": Y}, arrays=["X"], accepts=["nan"])
    with pytest.raises(AssertionError, match="non-finite"):
        check_case(e, "X", "nan")


def test_torch_inputs_are_spoilt_too():
    torch = pytest.importorskip("torch")
    lin = torch.nn.Linear(2, 1)

    def forward(x):
        from icml26.core.validation import check_tensor

        return lin(check_tensor(x, "x", ndim=2, floating=True))

    e = Entry("linear", forward, lambda: {"x": torch.ones(4, 2)}, arrays=["x"],
              accepts=["one_sample"], skip=["empty", "mismatched"])
    for case in ("nan", "inf", "one_sample", "wrong_dtype"):
        check_case(e, "x", case)
    assert set(CASES) >= {"nan", "inf", "empty", "one_sample", "wrong_dtype", "mismatched"}
