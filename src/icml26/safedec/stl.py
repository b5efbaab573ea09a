"""Signal Temporal Logic with quantitative (robustness) semantics, batched in NumPy or torch.

The STL core used by SafeDec (Kapoor et al., ICML 2026) to decide which action tokens
keep the predicted state trajectory inside a specification. Traces are arrays shaped
``(..., T, n)`` (any leading batch dimensions, ``T`` time steps, ``n`` state
dimensions), given as ``numpy.ndarray`` or ``torch.Tensor``; results keep the array
library of the input (torch results are differentiable almost everywhere).

Semantics (discrete time, spec §2.2)::

    ρ(μ, x, t)         = h_μ(x_t)
    ρ(¬φ, x, t)        = −ρ(φ, x, t)
    ρ(φ ∧ ψ, x, t)     = min(ρ(φ, x, t), ρ(ψ, x, t))          (∨: max)
    ρ(G_[a,b] φ, x, t) = min_{t' ∈ [t+a, t+b]} ρ(φ, x, t')    (F: max)
    ρ(φ U_[a,b] ψ, x, t) = max_{t' ∈ [t+a, t+b]} min(ρ(ψ, x, t'), min_{t'' ∈ [t, t')} ρ(φ, x, t''))

Resolution (not from the paper): windows are truncated at the end of the trace ``N − 1``;
an empty window gives ``max = −inf`` and ``min = +inf``; ``b=None`` means "to the end of
the trace". A trace *satisfies* a formula iff ``ρ ≥ 0`` (:func:`is_satisfied`, the one
comparison used everywhere, for masking and for metrics).

References
----------
P. Kapoor, A. Ganlath, M. Clifford, C. Liu, S. Scherer, E. Kang. "SafeDec: Constrained
Decoding for Safe Autoregressive Generalist Robot Navigation Policies", ICML 2026
(arXiv:2509.01728).

Examples
--------
>>> import numpy as np
>>> from icml26.safedec import Predicate, Always, Eventually, And
>>> far = Predicate("far", lambda x: x[..., 0] - 0.5)
>>> near_goal = Predicate("near_goal", lambda x: 0.3 - x[..., 1])
>>> phi = And(Always(far), Eventually(near_goal, 0, 10))
>>> trace = np.array([[1.0, 2.0], [0.2, 1.0], [0.9, 0.1]])
>>> float(phi.robustness(trace))
-0.3
"""

from __future__ import annotations

import numbers
import warnings
from typing import Callable, Sequence

import numpy as np

__all__ = [
    "Formula",
    "Predicate",
    "Not",
    "And",
    "Or",
    "Implies",
    "Always",
    "Eventually",
    "Until",
    "SafetyMonitor",
    "InfeasibleSpecError",
    "is_satisfied",
    "invariant_parts",
]


class InfeasibleSpecError(RuntimeError):
    """No action (or no start state) can satisfy the specification.

    Raised by decoders built with ``strict=True`` (and by :func:`constrain_logits`) instead
    of executing a fallback token, following Python's convention of an exception subclass per
    failure kind (a :class:`RuntimeError`: the inputs are valid, the world admits no safe move).

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728 (HCD's
    mask is empty: no token keeps the invariant part of the spec).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from icml26.safedec import Always, Predicate, SafeDecoder
    >>> class Hop:  # 1-D robot that must move: tokens left, right
    ...     def predict_all(self, s):
    ...         return s[:, None, :] + np.array([[-1.0], [1.0]])[None]
    >>> spec = Always(Predicate("near 2", lambda x: 0.5 - np.abs(x[..., 0] - 2.0)))
    >>> dec = SafeDecoder(None, spec, Hop(), strict=True)
    >>> dec.decode(torch.zeros(1, 2), np.array([[2.0]]))
    Traceback (most recent call last):
        ...
    icml26.safedec.stl.InfeasibleSpecError: every token violates the specification in rows [0]
    """


def _is_torch(x) -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return False
    return isinstance(x, torch.Tensor)


