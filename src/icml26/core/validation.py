"""Input checks shared across methods, with messages that name the argument.

Thin wrappers over :mod:`sklearn.utils.validation`: they add the argument's name to the
message and reject what scikit-learn would let through for our purposes (empty input,
wrong ndim, mismatched lengths, out-of-range scalars).

Examples
--------
>>> import numpy as np
>>> from icml26.core.validation import check_matrix
>>> check_matrix([[1.0, 2.0]], "X").shape
(1, 2)
>>> check_matrix([[np.nan]], "X")
Traceback (most recent call last):
...
ValueError: X contains NaN or infinity; expected finite values
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Iterable, Sequence

import numpy as np
from sklearn.utils.validation import check_array, check_random_state

__all__ = [
    "check_matrix",
    "check_vector",
    "check_same_length",
    "check_int",
    "check_scalar_in",
    "check_probability",
    "check_choice",
    "check_finite_array",
    "check_random_state",
    "check_tensor",
    "renamed_seed",
]


def check_finite_array(array: Any, name: str, *, dtype=float, ndim: int | None = None,
                       allow_empty: bool = False, allow_nan: bool = False) -> np.ndarray:
    """Convert to a numpy array, rejecting NaN/inf, wrong ndim and empty input."""
    try:
        arr = np.asarray(array, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be array-like of numbers, got {type(array).__name__}") from exc
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if not allow_empty and arr.size == 0:
        raise ValueError(f"{name} is empty; expected at least one value")
    if not allow_nan and np.issubdtype(arr.dtype, np.number) and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return arr


def check_matrix(X: Any, name: str = "X", *, min_samples: int = 1, min_features: int = 1,
                 dtype=np.float64, allow_nan: bool = False) -> np.ndarray:
    """A 2-D finite float array with at least ``min_samples`` rows (sklearn's check_array)."""
    if X is None:
        raise ValueError(f"{name} is None; expected a 2-D array")
    try:
        return check_array(X, dtype=dtype, ensure_2d=True,
                           ensure_all_finite="allow-nan" if allow_nan else True,
                           ensure_min_samples=min_samples, ensure_min_features=min_features,
                           input_name=name)
    except ValueError as exc:
        msg = str(exc)
        if "NaN" in msg or "infinity" in msg:
            raise ValueError(f"{name} contains NaN or infinity; expected finite values") from None
        if "Expected 2D array" in msg:
            shape = np.shape(X)
            raise ValueError(f"{name} must be 2-dimensional (n_samples, n_features), "
                             f"got shape {shape}") from None
        raise ValueError(f"{name}: {msg}") from None


def check_vector(y: Any, name: str = "y", *, dtype=np.float64, allow_nan: bool = False,
                 min_length: int = 1) -> np.ndarray:
    """A 1-D finite array (a column vector of shape (n, 1) is raveled)."""
    arr = check_finite_array(y, name, dtype=dtype, allow_nan=allow_nan, allow_empty=min_length == 0)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] < min_length:
        raise ValueError(f"{name} has {arr.shape[0]} values; expected at least {min_length}")
    return arr


def check_same_length(**arrays: Any) -> int:
    """All named arrays have the same first dimension; returns it."""
    lengths = {name: len(a) for name, a in arrays.items() if a is not None}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        raise ValueError(f"inconsistent lengths: {detail}; expected the same number of samples")
    return next(iter(lengths.values()), 0)


def check_int(value: Any, name: str, *, min_value: int | None = None,
              max_value: int | None = None) -> int:
    """An integer (not bool) within optional inclusive bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if min_value is not None and value < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {value}")
    if max_value is not None and value > max_value:
        raise ValueError(f"{name} must be <= {max_value}, got {value}")
    return value


def check_scalar_in(value: Any, name: str, *, low: float | None = None, high: float | None = None,
                    low_inclusive: bool = True, high_inclusive: bool = True) -> float:
    """A finite real number within an interval."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    lo_ok = low is None or (value >= low if low_inclusive else value > low)
    hi_ok = high is None or (value <= high if high_inclusive else value < high)
    if not (lo_ok and hi_ok):
        left = "[" if low_inclusive else "("
        right = "]" if high_inclusive else ")"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ValueError(f"{name} must be in {left}{lo}, {hi}{right}, got {value:g}")
    return value


def check_probability(value: Any, name: str, *, open_interval: bool = True) -> float:
    """A level such as alpha or delta: in (0, 1) (or [0, 1] when ``open_interval=False``)."""
    return check_scalar_in(value, name, low=0.0, high=1.0, low_inclusive=not open_interval,
                           high_inclusive=not open_interval)


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """``value`` is one of ``choices``."""
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_tensor(tensor: Any, name: str, *, ndim: int | Sequence[int] | None = None,
                 finite: bool = True, floating: bool = False, like=None):
    """A torch tensor with the given ndim(s) and (by default) finite values.

    ``floating=True`` also requires a real floating dtype (not complex, int or bool);
    ``like`` (a tensor or a module's parameter) requires that dtype exactly, so a float64
    input to a float32 module gets a clear error instead of one from deep inside matmul.
    """
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if floating and (not tensor.is_floating_point()):
        raise TypeError(f"{name} must be a real floating-point tensor, got dtype {tensor.dtype}")
    if like is not None and tensor.dtype != like.dtype:
        raise TypeError(f"{name} has dtype {tensor.dtype} but the module's parameters are "
                        f"{like.dtype}; convert one of them (e.g. module.to({tensor.dtype}))")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if tensor.ndim not in allowed:
            raise ValueError(f"{name} must have ndim in {allowed}, got shape {tuple(tensor.shape)}")
    if finite and tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return tensor


def renamed_seed(random_state: Any, seed: Any, owner: str, *, stacklevel: int = 3) -> Any:
    """``random_state``, or the deprecated ``seed`` alias when one was given.

    scikit-learn-style estimators take ``random_state``; those that took ``seed`` before
    accept it still, with a :class:`FutureWarning` (scikit-learn's deprecation convention).

    Examples
    --------
    >>> renamed_seed(3, None, "Probe")
    3
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     value = renamed_seed(0, 7, "Probe")
    >>> value, w[0].category.__name__
    (7, 'FutureWarning')
    """
    if seed is None:
        return random_state
    warnings.warn(f"{owner}(seed=...) is deprecated and will be removed; use "
                  f"random_state=... instead", FutureWarning, stacklevel=stacklevel)
    return seed
