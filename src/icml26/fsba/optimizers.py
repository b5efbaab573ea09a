"""FSBA, LFSBA (lazy), MCN and LMCN (lazy minimax): cubic-regularized Newton on hyper-objectives.

Yang, Liu, Chen & Lui, *Second-Order Bilevel Optimization with Accelerated Convergence Rates*,
ICML 2026 (arXiv 2605.06431).

*Resolution (not from the paper):* the paper's algorithm boxes could not be read. "Fully
second-order" is read as the second-order analogue of the fully first-order F2BA (Chen, Ma &
Zhang): only gradients and Hessians of f and g are used, through the value-function penalty

    L_λ(x, y) = f(x, y) + λ (g(x, y) − g*(x)),   ℒ_λ(x) = min_y L_λ(x, y),

with ``y_λ = argmin_y L_λ(x, ·)``, ``z = y*(x)`` and the envelope formulas

    G(x) = ∇_x f(x, y_λ) + λ(∇_x g(x, y_λ) − ∇_x g(x, z))
    H(x) = S(L_λ; x, y_λ) − λ S(g; x, z),   S(h) = h_xx − h_xy h_yy^{-1} h_yx,

followed by an exact cubic-regularized Newton step. The lazy variants (after Doikov, Chayti &
Jaggi 2023) recompute H and the ``∇²_yy`` factorizations only every ``m`` iterations, reuse the
factorizations as chord-iteration preconditioners for the inner solves in between, and use
``M_lazy = √m·M`` (``lazy_reg_scale="linear"``: ``m·M``). MCN/LMCN do the same for
``min_x max_y f`` with ``∇Φ = ∇_x f(x, y*)`` and ``∇²Φ = S(f; x, y*)`` (Luo, Li & Chen 2022).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.linalg

from icml26.core.validation import check_choice, check_int, check_scalar_in

from .cubic import cubic_model, cubic_step
from .problem import BilevelProblem, MinimaxProblem, NotStronglyConvexError, check_point

__all__ = ["FSBA", "LFSBA", "MCN", "LMCN", "BilevelResult", "penalty_surrogate", "schur_complement",
           "newton_solve", "MAX_PENALTY_DOUBLINGS"]

#: The clock of ``history["seconds"]`` (every optimizer here, baselines included): CPU seconds
#: of the process, so the load of other processes cannot change a measured time ratio.
_clock = time.process_time

#: How often λ may be doubled when ∇²_yy L_λ is not positive definite.
MAX_PENALTY_DOUBLINGS = 10
#: ARC acceptance ratio and the bounds of the adaptive M.
ARC_ACCEPT = 0.1
ARC_MIN_REG = 1e-8


@dataclass
class BilevelResult:
    """What an optimizer returns (``scipy.optimize.OptimizeResult``-like).

    Attributes
    ----------
    x, y, z : arrays
        Final upper variable, penalty minimizer ``y_λ`` (or the inner solution), lower solution.
    n_iter : int
        Outer iterations taken.
    converged : bool
        Whether the stopping test passed.
    history : dict of lists
        Per iteration: ``iteration, value`` (the method's estimate of the objective),
        ``grad_norm``, ``lam_min`` (of its Hessian estimate, NaN when not recomputed),
        ``upper_at_lower`` (f(x, y*(x)), e.g. a validation loss), ``n_hessians`` (snapshots so
        far), ``cost`` (``n_H·d³ + n_it·d²``), ``seconds``, and with exact ground truth
        ``phi, phi_gap, exact_grad_norm, exact_lam_min, is_sosp``.
    counts : dict
        Oracle calls by kind.
    message : str

    References
    ----------
    Yang, Liu, Chen & Lui, "Second-Order Bilevel Optimization with Accelerated Convergence Rates",
    ICML 2026 (arXiv:2605.06431). Follows ``scipy.optimize.OptimizeResult``.

    Examples
    --------
    >>> from icml26.fsba import FSBA, make_saddle_bilevel
    >>> problem, x0 = make_saddle_bilevel(d=8, seed=0)
    >>> result = FSBA(penalty=1e4).minimize(problem, x0)
    >>> result.x.shape, result.converged, result.n_iter > 0
    ((8,), True, True)
    """

    x: np.ndarray
    y: np.ndarray | None
    z: np.ndarray | None
    n_iter: int
    converged: bool
    history: dict
    counts: dict
    message: str = ""
    penalty: float | None = None

    def first_sosp_iteration(self) -> int | None:
        """The first iteration at which the exact SOSP test passed (None if never)."""
        for it, ok in zip(self.history.get("iteration", []), self.history.get("is_sosp", [])):
            if ok:
                return int(it)
        return None


def _cholesky(H: np.ndarray, what: str):
    try:
        return scipy.linalg.cho_factor(0.5 * (H + H.T), lower=True, check_finite=True)
    except np.linalg.LinAlgError:
        lam = float(np.linalg.eigvalsh(0.5 * (H + H.T))[0])
        raise NotStronglyConvexError(f"{what} is not positive definite at the iterate "
                                     f"(smallest eigenvalue {lam:.3g})", lam) from None


def newton_solve(grad_y: Callable, hess_yy: Callable, y0: np.ndarray, tol: float, max_steps: int,
                 what: str) -> tuple[np.ndarray, dict]:
    """Damped Newton on a strongly convex function of y (step halved while ‖∇‖ grows).

    Returns the solution and ``{"steps", "converged", "factor"}`` (the last Cholesky factor).
    Raises :class:`NotStronglyConvexError` when the Hessian is not positive definite.
    """
    y = y0.copy()
    gy = grad_y(y)
    factor = None
    for step in range(max_steps):
        gnorm = float(np.linalg.norm(gy))
        if gnorm <= tol:
            return y, {"steps": step, "converged": True, "factor": factor}
        factor = _cholesky(hess_yy(y), what)
        direction = scipy.linalg.cho_solve(factor, gy)
        t = 1.0
        for _ in range(30):
            candidate = y - t * direction
            g_new = grad_y(candidate)
            if np.linalg.norm(g_new) < gnorm or t < 1e-8:
                break
            t *= 0.5
        y, gy = candidate, g_new
    converged = bool(np.linalg.norm(gy) <= tol)
    return y, {"steps": max_steps, "converged": converged, "factor": factor}


def chord_solve(grad_y: Callable, factor, y0: np.ndarray, tol: float, max_steps: int
                ) -> tuple[np.ndarray, bool]:
    """Chord iterations ``y ← y − H_snap^{-1}∇h(y)`` with a cached Cholesky factor (O(d²) each)."""
    y = y0.copy()
    gy = grad_y(y)
    previous = math.inf
    for _ in range(max_steps):
        gnorm = float(np.linalg.norm(gy))
        if gnorm <= tol:
            return y, True
        if gnorm >= previous:        # the snapshot no longer contracts: give up
            return y, False
        previous = gnorm
        y = y - scipy.linalg.cho_solve(factor, gy)
        gy = grad_y(y)
    return y, bool(np.linalg.norm(gy) <= tol)


def schur_complement(Hxx: np.ndarray, Hxy: np.ndarray, factor) -> np.ndarray:
    """``Hxx − Hxy Hyy^{-1} Hyx`` with ``Hyy`` given by its Cholesky factor (no inverse)."""
    S = Hxx - Hxy @ scipy.linalg.cho_solve(factor, Hxy.T)
    return 0.5 * (S + S.T)


def penalty_surrogate(problem: BilevelProblem, x: Any, penalty: float, y0: Any = None,
                      z0: Any = None, *, inner_tol: float = 1e-10, max_inner: int = 30,
                      hessian: bool = True) -> dict:
    """Value, gradient and Hessian of the penalty surrogate ℒ_λ at x (second-order oracles only).

    Returns ``value, grad, hess (None when hessian=False), y, z``. ``|ℒ_λ − φ|``,
    ``‖∇ℒ_λ − ∇φ‖`` and ``‖∇²ℒ_λ − ∇²φ‖`` are O(1/λ).
    """
    x = check_point(x, problem.dx, "x")
    penalty = check_scalar_in(penalty, "penalty", low=0.0, low_inclusive=False)
    y = np.zeros(problem.dy) if y0 is None else check_point(y0, problem.dy, "y0")
    z = y.copy() if z0 is None else check_point(z0, problem.dy, "z0")
    state = {"y": y, "z": z}
    est = _PenaltyEstimator(problem, penalty, inner_tol, max_inner, max_chord=0)
    G, H, value, _ = est(x, state, snapshot=hessian)
    return {"value": value, "grad": G, "hess": H, "y": state["y"], "z": state["z"],
            "penalty": est.penalty}


class _PenaltyEstimator:
    """(G, H) of ℒ_λ at x, keeping warm starts and (for lazy use) the snapshot factors."""

    def __init__(self, problem: BilevelProblem, penalty: float, inner_tol: float, max_inner: int,
                 max_chord: int):
        self.problem, self.penalty = problem, penalty
        self.inner_tol, self.max_inner, self.max_chord = inner_tol, max_inner, max_chord
        self.factors = None
        self.fallbacks = 0

    def _solve_lower(self, x, z, snapshot):
        p = self.problem
        grad = lambda v: p.grad_y("g", x, v)
        if not snapshot and self.factors is not None:
            z_new, ok = chord_solve(grad, self.factors[1], z, self.inner_tol, self.max_chord)
            if ok:
                return z_new, None
            self.fallbacks += 1
        z_new, info = newton_solve(grad, lambda v: p.hess_yy("g", x, v), z, self.inner_tol,
                                   self.max_inner, "the lower-level Hessian ∇²_yy g")
        if not info["converged"]:
            warnings.warn("lower-level Newton solve did not reach inner_tol", RuntimeWarning,
                          stacklevel=4)
        return z_new, info["factor"]

    def _solve_penalty(self, x, y, snapshot):
        p = self.problem
        for _ in range(MAX_PENALTY_DOUBLINGS + 1):
            lam = self.penalty
            grad = lambda v: p.grad_y("f", x, v) + lam * p.grad_y("g", x, v)
            if not snapshot and self.factors is not None:
                y_new, ok = chord_solve(grad, self.factors[0], y, self.inner_tol * lam,
                                        self.max_chord)
                if ok:
                    return y_new, None
                self.fallbacks += 1
            hess = lambda v: p.hess_yy("f", x, v) + lam * p.hess_yy("g", x, v)
            try:
                y_new, info = newton_solve(grad, hess, y, self.inner_tol * lam, self.max_inner,
                                           "∇²_yy L_λ")
                return y_new, info["factor"]
            except NotStronglyConvexError:
                self.penalty *= 2.0
                warnings.warn(f"∇²_yy L_λ not positive definite: penalty doubled to {self.penalty:g}",
                              RuntimeWarning, stacklevel=4)
        raise NotStronglyConvexError("∇²_yy L_λ stayed indefinite after doubling the penalty "
                                     f"{MAX_PENALTY_DOUBLINGS} times", float("nan"))

    def __call__(self, x, state, snapshot: bool):
        p, lam = self.problem, None
        z, fz = self._solve_lower(x, state["z"], snapshot)
        y, fy = self._solve_penalty(x, state["y"], snapshot)
        lam = self.penalty
        state["y"], state["z"] = y, z
        fx, _ = p.grad("f", x, y)
        gx_y, _ = p.grad("g", x, y)
        gx_z, _ = p.grad("g", x, z)
        G = fx + lam * (gx_y - gx_z)
        value = p.value("f", x, y) + lam * (p.value("g", x, y) - p.value("g", x, z))
        H = None
        if snapshot:
            fxx, fxy, fyy = p.hess("f", x, y)
            gxx, gxy, gyy = p.hess("g", x, y)
            gxx_z, gxy_z, gyy_z = p.hess("g", x, z)
            factor_L = _cholesky(fyy + lam * gyy, "∇²_yy L_λ")
            factor_g = _cholesky(gyy_z, "the lower-level Hessian ∇²_yy g")
            H = schur_complement(fxx + lam * gxx, fxy + lam * gxy, factor_L) \
                - lam * schur_complement(gxx_z, gxy_z, factor_g)
            self.factors = (factor_L, factor_g)
        return G, H, value, z


class _MinimaxEstimator:
    """(∇Φ, ∇²Φ) at x for ``Φ(x) = max_y f(x, y)``."""

    def __init__(self, problem: MinimaxProblem, inner_tol: float, max_inner: int, max_chord: int):
        self.problem = problem
        self.inner_tol, self.max_inner, self.max_chord = inner_tol, max_inner, max_chord
        self.factors = None
        self.fallbacks = 0
        self.penalty = None

    def __call__(self, x, state, snapshot: bool):
        p = self.problem
        grad = lambda v: -p.grad_y("f", x, v)
        y = state["y"]
        solved = False
        if not snapshot and self.factors is not None:
            y, solved = chord_solve(grad, self.factors[0], y, self.inner_tol, self.max_chord)
            self.fallbacks += int(not solved)
        if not solved:
            y, info = newton_solve(grad, lambda v: -p.hess_yy("f", x, v), y, self.inner_tol,
                                   self.max_inner, "−∇²_yy f (strong concavity in y)")
        state["y"] = state["z"] = y
        G, _ = p.grad("f", x, y)
        H = None
        if snapshot:
            fxx, fxy, fyy = p.hess("f", x, y)
            factor = _cholesky(-fyy, "−∇²_yy f (strong concavity in y)")
            # ∇²Φ = f_xx − f_xy f_yy^{-1} f_yx = f_xx + f_xy (−f_yy)^{-1} f_yx
            S = fxx + fxy @ scipy.linalg.cho_solve(factor, fxy.T)
            H = 0.5 * (S + S.T)
            self.factors = (factor,)
        return G, H, p.value("f", x, y), y


class _CubicMethod:
    """Shared loop: estimates (G, H), lazy snapshots every ``m`` iterations, exact cubic steps."""

    _minimax = False

    def __init__(self, cubic_reg, adaptive_reg, inner_tol, max_inner, eps, max_iter, callback):
        self.cubic_reg = cubic_reg
        self.adaptive_reg = adaptive_reg
        self.inner_tol = inner_tol
        self.max_inner = max_inner
        self.eps = eps
        self.max_iter = max_iter
        self.callback = callback
        self.lazy_reg_scale = "sqrt"

    def _validate_common(self):
        check_scalar_in(self.cubic_reg, "cubic_reg", low=0.0, low_inclusive=False)
        check_scalar_in(self.eps, "eps", low=0.0, low_inclusive=False)
        check_scalar_in(self.inner_tol, "inner_tol", low=0.0, low_inclusive=False)
        check_int(self.max_inner, "max_inner", min_value=1)
        check_int(self.max_iter, "max_iter", min_value=0)

    def _period(self, problem) -> int:
        return 1

    def _lazy_reg_factor(self, m: int) -> float:
        """``M_lazy / M``: 1 for m = 1, else √m ("sqrt"), m ("linear") or a given number."""
        if m == 1:
            return 1.0
        scale = self.lazy_reg_scale
        if scale == "sqrt":
            return math.sqrt(m)
        if scale == "linear":
            return float(m)
        return float(scale)

    def _estimator(self, problem):
        raise NotImplementedError

    def minimize(self, problem: BilevelProblem, x0: Any, y0: Any = None) -> BilevelResult:
        """Run from ``x0`` (and warm start ``y0`` for the inner variables)."""
        expected = MinimaxProblem if self._minimax else BilevelProblem
        if not isinstance(problem, expected) or (not self._minimax and isinstance(problem, MinimaxProblem)):
            raise TypeError(f"{type(self).__name__} needs a {expected.__name__}, got "
                            f"{type(problem).__name__}")
        self._validate_common()
        x = check_point(x0, problem.dx, "x0")
        y = np.zeros(problem.dy) if y0 is None else check_point(y0, problem.dy, "y0")
        state = {"y": y, "z": y.copy()}
        m = self._period(problem)
        reg = self.cubic_reg * self._lazy_reg_factor(m)
        estimator = self._estimator(problem)
        history = _History(problem, self)
        eig = None
        H = None
        n_snapshots = 0
        converged = False
        start = _clock()
        t = 0
        for t in range(self.max_iter + 1):
            snapshot = t % m == 0
            G, H_new, value, z = estimator(x, state, snapshot)
            if snapshot:
                H = H_new
                eig = np.linalg.eigh(H)
                n_snapshots += 1
            lam_min = float(eig[0][0])
            history.record(t, x, z, G, value, lam_min if snapshot else float("nan"), n_snapshots,
                           _clock() - start)
            if np.linalg.norm(G) <= self.eps and lam_min >= -math.sqrt(self.cubic_reg * self.eps):
                converged = True
                break
            if _call_back(self.callback, history, t, x, G) or t == self.max_iter:
                break
            s = cubic_step(G, M=reg, eig=eig)
            if self.adaptive_reg and snapshot:
                reg, accepted = self._arc(problem, estimator, x, state, G, H, s, value, reg)
                if not accepted:
                    continue
            x = x + s
        message = "SOSP test passed" if converged else f"stopped after {t} iterations"
        return BilevelResult(x=x, y=state["y"], z=state["z"], n_iter=t, converged=converged,
                             history=history.columns, counts=dict(problem.counts), message=message,
                             penalty=estimator.penalty)

    def _arc(self, problem, estimator, x, state, G, H, s, value, reg):
        """Adaptive regularization: accept when the true decrease ≥ 0.1 × the model's."""
        trial_state = {"y": state["y"].copy(), "z": state["z"].copy()}
        _, _, trial_value, _ = estimator(x + s, trial_state, snapshot=False)
        predicted = -cubic_model(G, H, reg, s)
        if predicted > 0 and value - trial_value >= ARC_ACCEPT * predicted:
            return max(reg / 2.0, ARC_MIN_REG), True
        return reg * 2.0, False


def _call_back(callback, history, t, x, G) -> bool:
    """Call ``callback(t, x, G)``; True when it returned True (stop the run). Its time is left
    out of ``history["seconds"]``, like the diagnostics."""
    if callback is None:
        return False
    start = _clock()
    stop = callback(t, x, G) is True
    history.overhead += _clock() - start
    return stop


class _History:
    def __init__(self, problem, method):
        self.problem = problem
        self.exact = problem.exact
        self.rho = None if self.exact is None else self.exact.get("rho_phi")
        self.eps = method.eps
        self.d = problem.dx
        self.overhead = 0.0
        self.columns = {k: [] for k in ("iteration", "value", "grad_norm", "lam_min", "upper_at_lower",
                                        "n_hessians", "cost", "seconds")}
        if self.exact is not None:
            for k in ("phi", "phi_gap", "exact_grad_norm", "exact_lam_min", "is_sosp"):
                self.columns[k] = []

    def record(self, t, x, z, G, value, lam_min, n_snapshots, seconds):
        """Append one iteration. ``seconds`` is the method's elapsed time; the time spent
        here (the diagnostics: f at the lower solution, the exact φ, ∇φ, λ_min(∇²φ)) is
        subtracted, so the recorded ``seconds`` are the method's own."""
        start = _clock()
        self._record(t, x, z, G, value, lam_min, n_snapshots, seconds - self.overhead)
        self.overhead += _clock() - start

    def _record(self, t, x, z, G, value, lam_min, n_snapshots, seconds):
        c = self.columns
        c["iteration"].append(t)
        c["value"].append(float(value))
        c["grad_norm"].append(float(np.linalg.norm(G)))
        c["lam_min"].append(lam_min)
        c["upper_at_lower"].append(float("nan") if z is None else
                                   float(self.problem._oracles["f"].value(x, z)))
        c["n_hessians"].append(n_snapshots)
        c["cost"].append(float(n_snapshots * self.d ** 3 + (t + 1) * self.d ** 2))
        c["seconds"].append(seconds)
        if self.exact is not None:
            phi = float(self.exact["phi"](x))
            grad = self.exact["grad"](x)
            hess = self.exact["hess"](x)
            gn = float(np.linalg.norm(grad))
            lm = float(np.linalg.eigvalsh(hess)[0])
            c["phi"].append(phi)
            c["phi_gap"].append(phi - float(self.exact["phi_star"]))
            c["exact_grad_norm"].append(gn)
            c["exact_lam_min"].append(lm)
            c["is_sosp"].append(bool(gn <= self.eps and lm >= -math.sqrt(self.rho * self.eps)))


class FSBA(_CubicMethod):
    """Fully second-order bilevel approximation: cubic Newton on the penalty surrogate ℒ_λ.

    Parameters
    ----------
    penalty : float
        λ of ``L_λ = f + λ(g − g*)`` (|ℒ_λ − φ| = O(1/λ)); doubled with a warning while
        ``∇²_yy L_λ`` is not positive definite.
    cubic_reg : float
        M of the cubic model.
    adaptive_reg : bool
        ARC rule: accept a step when the decrease of ℒ_λ is ≥ 0.1 × the model's, then halve M;
        else reject it and double M.
    inner_tol, max_inner : float, int
        Newton tolerance on ‖∇_y‖ (scaled by λ for the penalty problem) and its step cap.
    eps : float
        Stop when ‖G‖ ≤ eps and λ_min(H) ≥ −√(M·eps).
    max_iter : int
        Outer iterations.
    callback : callable, optional
        ``callback(t, x, G)`` after every iteration; returning True stops the run (its time
        is not counted in ``history["seconds"]``).

    Examples
    --------
    >>> from icml26.fsba import make_saddle_bilevel
    >>> problem, x0 = make_saddle_bilevel(d=8, seed=0)
    >>> result = FSBA(penalty=1e4, cubic_reg=10.0).minimize(problem, x0)
    >>> result.converged and result.history["phi_gap"][-1] < 1e-8
    True

    References
    ----------
    Yang, Liu, Chen & Lui, ICML 2026; Nesterov & Polyak 2006 (cubic Newton); Chen, Ma & Zhang
    (F2BA, the penalty surrogate).
    """

    def __init__(self, penalty: float = 1e2, cubic_reg: float = 10.0, adaptive_reg: bool = False,
                 inner_tol: float = 1e-10, max_inner: int = 30, eps: float = 1e-5,
                 max_iter: int = 200, callback: Callable | None = None):
        super().__init__(cubic_reg, adaptive_reg, inner_tol, max_inner, eps, max_iter, callback)
        self.penalty = penalty

    def _estimator(self, problem):
        penalty = check_scalar_in(self.penalty, "penalty", low=0.0, low_inclusive=False)
        return _PenaltyEstimator(problem, penalty, self.inner_tol, self.max_inner,
                                 max_chord=getattr(self, "max_chord", 0))


class _Lazy:
    """Lazy-Hessian settings shared by LFSBA and LMCN (snapshot period, M_lazy, chord steps)."""

    def __init__(self, lazy_period: int | None = None, lazy_reg_scale: str | float = "sqrt",
                 max_chord: int = 100, **kwargs):
        super().__init__(**kwargs)
        self.lazy_period = lazy_period
        self.lazy_reg_scale = lazy_reg_scale
        self.max_chord = max_chord

    def _period(self, problem) -> int:
        if isinstance(self.lazy_reg_scale, str):
            check_choice(self.lazy_reg_scale, "lazy_reg_scale", ("sqrt", "linear"))
        else:
            check_scalar_in(self.lazy_reg_scale, "lazy_reg_scale", low=0.0, low_inclusive=False)
        check_int(self.max_chord, "max_chord", min_value=1)
        if self.lazy_period is None:
            return problem.dx
        return check_int(self.lazy_period, "lazy_period", min_value=1)


class LFSBA(_Lazy, FSBA):
    """FSBA with lazy Hessians: H and the ∇²_yy factorizations recomputed every ``lazy_period``.

    Parameters
    ----------
    lazy_period : int, optional
        m (default: dx, the theory's choice giving the √d saving).
    lazy_reg_scale : {"sqrt", "linear"} or float > 0
        ``M_lazy = √m·M`` (default, faster in practice), ``m·M`` (the theory-safe choice), or
        ``c·M`` for a number c (e.g. 3 for the hyper-cleaning setting).
    max_chord : int
        Chord iterations per inner solve between snapshots before falling back to Newton.
    **kwargs
        As :class:`FSBA`.

    References
    ----------
    Yang, Liu, Chen & Lui, "Second-Order Bilevel Optimization with Accelerated Convergence Rates",
    ICML 2026 (arXiv:2605.06431). Doikov, Chayti & Jaggi, "Second-order optimization with lazy
    Hessians", ICML 2023.

    Examples
    --------
    >>> from icml26.fsba import make_saddle_bilevel
    >>> problem, x0 = make_saddle_bilevel(d=8, seed=0)
    >>> result = LFSBA(penalty=1e4, cubic_reg=10.0).minimize(problem, x0)
    >>> result.converged and result.history["phi_gap"][-1] < 1e-8
    True
    """


class MCN(_CubicMethod):
    """Minimax cubic Newton (Luo, Li & Chen 2022): cubic steps on Φ(x) = max_y f(x, y).

    Parameters as :class:`FSBA` without ``penalty``.

    References
    ----------
    Luo, Li & Chen, "Finding Second-Order Stationary Points in Nonconvex-Strongly-Concave Minimax
    Optimization", NeurIPS 2022. Yang, Liu, Chen & Lui, "Second-Order Bilevel Optimization with
    Accelerated Convergence Rates", ICML 2026 (arXiv:2605.06431).

    Examples
    --------
    >>> from icml26.fsba import make_saddle_minimax
    >>> problem, x0 = make_saddle_minimax(d=8, seed=0)
    >>> result = MCN(cubic_reg=10.0).minimize(problem, x0)
    >>> result.converged and result.history["phi_gap"][-1] < 1e-8
    True
    """

    _minimax = True

    def __init__(self, cubic_reg: float = 10.0, adaptive_reg: bool = False, inner_tol: float = 1e-10,
                 max_inner: int = 30, eps: float = 1e-5, max_iter: int = 200,
                 callback: Callable | None = None):
        super().__init__(cubic_reg, adaptive_reg, inner_tol, max_inner, eps, max_iter, callback)

    def _estimator(self, problem):
        return _MinimaxEstimator(problem, self.inner_tol, self.max_inner,
                                 max_chord=getattr(self, "max_chord", 0))


class LMCN(_Lazy, MCN):
    """Lazy minimax cubic Newton: MCN with Hessian snapshots every ``lazy_period`` iterations.

    Parameters as :class:`LFSBA` without ``penalty``.

    References
    ----------
    Yang, Liu, Chen & Lui, "Second-Order Bilevel Optimization with Accelerated Convergence Rates",
    ICML 2026 (arXiv:2605.06431). (LMCN, the lazy minimax method).

    Examples
    --------
    >>> from icml26.fsba import make_saddle_minimax
    >>> problem, x0 = make_saddle_minimax(d=8, seed=0)
    >>> result = LMCN(cubic_reg=10.0).minimize(problem, x0)
    >>> result.converged and result.history["phi_gap"][-1] < 1e-8
    True
    """