def is_satisfied(robustness):
    """The single satisfaction test ``ρ ≥ 0`` shared by masking and metrics.

    Parameters
    ----------
    robustness : array or tensor
        Robustness values.

    Returns
    -------
    array or tensor of bool
        ``robustness >= 0`` (a boundary value of exactly 0 counts as satisfied).

    Examples
    --------
    >>> import numpy as np
    >>> is_satisfied(np.array([-0.1, 0.0, 0.2])).tolist()
    [False, True, True]
    """
    return robustness >= 0


# -- array helpers (numpy / torch) ---------------------------------------------------

def _full_like_time(x, length: int, value: float):
    shape = tuple(x.shape[:-1]) + (length,)
    if _is_torch(x):
        import torch

        return torch.full(shape, value, dtype=x.dtype, device=x.device)
    return np.full(shape, value, dtype=x.dtype)


def _cat_time(parts):
    if _is_torch(parts[0]):
        import torch

        return torch.cat(parts, dim=-1)
    return np.concatenate(parts, axis=-1)


def _minimum(x, y):
    if _is_torch(x):
        import torch

        return torch.minimum(x, y)
    return np.minimum(x, y)


def _maximum(x, y):
    if _is_torch(x):
        import torch

        return torch.maximum(x, y)
    return np.maximum(x, y)


def _reverse_cum(x, kind: str):
    """Suffix min/max along the last axis: out[t] = min/max(x[t:])."""
    if _is_torch(x):
        import torch

        flipped = torch.flip(x, dims=[-1])
        acc = torch.cummin(flipped, dim=-1) if kind == "min" else torch.cummax(flipped, dim=-1)
        return torch.flip(acc.values, dims=[-1])
    ufunc = np.minimum if kind == "min" else np.maximum
    return ufunc.accumulate(x[..., ::-1], axis=-1)[..., ::-1]


def _block_cum(x, width: int, kind: str, reverse: bool):
    """Running min/max inside consecutive blocks of ``width`` samples along the last axis.

    ``x.shape[-1]`` is a multiple of ``width``; ``reverse`` runs each block back to front.
    Reversing the whole axis reverses the block order and each block's order at once, so
    the backward pass is one forward pass over a reversed view (NumPy: no copies).
    """
    shape = tuple(x.shape)
    blocks = shape[:-1] + (shape[-1] // width, width)
    if _is_torch(x):
        import torch

        src = torch.flip(x, dims=[-1]) if reverse else x
        fn = torch.cummin if kind == "min" else torch.cummax
        acc = fn(src.reshape(blocks), dim=-1).values.reshape(shape)
        return torch.flip(acc, dims=[-1]) if reverse else acc
    ufunc = np.minimum if kind == "min" else np.maximum
    src = x[..., ::-1] if reverse else x
    acc = ufunc.accumulate(src.reshape(blocks), axis=-1).reshape(shape)
    return acc[..., ::-1] if reverse else acc


def _sliding_reduce(x, width: int, n_out: int, kind: str, empty: float):
    """out[t] = min/max(x[t : t+width]) for t < n_out, in O(len(x)) for any width.

    The van Herk / Gil-Werman algorithm, vectorised: cut ``x`` into blocks of ``width``
    samples, take the running reduction forward (g) and backward (h) inside each block;
    a window starting at ``t`` covers the tail of one block and the head of the next, so
    ``out[t] = combine(h[t], g[t + width − 1])``. Each output is one reduction of two
    entries of ``x``, so values (and torch gradients) equal the direct window reduction.
    """
    if width == 1:
        return x[..., :n_out]
    n_blocks = -(-(n_out + width - 1) // width)
    length = n_blocks * width
    x = x[..., :length]
    if x.shape[-1] < length:
        x = _cat_time([x, _full_like_time(x, length - x.shape[-1], empty)])
    g = _block_cum(x, width, kind, reverse=False)
    h = _block_cum(x, width, kind, reverse=True)
    combine = _minimum if kind == "min" else _maximum
    return combine(h[..., :n_out], g[..., width - 1:width - 1 + n_out])


def _window_reduce(rho, a: int, b: int | None, kind: str):
    """out[t] = min/max over t' in [t+a, t+b] ∩ [0, N−1] of rho[t']; empty window → ±inf.

    O(N) for any window: a suffix reduction when ``b`` is None, a sliding-window
    reduction (:func:`_sliding_reduce`) otherwise.
    """
    n = rho.shape[-1]
    empty = np.inf if kind == "min" else -np.inf
    if b is None:
        suffix = _reverse_cum(rho, kind)
        return _cat_time([suffix[..., a:], _full_like_time(rho, min(a, n), empty)])
    b = min(b, n - 1)  # offsets past the end only see the empty padding
    if a > b:
        return _full_like_time(rho, n, empty)
    padded = _cat_time([rho, _full_like_time(rho, b + 1, empty)])
    return _sliding_reduce(padded[..., a:], b - a + 1, n, kind, empty)


def _window_reduce_direct(rho, a: int, b: int | None, kind: str):
    """The O(N·W) reference of :func:`_window_reduce` (one shifted copy per offset); tests only."""
    n = rho.shape[-1]
    empty = np.inf if kind == "min" else -np.inf
    last = n - 1 if b is None else min(b, n - 1)
    if a > last:
        return _full_like_time(rho, n, empty)
    padded = _cat_time([rho, _full_like_time(rho, last + 1, empty)])
    combine = _minimum if kind == "min" else _maximum
    out = padded[..., a:a + n]
    for k in range(a + 1, last + 1):
        out = combine(out, padded[..., k:k + n])
    return out


def _check_interval(a, b, name: str) -> tuple[int, int | None]:
    for label, value in (("a", a), ("b", b)):
        if value is None and label == "b":
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name}: time bound {label} must be an integer number of steps "
                             f"(discrete time), got {value!r}")
    if a < 0:
        raise ValueError(f"{name}: time bound a must be >= 0, got {a}")
    if b is not None and b < a:
        raise ValueError(f"{name}: time bounds must satisfy a <= b, got a={a}, b={b}")
    return int(a), (None if b is None else int(b))


