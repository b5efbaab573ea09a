"""First-order baselines and the exact-φ cubic Newton oracle (written; no library offers them
with an SOSP test on the same interface).

- AID-BA (Ghadimi & Wang 2018): gradient descent on φ with the implicit hypergradient
  ``∇_x f − ∇²_xy g [∇²_yy g]^{-1} ∇_y f`` at ``y ≈ y*(x)`` (a linear solve per step).
- F2BA (Chen, Ma & Zhang): gradient descent on the penalty surrogate ℒ_λ with the
  first-order formula ``G = ∇_x f(x, y_λ) + λ(∇_x g(x, y_λ) − ∇_x g(x, z))``.
- Perturbed F2BA: F2BA plus a uniform-ball perturbation of radius r when ``‖G‖ ≤ ε`` and none
  happened in the last ``T_p`` iterations (the standard first-order SOSP device).
- GDA: simultaneous gradient descent–ascent for ``min_x max_y f``.
- ExactCubicNewton: cubic Newton on the exact φ (synthetic problems give ∇φ, ∇²φ).

Deviation, stated: the inner problems of AID-BA, F2BA and perturbed F2BA are solved with the
same warm-started Newton solver as FSBA's (``inner="newton"``), so the comparison is between
*outer* updates (first- vs second-order), which is what the paper's iteration counts compare;
``inner="gd"`` runs plain gradient steps inside instead (fully first-order, slower).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import scipy.linalg

from icml26.core.validation import check_choice, check_int, check_scalar_in

from .cubic import cubic_step
from .optimizers import (BilevelResult, _call_back, _cholesky, _clock, _History, _PenaltyEstimator,
                         newton_solve)
from .problem import BilevelProblem, MinimaxProblem, check_point

__all__ = ["AIDBA", "F2BA", "PerturbedF2BA", "GDA", "ExactCubicNewton"]


def _gd_solve(grad_y: Callable, y0: np.ndarray, lr: float, steps: int) -> np.ndarray:
    y = y0.copy()
    for _ in range(steps):
        y = y - lr * grad_y(y)
    return y


class _FirstOrder:
    """Shared loop of the gradient-descent baselines."""

    def __init__(self, lr: float = 0.1, inner: str = "newton", inner_lr: float = 0.1,
                 inner_steps: int = 50, inner_tol: float = 1e-10, max_inner: int = 30,
                 eps: float = 1e-5, max_iter: int = 1000, callback: Callable | None = None):
        self.lr = lr
        self.inner = inner
        self.inner_lr = inner_lr
        self.inner_steps = inner_steps
        self.inner_tol = inner_tol
        self.max_inner = max_inner
        self.eps = eps
        self.max_iter = max_iter
        self.callback = callback

    def _check(self):
        check_scalar_in(self.lr, "lr", low=0.0, low_inclusive=False)
        check_choice(self.inner, "inner", ("newton", "gd"))
        check_scalar_in(self.eps, "eps", low=0.0, low_inclusive=False)
        check_int(self.max_iter, "max_iter", min_value=0)

    def _solve(self, grad_y, hess_yy, y0, tol, what):
        if self.inner == "gd":
            return _gd_solve(grad_y, y0, self.inner_lr, self.inner_steps)
        return newton_solve(grad_y, hess_yy, y0, tol, self.max_inner, what)[0]

    def _direction(self, problem, x, state):
        raise NotImplementedError

    def _perturb(self, x, t, G, rng):
        return x

    def minimize(self, problem: BilevelProblem, x0: Any, y0: Any = None, seed: int = 0
                 ) -> BilevelResult:
        if not isinstance(problem, BilevelProblem) or isinstance(problem, MinimaxProblem):
            raise TypeError(f"{type(self).__name__} needs a BilevelProblem")
        self._check()
        x = check_point(x0, problem.dx, "x0")
        y = np.zeros(problem.dy) if y0 is None else check_point(y0, problem.dy, "y0")
        state = {"y": y, "z": y.copy()}
        history = _History(problem, self)
        rng = np.random.default_rng(seed)
        start = _clock()
        t, stopped = 0, False
        for t in range(self.max_iter + 1):
            G, value = self._direction(problem, x, state)
            history.record(t, x, state["z"], G, value, float("nan"), 0, _clock() - start)
            stopped = _call_back(self.callback, history, t, x, G)
            if stopped or t == self.max_iter:
                break
            x = self._perturb(x - self.lr * G, t, G, rng)
        return BilevelResult(x=x, y=state["y"], z=state["z"], n_iter=t, converged=False,
                             history=history.columns, counts=dict(problem.counts),
                             message=f"{t} gradient steps" + (" (stopped by the callback)"
                                                              if stopped else ""),
                             penalty=getattr(self, "penalty", None))


class AIDBA(_FirstOrder):
    """Gradient descent on φ with the implicit (AID) hypergradient.

    Parameters
    ----------
    lr : float
        Outer step size.
    inner : {"newton", "gd"}
        Lower-level solver (warm-started).

    References
    ----------
    Ji, Yang & Liang, "Bilevel Optimization: Convergence Analysis and Enhanced Design", ICML 2021.

    Examples
    --------
    >>> from icml26.fsba import make_saddle_bilevel
    >>> problem, x0 = make_saddle_bilevel(d=8, seed=0)
    >>> result = AIDBA(lr=0.1, max_iter=200).minimize(problem, x0)
    >>> result.history["value"][-1] < result.history["value"][0]
    True
    """

    def _direction(self, problem, x, state):
        z = self._solve(lambda v: problem.grad_y("g", x, v), lambda v: problem.hess_yy("g", x, v),
                        state["z"], self.inner_tol, "the lower-level Hessian ∇²_yy g")
        state["z"] = state["y"] = z
        fx, fy = problem.grad("f", x, z)
        _, gxy, gyy = problem.hess("g", x, z)
        factor = _cholesky(gyy, "the lower-level Hessian ∇²_yy g")
        G = fx - gxy @ scipy.linalg.cho_solve(factor, fy)
        return G, problem.value("f", x, z)


class F2BA(_FirstOrder):
    """Gradient descent on the penalty surrogate ℒ_λ with first-order oracles.

    Parameters
    ----------
    penalty : float
        λ.
    lr, inner, ... :
        As :class:`AIDBA`.

    References
    ----------
    Chen, Ma & Zhang, "Near-Optimal Nonconvex-Strongly-Convex Bilevel Optimization with Fully
    First-Order Oracles", 2023.

    Examples
    --------
    >>> from icml26.fsba import make_saddle_bilevel
    >>> problem, x0 = make_saddle_bilevel(d=8, seed=0)
    >>> result = F2BA(penalty=1e2, max_iter=200).minimize(problem, x0)
    >>> result.history["grad_norm"][-1] < 1e-3
    True
    """

    def __init__(self, penalty: float = 1e2, **kwargs):
        super().__init__(**kwargs)
        self.penalty = penalty

    def _direction(self, problem, x, state):
        lam = check_scalar_in(self.penalty, "penalty", low=0.0, low_inclusive=False)
        if self.inner == "newton":
            est = getattr(self, "_est", None)
            if est is None or est.problem is not problem:
                est = self._est = _PenaltyEstimator(problem, lam, self.inner_tol, self.max_inner, 0)
            G, _, value, _ = est(x, state, snapshot=False)
            return G, value
        z = _gd_solve(lambda v: problem.grad_y("g", x, v), state["z"], self.inner_lr,
                      self.inner_steps)
        y = _gd_solve(lambda v: problem.grad_y("f", x, v) + lam * problem.grad_y("g", x, v),
                      state["y"], self.inner_lr / lam, self.inner_steps)
        state["y"], state["z"] = y, z
        fx, _ = problem.grad("f", x, y)
        G = fx + lam * (problem.grad("g", x, y)[0] - problem.grad("g", x, z)[0])
        value = problem.value("f", x, y) + lam * (problem.value("g", x, y) - problem.value("g", x, z))
        return G, value


class PerturbedF2BA(F2BA):
    """F2BA with uniform-ball perturbations near first-order stationary points.

    Parameters
    ----------
    radius : float
        Perturbation radius r.
    quiet_period : int
        T_p: no new perturbation within this many iterations of the last one.

    References
    ----------
    Chen, Ma & Zhang, "Near-Optimal Nonconvex-Strongly-Convex Bilevel Optimization with Fully
    First-Order Oracles", 2023 (its perturbed variant for second-order stationarity).

    Examples
    --------
    >>> from icml26.fsba import make_saddle_bilevel
    >>> problem, x0 = make_saddle_bilevel(d=8, seed=0)
    >>> result = PerturbedF2BA(radius=1e-3, max_iter=200).minimize(problem, x0, seed=0)
    >>> result.x.shape
    (8,)
    """

    def __init__(self, radius: float = 1e-3, quiet_period: int = 50, **kwargs):
        super().__init__(**kwargs)
        self.radius = radius
        self.quiet_period = quiet_period
        self._last = None

    def minimize(self, problem, x0, y0=None, seed: int = 0):
        check_scalar_in(self.radius, "radius", low=0.0, low_inclusive=False)
        check_int(self.quiet_period, "quiet_period", min_value=0)
        self._last = -math.inf
        self.n_perturbations_ = 0
        return super().minimize(problem, x0, y0, seed)

    def _perturb(self, x, t, G, rng):
        if np.linalg.norm(G) <= self.eps and t - self._last > self.quiet_period:
            direction = rng.standard_normal(x.size)
            direction /= np.linalg.norm(direction)
            x = x + self.radius * rng.random() ** (1.0 / x.size) * direction
            self._last = t
            self.n_perturbations_ += 1
        return x


class GDA:
    """Simultaneous gradient descent–ascent: ``x ← x − η_x∇_x f``, ``y ← y + η_y∇_y f``.

    References
    ----------
    Lin, Jin & Jordan, "On Gradient Descent Ascent for Nonconvex-Concave Minimax Problems", ICML
    2020.

    Examples
    --------
    >>> from icml26.fsba import make_saddle_minimax
    >>> problem, x0 = make_saddle_minimax(d=8, seed=0)
    >>> result = GDA(lr_x=0.05, lr_y=0.5, max_iter=200).minimize(problem, x0)
    >>> result.x.shape
    (8,)
    """

    def __init__(self, lr_x: float = 0.05, lr_y: float = 0.5, eps: float = 1e-5,
                 max_iter: int = 1000, callback: Callable | None = None):
        self.lr_x = lr_x
        self.lr_y = lr_y
        self.eps = eps
        self.max_iter = max_iter
        self.callback = callback

    def minimize(self, problem: MinimaxProblem, x0: Any, y0: Any = None) -> BilevelResult:
        if not isinstance(problem, MinimaxProblem):
            raise TypeError("GDA needs a MinimaxProblem")
        check_scalar_in(self.lr_x, "lr_x", low=0.0, low_inclusive=False)
        check_scalar_in(self.lr_y, "lr_y", low=0.0, low_inclusive=False)
        check_int(self.max_iter, "max_iter", min_value=0)
        x = check_point(x0, problem.dx, "x0")
        y = np.zeros(problem.dy) if y0 is None else check_point(y0, problem.dy, "y0")
        history = _History(problem, self)
        start = _clock()
        t = 0
        for t in range(self.max_iter + 1):
            gx, gy = problem.grad("f", x, y)
            history.record(t, x, y, gx, problem.value("f", x, y), float("nan"), 0,
                           _clock() - start)
            if _call_back(self.callback, history, t, x, gx) or t == self.max_iter:
                break
            x, y = x - self.lr_x * gx, y + self.lr_y * gy
        return BilevelResult(x=x, y=y, z=y, n_iter=t, converged=False, history=history.columns,
                             counts=dict(problem.counts), message=f"{t} GDA steps")


class ExactCubicNewton:
    """Cubic Newton on the exact hyper-objective (needs ``problem.exact`` with grad and hess).

    References
    ----------
    Nesterov & Polyak, "Cubic regularization of Newton method and its global performance",
    Mathematical Programming 108, 2006.

    Examples
    --------
    >>> from icml26.fsba import make_saddle_bilevel
    >>> problem, x0 = make_saddle_bilevel(d=8, seed=0)
    >>> result = ExactCubicNewton(cubic_reg=10.0).minimize(problem, x0)
    >>> result.converged and result.history["phi_gap"][-1] < 1e-8
    True
    """

    def __init__(self, cubic_reg: float = 10.0, eps: float = 1e-5, max_iter: int = 200,
                 callback: Callable | None = None):
        self.cubic_reg = cubic_reg
        self.eps = eps
        self.max_iter = max_iter
        self.callback = callback

    def minimize(self, problem: BilevelProblem, x0: Any, y0: Any = None) -> BilevelResult:
        if problem.exact is None:
            raise ValueError("ExactCubicNewton needs problem.exact (grad and hess of φ)")
        M = check_scalar_in(self.cubic_reg, "cubic_reg", low=0.0, low_inclusive=False)
        x = check_point(x0, problem.dx, "x0")
        history = _History(problem, self)
        start = _clock()
        converged, t = False, 0
        for t in range(self.max_iter + 1):
            G, H = problem.exact["grad"](x), problem.exact["hess"](x)
            lam_min = float(np.linalg.eigvalsh(H)[0])
            history.record(t, x, None, G, problem.exact["phi"](x), lam_min, t + 1,
                           _clock() - start)
            if np.linalg.norm(G) <= self.eps and lam_min >= -math.sqrt(M * self.eps):
                converged = True
                break
            if _call_back(self.callback, history, t, x, G) or t == self.max_iter:
                break
            x = x + cubic_step(G, H, M)
        return BilevelResult(x=x, y=None, z=None, n_iter=t, converged=converged,
                             history=history.columns, counts=dict(problem.counts))
