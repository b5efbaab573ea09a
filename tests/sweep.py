"""A property-style sweep of bad inputs over the public entry points of every method (#33).

Each method's tests list their entry points once (``tests/<slug>/test_<slug>_sweep.py``)::

    from sweep import Entry, sweep_cases, check_case

    ENTRIES = [
        Entry("CDAL.fit", lambda views, sensitive: CDAL(3).fit(views, sensitive=sensitive),
              good=lambda: {"views": [X1, X2], "sensitive": s}, arrays=["views", "sensitive"],
              aligned=["views", "sensitive"]),
    ]

    @pytest.mark.parametrize("entry, arg, case", sweep_cases(ENTRIES))
    def test_bad_input(entry, arg, case):
        check_case(entry, arg, case)

For every array argument the sweep builds the good call's inputs, spoils one argument by
one *case* and calls the entry point:

``nan`` / ``inf``  one element of a float input set to NaN / +inf;
``empty``          zero rows (first axis 0);
``one_sample``     the first row only, and the same for the arguments aligned with it;
``wrong_dtype``    strings (numpy) or a complex / integer tensor (torch);
``mismatched``     one row more than the arguments aligned with it (or, for a single
                   input, one column more than the entry point was fitted/built for).

The entry point must raise ``ValueError`` or ``TypeError`` whose message names the spoilt
argument (``Entry.names`` can give aliases, e.g. ``views[0]``). A case that is legitimately
accepted (one sample for ``transform``) is listed in ``Entry.accepts``: then the call must
succeed and return only finite numbers. A case that does not apply to an argument (``inf``
for an integer label vector) is listed in ``Entry.skip`` as ``"arg:case"`` or ``"case"``.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

CASES = ("nan", "inf", "empty", "one_sample", "wrong_dtype", "mismatched")


@dataclass
class Entry:
    """One public entry point and how to call it with good inputs."""

    name: str
    call: Callable[..., Any]
    good: Callable[[], dict]
    arrays: list
    aligned: list = field(default_factory=list)
    names: dict = field(default_factory=dict)
    accepts: list = field(default_factory=list)
    skip: list = field(default_factory=list)
    cases: tuple = CASES

    def __repr__(self) -> str:  # short pytest ids
        return self.name


def sweep_cases(entries: list[Entry]) -> list:
    """(entry, argument, case) triples, for ``pytest.mark.parametrize``."""
    import pytest

    out = []
    for e in entries:
        for arg in e.arrays:
            for case in e.cases:
                if case in e.skip or f"{arg}:{case}" in e.skip:
                    continue
                out.append(pytest.param(e, arg, case, id=f"{e.name}-{arg}-{case}"))
    return out


# -- spoiling one input --------------------------------------------------------------------

def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _set_one(x, value):
    if isinstance(x, (list, tuple)) and x and not np.isscalar(x[0]) and _is_arraylike(x[0]):
        return type(x)([_set_one(x[0], value), *x[1:]])
    if _is_torch(x):
        import torch

        y = x.detach().clone()
        if not y.is_floating_point():
            y = y.to(torch.get_default_dtype())
        y.view(-1)[y.numel() // 2] = value
        return y
    y = np.array(x, dtype=float, copy=True)
    y.reshape(-1)[y.size // 2] = value
    return y


def _is_arraylike(x) -> bool:
    return _is_torch(x) or isinstance(x, np.ndarray) or (
        isinstance(x, (list, tuple)) and len(x) > 0)


def _rows(x, n):
    """The first ``n`` rows (first axis) of ``x``; a list of arrays is cut element-wise."""
    if isinstance(x, (list, tuple)) and x and _is_arraylike(x[0]) and not np.isscalar(x[0]) \
            and np.ndim(x[0]) >= 2:
        return type(x)([_rows(v, n) for v in x])
    if _is_torch(x):
        return x[:n].clone()
    return np.asarray(x)[:n].copy()


def _more_rows(x):
    if isinstance(x, (list, tuple)) and x and _is_arraylike(x[0]) and not np.isscalar(x[0]) \
            and np.ndim(x[0]) >= 2:
        return type(x)([_more_rows(v) for v in x])
    if _is_torch(x):
        import torch

        return torch.cat([x, x[:1]], dim=0)
    arr = np.asarray(x)
    return np.concatenate([arr, arr[:1]], axis=0)


def _more_cols(x):
    if isinstance(x, (list, tuple)) and x and _is_arraylike(x[0]) and not np.isscalar(x[0]):
        return type(x)([_more_cols(x[0]), *x[1:]])
    if _is_torch(x):
        import torch

        return torch.cat([x, x[..., :1]], dim=-1)
    arr = np.asarray(x)
    if arr.ndim < 2:
        return np.concatenate([arr, arr[:1]])
    return np.concatenate([arr, arr[..., :1]], axis=-1)


def _wrong_dtype(x):
    if isinstance(x, (list, tuple)) and x and _is_arraylike(x[0]) and not np.isscalar(x[0]):
        return type(x)([_wrong_dtype(x[0]), *x[1:]])
    if _is_torch(x):
        import torch

        return x.to(torch.complex64) if x.is_floating_point() else x.to(torch.float64) + 0.5j
    arr = np.asarray(x)
    return np.full(arr.shape, "a", dtype=object)


def spoil(entry: Entry, arg: str, case: str) -> dict:
    """The good inputs of ``entry`` with ``arg`` spoilt by ``case``."""
    kwargs = entry.good()
    x = kwargs[arg]
    if case == "nan":
        kwargs[arg] = _set_one(x, math.nan)
    elif case == "inf":
        kwargs[arg] = _set_one(x, math.inf)
    elif case == "empty":
        kwargs[arg] = _rows(x, 0)
    elif case == "one_sample":
        for name in ([arg] + [a for a in entry.aligned if a != arg]
                     if arg in entry.aligned else [arg]):
            kwargs[name] = _rows(kwargs[name], 1)
    elif case == "wrong_dtype":
        kwargs[arg] = _wrong_dtype(x)
    elif case == "mismatched":
        if arg in entry.aligned and len(entry.aligned) > 1:
            kwargs[arg] = _more_rows(x)
        else:
            kwargs[arg] = _more_cols(x)
    else:
        raise ValueError(f"unknown case {case!r}")
    return kwargs


def _finite(out) -> bool:
    if out is None or isinstance(out, (str, bool)):
        return True
    if _is_torch(out):
        return bool(out.detach().isfinite().all()) if out.is_floating_point() else True
    if isinstance(out, dict):
        return all(_finite(v) for v in out.values())
    if isinstance(out, (list, tuple)):
        return all(_finite(v) for v in out)
    if isinstance(out, (int, float, np.number, np.ndarray)):
        arr = np.asarray(out)
        return not np.issubdtype(arr.dtype, np.number) or bool(np.isfinite(arr).all())
    return True  # an estimator (fit returns self) or another object


def check_case(entry: Entry, arg: str, case: str) -> None:
    """Call ``entry`` with ``arg`` spoilt by ``case`` and check the outcome (see module doc)."""
    kwargs = spoil(entry, arg, case)
    names = [arg, *entry.names.get(arg, [])]
    if case in entry.accepts or f"{arg}:{case}" in entry.accepts:
        out = entry.call(**copy.copy(kwargs))
        assert _finite(out), f"{entry.name}({arg}: {case}) was accepted but returned non-finite values"
        return
    try:
        out = entry.call(**kwargs)
    except (ValueError, TypeError) as exc:
        text = str(exc)
        assert any(n in text for n in names), (
            f"{entry.name}({arg}: {case}) raised {type(exc).__name__} without naming "
            f"{' or '.join(repr(n) for n in names)}: {text!r}")
        return
    except Exception as exc:  # noqa: BLE001 - the wrong kind of error is the finding
        raise AssertionError(f"{entry.name}({arg}: {case}) raised {type(exc).__name__} "
                             f"(want ValueError/TypeError naming {arg!r}): {exc}") from exc
    raise AssertionError(f"{entry.name}({arg}: {case}) was accepted silently"
                         + ("" if _finite(out) else " and returned non-finite values"))