def _check_trace(trace):
    if _is_torch(trace):
        if not trace.is_floating_point():
            raise TypeError(f"trace must be a floating-point tensor, got dtype {trace.dtype}")
        if trace.ndim < 2:
            raise ValueError(f"trace must be shaped (..., T, n), got shape {tuple(trace.shape)}")
    else:
        arr = np.asarray(trace)
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
            raise TypeError(f"trace must be a numeric array shaped (..., T, n), got dtype {arr.dtype}")
        trace = arr.astype(np.float64, copy=False)
        if trace.ndim < 2:
            raise ValueError(f"trace must be shaped (..., T, n), got shape {trace.shape}")
    if trace.shape[-2] == 0:
        raise ValueError("trace has T = 0 time steps; expected at least one")
    return trace


# -- formulas -------------------------------------------------------------------------

class Formula:
    """An STL formula; subclasses implement :meth:`_trace`.

    Build formulas with :func:`Predicate`, :func:`Not`, :func:`And`, :func:`Or`,
    :func:`Implies`, :func:`Always`, :func:`Eventually` and :func:`Until` (or the
    operators ``~``, ``&``, ``|``).

    References
    ----------
    Maler & Nickovic, "Monitoring Temporal Properties of Continuous Signals", FORMATS/FTRTFT
    2004 (STL). Donzé & Maler, "Robust Satisfaction of Temporal Logic over Real-Valued Signals",
    FORMATS 2010 (the robustness semantics). Kapoor, Ganlath, Clifford, Liu, Scherer, Kang,
    "SafeDec: Constrained Decoding for Safe Autoregressive Generalist Robot Navigation
    Policies", ICML 2026, arXiv:2509.01728 (§2.2: the discrete-time semantics used here).

    Examples
    --------
    >>> import numpy as np
    >>> pos = Predicate("x>0", lambda x: x[..., 0])
    >>> phi = ~pos | Eventually(pos, 0, 2)
    >>> phi
    (¬(x>0) ∨ F[0,2](x>0))
    >>> trace = np.array([[-1.0], [2.0], [0.5]])
    >>> phi.robustness_trace(trace).tolist()
    [2.0, 2.0, 0.5]
    >>> float(Always(pos).robustness(trace)), bool(Always(pos, 1).satisfied(trace))
    (-1.0, True)
    """

    children: tuple = ()

    # public API ---------------------------------------------------------------------
    def robustness_trace(self, trace):
        """Robustness at every time step.

        Parameters
        ----------
        trace : array or tensor, shape (..., T, n)

        Returns
        -------
        array or tensor, shape (..., T)
            ``ρ(φ, x, t)`` for ``t = 0..T−1``.
        """
        trace = _check_trace(trace)
        return self._trace(trace)

    def robustness(self, trace, t: int = 0):
        """Robustness ``ρ(φ, x, t)`` of a batch of traces.

        Parameters
        ----------
        trace : array or tensor, shape (..., T, n)
        t : int
            Evaluation time (default 0).

        Returns
        -------
        array or tensor, shape (...)
        """
        trace = _check_trace(trace)
        n_steps = trace.shape[-2]
        if isinstance(t, bool) or not isinstance(t, numbers.Integral) or not 0 <= t < n_steps:
            raise ValueError(f"t must be an integer in [0, {n_steps - 1}], got {t!r}")
        return self._trace(trace)[..., int(t)]

    def satisfied(self, trace, t: int = 0):
        """Boolean satisfaction ``ρ(φ, x, t) ≥ 0`` (see :func:`is_satisfied`)."""
        return is_satisfied(self.robustness(trace, t))

    def predicates(self) -> list:
        """All predicates in the formula (depth-first, duplicates removed)."""
        seen: list = []
        for child in self.children:
            for p in child.predicates():
                if all(p is not q for q in seen):
                    seen.append(p)
        return seen

    def is_temporal(self) -> bool:
        """Whether the formula contains a temporal operator."""
        return any(c.is_temporal() for c in self.children)

    def max_bound(self) -> int:
        """Largest finite time bound (a or b) used anywhere in the formula (0 if none)."""
        own = [v for v in (getattr(self, "a", None), getattr(self, "b", None)) if v is not None]
        return max([0, *own, *(c.max_bound() for c in self.children)])

    def check_horizon(self, horizon: int) -> "Formula":
        """Raise ``ValueError`` when a time bound lies beyond ``horizon`` steps.

        Finite traces truncate windows silently (spec §2.2); when the episode length is
        known, a bound past it is almost always a mistake, so decoders check it.
        """
        if isinstance(horizon, bool) or not isinstance(horizon, numbers.Integral) or horizon < 1:
            raise ValueError(f"horizon must be a positive integer, got {horizon!r}")
        if self.max_bound() > horizon:
            raise ValueError(f"formula {self!r} has a time bound {self.max_bound()} beyond the "
                             f"horizon of {horizon} steps")
        return self

    # operator sugar -------------------------------------------------------------------
    def __invert__(self):
        return Not(self)

    def __and__(self, other):
        return And(self, other)

    def __or__(self, other):
        return Or(self, other)

    def _trace(self, trace):  # pragma: no cover - abstract
        raise NotImplementedError


