import numpy as np
import pytest

from icml26.core.stats import format_mean_std, loglog_slope, summary_table
from icml26.core.validation import (check_choice, check_int, check_matrix, check_probability,
                                    check_same_length, check_scalar_in, check_tensor,
                                    check_vector)


def test_check_matrix_names_argument_on_nan():
    with pytest.raises(ValueError, match="Z contains NaN"):
        check_matrix([[1.0, np.nan]], "Z")


def test_check_matrix_rejects_1d_with_shape():
    with pytest.raises(ValueError, match=r"X must be 2-dimensional.*\(3,\)"):
        check_matrix([1.0, 2.0, 3.0], "X")


def test_check_matrix_rejects_empty():
    with pytest.raises(ValueError, match="X"):
        check_matrix(np.empty((0, 3)), "X")


def test_check_vector_ravels_column_and_rejects_matrix():
    assert check_vector([[1.0], [2.0]], "y").shape == (2,)
    with pytest.raises(ValueError, match="y must be 1-dimensional"):
        check_vector([[1.0, 2.0], [3.0, 4.0]], "y")


def test_check_same_length_names_each_argument():
    with pytest.raises(ValueError, match="X has 3, y has 2"):
        check_same_length(X=[1, 2, 3], y=[1, 2])


def test_scalar_checks():
    assert check_int(3, "k", min_value=1) == 3
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        check_int(0, "k", min_value=1)
    with pytest.raises(TypeError, match="k must be an integer"):
        check_int(True, "k")
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\)"):
        check_probability(1.0, "alpha")
    with pytest.raises(ValueError, match="lr must be finite"):
        check_scalar_in(float("nan"), "lr", low=0)
    with pytest.raises(ValueError, match="mode must be one of"):
        check_choice("x", "mode", ["a", "b"])


def test_check_tensor_rejects_nan_and_ndim():
    import torch

    with pytest.raises(ValueError, match="logits contains NaN"):
        check_tensor(torch.tensor([float("nan")]), "logits")
    with pytest.raises(ValueError, match="ndim"):
        check_tensor(torch.zeros(2), "logits", ndim=2)


def test_stats_helpers_match_direct_computation():
    assert format_mean_std([1.0, 3.0]) == f"2.000 ± {np.std([1.0, 3.0], ddof=1):.3f}"
    assert loglog_slope([1, 10, 100], [2, 20, 200]) == pytest.approx(1.0)
    table = summary_table([{"m": "a", "v": 1.0}, {"m": "a", "v": 3.0}, {"m": "b", "v": 2.0}],
                          "m", ["v"])
    assert list(table["m"]) == ["a", "b"] and list(table["seeds"]) == [2, 1]
