"""Bilevel and minimax problems: oracles for values, gradients and Hessian blocks, counted.

Yang, Liu, Chen & Lui, *Second-Order Bilevel Optimization with Accelerated Convergence Rates*,
ICML 2026 (arXiv 2605.06431).

A problem is given either as torch functions ``f(x, y)`` / ``g(x, y)`` returning a scalar
(gradients and Hessian blocks then come from ``torch.func``: ``grad`` and
``jacfwd(jacrev)``), or with analytic numpy derivatives (``derivatives=``), which the
synthetic problems and the digits hyper-cleaning task ship for speed. Every oracle call is
counted by kind, so experiments can report oracle complexity.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import numpy as np

from icml26.core.validation import check_int

__all__ = ["BilevelProblem", "MinimaxProblem", "NotStronglyConvexError", "check_point"]


class NotStronglyConvexError(ValueError):
    """The lower-level (or inner) Hessian is not positive definite at the iterate.

    References
    ----------
    Yang, Liu, Chen & Lui, "Second-Order Bilevel Optimization with Accelerated Convergence Rates",
    ICML 2026 (arXiv:2605.06431). Raised when its assumption (g strongly convex in y) fails at an
    iterate; a ``ValueError`` as scikit-learn raises for invalid inputs.

    Examples
    --------
    >>> err = NotStronglyConvexError("g is not strongly convex in y", min_eigenvalue=-0.5)
    >>> isinstance(err, ValueError), err.min_eigenvalue
    (True, -0.5)
    """

    def __init__(self, message: str, min_eigenvalue: float):
        super().__init__(message)
        self.min_eigenvalue = min_eigenvalue


def check_point(v: Any, size: int, name: str) -> np.ndarray:
    """A finite float64 vector of the given size."""
    arr = np.asarray(v, dtype=np.float64).reshape(-1) if v is not None else None
    if arr is None:
        raise ValueError(f"{name} is None; expected a vector of size {size}")
    if arr.size != size:
        raise ValueError(f"{name} must have {size} entries, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return arr.copy()


class _TorchOracle:
    """Value, gradient and Hessian blocks of a torch function of (x, y) through torch.func."""

    def __init__(self, fn: Callable, name: str, dx: int, dy: int):
        import torch
        from torch.func import grad, hessian

        self.torch = torch
        self.fn, self.name, self.dx, self.dy = fn, name, dx, dy

        def joint(z):
            return self._scalar(fn(z[:dx], z[dx:]))

        def of_y(y, x):
            return self._scalar(fn(x, y))

        self._grad = grad(joint)
        self._hess = hessian(joint)
        self._grad_y = grad(of_y)
        self._hess_yy = hessian(of_y)

    def _scalar(self, out):
        if not isinstance(out, self.torch.Tensor) or out.ndim != 0:
            shape = tuple(out.shape) if hasattr(out, "shape") else type(out).__name__
            raise TypeError(f"{self.name}(x, y) must return a scalar torch tensor, got {shape}")
        return out

    def _t(self, v):
        return self.torch.as_tensor(v, dtype=self.torch.float64)

    def value(self, x, y) -> float:
        with self.torch.no_grad():
            return float(self._scalar(self.fn(self._t(x), self._t(y))))

    def grad(self, x, y):
        gz = self._grad(self.torch.cat([self._t(x), self._t(y)])).numpy()
        return gz[:self.dx], gz[self.dx:]

    def grad_y(self, x, y):
        return self._grad_y(self._t(y), self._t(x)).numpy()

    def hess(self, x, y):
        H = self._hess(self.torch.cat([self._t(x), self._t(y)])).numpy()
        dx = self.dx
        return H[:dx, :dx], H[:dx, dx:], H[dx:, dx:]

    def hess_yy(self, x, y):
        return self._hess_yy(self._t(y), self._t(x)).numpy()


class _NumpyOracle:
    """Analytic derivatives given as numpy callables."""

    def __init__(self, table: dict, name: str):
        missing = [k for k in ("value", "grad", "hess") if k not in table]
        if missing:
            raise ValueError(f"derivatives[{name!r}] lacks {missing}; expected callables "
                             "value(x, y), grad(x, y) -> (gx, gy), hess(x, y) -> (Hxx, Hxy, Hyy)")
        self.table, self.name = table, name

    def value(self, x, y):
        return float(self.table["value"](x, y))

    def grad(self, x, y):
        return self.table["grad"](x, y)

    def grad_y(self, x, y):
        if "grad_y" in self.table:
            return self.table["grad_y"](x, y)
        return self.table["grad"](x, y)[1]

    def hess(self, x, y):
        return self.table["hess"](x, y)

    def hess_yy(self, x, y):
        if "hess_yy" in self.table:
            return self.table["hess_yy"](x, y)
        return self.table["hess"](x, y)[2]


class BilevelProblem:
    """``min_x φ(x) = f(x, y*(x))`` with ``y*(x) = argmin_y g(x, y)`` (g strongly convex in y).

    Parameters
    ----------
    f, g : callable or None
        Torch functions ``(x, y) -> scalar tensor`` (float64 tensors of sizes dx and dy).
        May be None when ``derivatives`` gives that function's oracles.
    dx, dy : int
        Dimensions of x and y.
    derivatives : dict, optional
        ``{"f": {...}, "g": {...}}`` with numpy callables ``value``, ``grad`` (→ (∇_x, ∇_y)),
        ``hess`` (→ (∇²_xx, ∇²_xy, ∇²_yy)) and optionally ``grad_y``, ``hess_yy``.
    exact : dict, optional
        Ground truth for diagnostics (synthetic problems): callables ``phi(x)``,
        ``grad(x)``, ``hess(x)``, and the numbers ``phi_star``, ``rho_phi``.

    Attributes
    ----------
    counts : collections.Counter
        Oracle calls by kind (``f_grad``, ``g_hess_yy``, ...).

    References
    ----------
    Yang, Liu, Chen & Lui, "Second-Order Bilevel Optimization with Accelerated Convergence Rates",
    ICML 2026 (arXiv:2605.06431). The bilevel problem class of its Section 2.

    Examples
    --------
    >>> import torch
    >>> f = lambda x, y: ((y - 1.0) ** 2).sum() + (x ** 2).sum()
    >>> g = lambda x, y: 0.5 * (y ** 2).sum() - (x * y).sum()
    >>> problem = BilevelProblem(f, g, dx=2, dy=2)
    >>> problem.grad("g", np.ones(2), np.zeros(2))[1]
    array([-1., -1.])
    """

    kinds = ("f", "g")

    def __init__(self, f: Callable | None, g: Callable | None, dx: int, dy: int, *,
                 derivatives: dict | None = None, exact: dict | None = None):
        self.dx = check_int(dx, "dx", min_value=1)
        self.dy = check_int(dy, "dy", min_value=1)
        derivatives = derivatives or {}
        self._oracles = {}
        for name, fn in (("f", f), ("g", g))[:len(self.kinds)]:
            if name in derivatives:
                self._oracles[name] = _NumpyOracle(derivatives[name], name)
            elif fn is not None:
                if not callable(fn):
                    raise TypeError(f"{name} must be callable (x, y) -> scalar tensor")
                self._oracles[name] = _TorchOracle(fn, name, self.dx, self.dy)
            else:
                raise ValueError(f"{name} is None and derivatives has no {name!r} entry")
        self.exact = exact
        self.counts: Counter = Counter()

    def _call(self, which: str, kind: str, x, y):
        if which not in self._oracles:
            raise ValueError(f"unknown function {which!r}; this problem has {list(self._oracles)}")
        self.counts[f"{which}_{kind}"] += 1
        out = getattr(self._oracles[which], kind)(x, y)
        arrays = out if isinstance(out, tuple) else (out,)
        for a in arrays:
            if not np.all(np.isfinite(a)):
                raise FloatingPointError(f"{which}'s {kind} is not finite at the iterate")
        return out

    def value(self, which: str, x, y) -> float:
        return self._call(which, "value", x, y)

    def grad(self, which: str, x, y):
        """``(∇_x, ∇_y)`` of ``which`` ∈ {"f", "g"} at (x, y)."""
        return self._call(which, "grad", x, y)

    def grad_y(self, which: str, x, y):
        return self._call(which, "grad_y", x, y)

    def hess(self, which: str, x, y):
        """``(∇²_xx, ∇²_xy, ∇²_yy)``; ``∇²_xy`` has shape (dx, dy)."""
        return self._call(which, "hess", x, y)

    def hess_yy(self, which: str, x, y):
        return self._call(which, "hess_yy", x, y)

    def reset_counts(self) -> None:
        self.counts = Counter()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dx={self.dx}, dy={self.dy})"


class MinimaxProblem(BilevelProblem):
    """``min_x Φ(x) = max_y f(x, y)`` with f(x, ·) strongly concave.

    Same oracle interface as :class:`BilevelProblem` with the single function ``"f"``.
    ``exact`` may give ``phi``, ``grad``, ``hess`` of Φ and ``phi_star``, ``rho_phi``.

    References
    ----------
    Yang, Liu, Chen & Lui, "Second-Order Bilevel Optimization with Accelerated Convergence Rates",
    ICML 2026 (arXiv:2605.06431). The minimax special case (its LMCN setting).

    Examples
    --------
    >>> import numpy as np
    >>> f = lambda x, y: (x ** 2).sum() + (x * y).sum() - (y ** 2).sum()
    >>> problem = MinimaxProblem(f, dx=2, dy=2)
    >>> problem.grad("f", np.ones(2), np.zeros(2))[1]
    array([1., 1.])
    """

    kinds = ("f",)

    def __init__(self, f: Callable | None, dx: int, dy: int, *, derivatives: dict | None = None,
                 exact: dict | None = None):
        super().__init__(f, None, dx, dy, derivatives=derivatives, exact=exact)