class _Predicate(Formula):
    def __init__(self, name: str, fn: Callable):
        if not isinstance(name, str) or not name:
            raise ValueError(f"Predicate name must be a non-empty string, got {name!r}")
        if not callable(fn):
            raise TypeError(f"Predicate {name!r}: fn must be callable, got {type(fn).__name__}")
        self.name = name
        self.fn = fn

    def predicates(self) -> list:
        return [self]

    def is_temporal(self) -> bool:
        return False

    def _trace(self, trace):
        try:
            values = self.fn(trace)
        except (IndexError, KeyError) as exc:
            raise ValueError(f"predicate {self.name!r} reads a signal the trace does not have "
                             f"(trace shape {tuple(trace.shape)}): {exc}") from exc
        expected = tuple(trace.shape[:-1])
        if _is_torch(trace):
            import torch

            if not isinstance(values, torch.Tensor):
                values = torch.as_tensor(values, dtype=trace.dtype, device=trace.device)
            if tuple(values.shape) != expected:
                raise ValueError(f"predicate {self.name!r} returned shape {tuple(values.shape)}, "
                                 f"expected {expected} (one value per time step)")
            if bool(torch.isnan(values).any()):
                raise ValueError(f"predicate {self.name!r} returned NaN; expected finite margins")
            return values.to(trace.dtype)
        values = np.asarray(values, dtype=np.float64)
        if values.shape != expected:
            raise ValueError(f"predicate {self.name!r} returned shape {values.shape}, "
                             f"expected {expected} (one value per time step)")
        if np.isnan(values).any():
            raise ValueError(f"predicate {self.name!r} returned NaN; expected finite margins")
        return values

    def __repr__(self) -> str:
        return self.name


class _Not(Formula):
    def __init__(self, child: Formula):
        self.children = (_as_formula(child, "Not"),)

    def _trace(self, trace):
        return -self.children[0]._trace(trace)

    def __repr__(self) -> str:
        return f"¬({self.children[0]!r})"


class _Nary(Formula):
    kind = "min"
    symbol = "∧"

    def __init__(self, *children: Formula):
        if len(children) == 0:
            raise ValueError(f"{type(self).__name__[1:]} needs at least one subformula")
        self.children = tuple(_as_formula(c, type(self).__name__[1:]) for c in children)

    def _trace(self, trace):
        combine = _minimum if self.kind == "min" else _maximum
        out = self.children[0]._trace(trace)
        for child in self.children[1:]:
            out = combine(out, child._trace(trace))
        return out

    def __repr__(self) -> str:
        return "(" + f" {self.symbol} ".join(repr(c) for c in self.children) + ")"


class _And(_Nary):
    kind, symbol = "min", "∧"


class _Or(_Nary):
    kind, symbol = "max", "∨"


class _Temporal(Formula):
    kind = "min"
    symbol = "G"

    def __init__(self, child: Formula, a: int = 0, b: int | None = None):
        name = "Always" if self.kind == "min" else "Eventually"
        self.children = (_as_formula(child, name),)
        self.a, self.b = _check_interval(a, b, name)

    def is_temporal(self) -> bool:
        return True

    def _trace(self, trace):
        return _window_reduce(self.children[0]._trace(trace), self.a, self.b, self.kind)

    def __repr__(self) -> str:
        b = "∞" if self.b is None else self.b
        return f"{self.symbol}[{self.a},{b}]({self.children[0]!r})"


class _Always(_Temporal):
    kind, symbol = "min", "G"


class _Eventually(_Temporal):
    kind, symbol = "max", "F"


class _Until(Formula):
    def __init__(self, left: Formula, right: Formula, a: int = 0, b: int | None = None):
        self.children = (_as_formula(left, "Until"), _as_formula(right, "Until"))
        self.a, self.b = _check_interval(a, b, "Until")

    def is_temporal(self) -> bool:
        return True

    def _trace(self, trace):
        left = self.children[0]._trace(trace)
        right = self.children[1]._trace(trace)
        n = left.shape[-1]
        last = n - 1 if self.b is None else min(self.b, n - 1)
        pad = last + 1
        left_p = _cat_time([left, _full_like_time(left, pad, np.inf)])
        right_p = _cat_time([right, _full_like_time(right, pad, -np.inf)])
        out = _full_like_time(left, n, -np.inf)
        prefix_min = _full_like_time(left, n, np.inf)  # min of left over [t, t+k)
        for k in range(0, last + 1):
            if k >= self.a:
                out = _maximum(out, _minimum(right_p[..., k:k + n], prefix_min))
            prefix_min = _minimum(prefix_min, left_p[..., k:k + n])
        return out

    def __repr__(self) -> str:
        b = "∞" if self.b is None else self.b
        return f"({self.children[0]!r} U[{self.a},{b}] {self.children[1]!r})"


def _as_formula(f, where: str) -> Formula:
    if not isinstance(f, Formula):
        raise TypeError(f"{where}: subformulas must be Formula objects, got {type(f).__name__}")
    return f


# -- constructors (the public names) ----------------------------------------------------

def Predicate(name: str, fn: Callable) -> Formula:
    """Atomic predicate ``μ ≡ h_μ(x) ≥ 0`` with robustness ``h_μ(x_t)``.

    Parameters
    ----------
    name : str
        Name used in error messages and ``repr``.
    fn : callable
        ``fn(trace) -> margins``: maps a trace shaped ``(..., T, n)`` to signed margins
        shaped ``(..., T)`` (positive = satisfied), in the trace's array library.

    Returns
    -------
    Formula

    Raises
    ------
    ValueError
        At evaluation, when ``fn`` returns the wrong shape or NaN, or reads a state
        dimension the trace does not have (the message names the predicate).

    Examples
    --------
    >>> import numpy as np
    >>> p = Predicate("x_pos", lambda x: x[..., 0])
    >>> p.robustness_trace(np.array([[1.0], [-2.0]])).tolist()
    [1.0, -2.0]
    """
    return _Predicate(name, fn)


def Not(f: Formula) -> Formula:
    """Negation ``¬φ``: robustness ``−ρ(φ)``."""
    return _Not(f)


def And(*fs: Formula) -> Formula:
    """Conjunction ``φ₁ ∧ … ∧ φ_k``: robustness ``min_i ρ(φ_i)``."""
    return _And(*fs)


def Or(*fs: Formula) -> Formula:
    """Disjunction ``φ₁ ∨ … ∨ φ_k``: robustness ``max_i ρ(φ_i)``."""
    return _Or(*fs)


def Implies(f: Formula, g: Formula) -> Formula:
    """Implication ``φ → ψ ≡ ¬φ ∨ ψ``."""
    return _Or(_Not(f), g)


def Always(f: Formula, a: int = 0, b: int | None = None) -> Formula:
    """``G_[a,b] φ``: φ holds at every step of ``[t+a, t+b]`` (``b=None``: to the trace end).

    Raises
    ------
    ValueError
        When ``a < 0``, ``b < a`` or a bound is not an integer (discrete time).
    """
    return _Always(f, a, b)


def Eventually(f: Formula, a: int = 0, b: int | None = None) -> Formula:
    """``F_[a,b] φ``: φ holds at some step of ``[t+a, t+b]`` (``b=None``: to the trace end)."""
    return _Eventually(f, a, b)


def Until(f: Formula, g: Formula, a: int = 0, b: int | None = None) -> Formula:
    """``φ U_[a,b] ψ``: ψ holds at some ``t' ∈ [t+a, t+b]`` and φ at every step of ``[t, t')``."""
    return _Until(f, g, a, b)


# -- the invariant (G) fragment and its incremental monitor ------------------------------

def invariant_parts(formula: Formula) -> tuple[list, list]:
    """Split a formula into its invariant conjuncts ``G_[a,b] ψ`` (ψ temporal-free) and the rest.

    Parameters
    ----------
    formula : Formula

    Returns
    -------
    invariants : list of (psi, a, b)
        The G-fragment conjuncts; a temporal-free top-level formula ``ψ`` counts as
        ``G_[0,0] ψ`` (it constrains the initial state only).
    others : list of Formula
        Conjuncts that are not invariants (eventualities, Until, nested temporal
        operators); one-step decoding cannot enforce them.
    """
    invariants, others = [], []
    stack = [formula]
    while stack:
        f = stack.pop(0)
        if isinstance(f, _And):
            stack[:0] = list(f.children)
        elif isinstance(f, _Always) and not f.children[0].is_temporal():
            invariants.append((f.children[0], f.a, f.b))
        elif not f.is_temporal():
            invariants.append((f, 0, 0))
        else:
            others.append(f)
    return invariants, others


class SafetyMonitor:
    """Incremental robustness monitor for the invariant (G) fragment of a formula.

    Keeps, per conjunct ``G_[a,b] ψ``, the running minimum of ``ρ(ψ, x_t)`` over the
    realized states inside the window, so each update and each candidate query costs
    O(|A|·|φ|) regardless of the elapsed time (spec §2.6, step 3).

    Parameters
    ----------
    formula : Formula
        The specification. Non-invariant conjuncts (F, U) are ignored with a warning
        ("only the G-fragment is enforced").
    batch : int
        Number of parallel traces.

    Attributes
    ----------
    t : int
        Number of realized states seen so far.
    value : ndarray, shape (batch,)
        Robustness of the realized prefix (``+inf`` before any constrained step).
    current : ndarray, shape (batch,)
        Instantaneous robustness of the last realized state (min over active conjuncts).

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728 (§2.6, the
    incremental robustness of the realized prefix). Donzé & Maler, "Robust Satisfaction of
    Temporal Logic over Real-Valued Signals", FORMATS 2010 (robustness semantics).

    Examples
    --------
    >>> import numpy as np
    >>> safe = Always(Predicate("x_pos", lambda x: x[..., 0]))
    >>> mon = SafetyMonitor(safe, batch=1)
    >>> mon.update(np.array([[2.0]])).tolist()
    [2.0]
    >>> mon.candidates(np.array([[[1.0], [-1.0], [3.0]]])).tolist()
    [[1.0, -1.0, 2.0]]
    """

    def __init__(self, formula: Formula, batch: int):
        _as_formula(formula, "SafetyMonitor")
        if isinstance(batch, bool) or not isinstance(batch, numbers.Integral) or batch < 1:
            raise ValueError(f"batch must be a positive integer, got {batch!r}")
        self.formula = formula
        self.batch = int(batch)
        self.invariants, self.others = invariant_parts(formula)
        if self.others:
            warnings.warn("SafetyMonitor: only the G-fragment is enforced; ignoring "
                          f"{len(self.others)} non-invariant conjunct(s): "
                          + ", ".join(repr(o) for o in self.others), stacklevel=2)
        self.reset()

    def reset(self) -> "SafetyMonitor":
        """Forget the realized prefix."""
        self.t = 0
        self._running = np.full((len(self.invariants), self.batch), np.inf)
        self.current = np.full(self.batch, np.inf)
        return self

    @property
    def value(self) -> np.ndarray:
        if len(self.invariants) == 0:
            return np.full(self.batch, np.inf)
        return self._running.min(axis=0)

    def _instant(self, states: np.ndarray, time: int) -> np.ndarray:
        """Per-conjunct robustness of single states at ``time``: shape (k, *states.shape[:-1])."""
        out = np.full((len(self.invariants),) + states.shape[:-1], np.inf)
        for k, (psi, a, b) in enumerate(self.invariants):
            if time >= a and (b is None or time <= b):
                out[k] = psi.robustness_trace(states[..., None, :])[..., 0]
        return out

    def _check_states(self, states, ndim: int, name: str) -> np.ndarray:
        if _is_torch(states):
            states = states.detach().cpu().numpy()
        arr = np.asarray(states)
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
            raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
        if arr.ndim != ndim or arr.shape[0] != self.batch:
            want = "(batch, n)" if ndim == 2 else "(batch, |A|, n)"
            raise ValueError(f"{name} must be shaped {want} with batch={self.batch}, got {arr.shape}")
        return arr.astype(np.float64, copy=False)

    def update(self, states) -> np.ndarray:
        """Record the realized states ``x_t`` and return the prefix robustness, shape (batch,)."""
        states = self._check_states(states, 2, "states")
        inst = self._instant(states, self.t)
        self._running = np.minimum(self._running, inst)
        self.current = inst.min(axis=0) if len(self.invariants) else np.full(self.batch, np.inf)
        self.t += 1
        return self.value

    def candidates(self, next_states, prefix: bool = True) -> np.ndarray:
        """Robustness if each candidate next state were realized, shape (batch, |A|).

        Parameters
        ----------
        next_states : array, shape (batch, |A|, n)
            Predicted next states ``x̂^{(i)}_{t+1}``.
        prefix : bool
            ``True``: robustness of the realized prefix extended by the candidate
            (``ρ(φ_safe, x_{0:t} ⊕ x̂^{(i)})``, the HCD masking quantity). ``False``: the
            candidate state's own robustness ``ρ(ψ, x̂^{(i)})`` (the RCD quantity).
        """
        next_states = self._check_states(next_states, 3, "next_states")
        inst = self._instant(next_states, self.t)  # (k, B, A)
        if len(self.invariants) == 0:
            return np.full(next_states.shape[:2], np.inf)
        if prefix:
            inst = np.minimum(inst, self._running[:, :, None])
        return inst.min(axis=0)
