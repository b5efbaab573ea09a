"""Budget accounting for fixed-budget noisy optimization.

Every oracle call counts (first evaluations, re-evaluations, probes, the last partial
generation); :class:`BudgetedObjective` refuses call ``B + 1``. Shared by RB-PEM,
probe-and-switch and every baseline so that all methods are compared at exactly the
same number of calls.

References
----------
S. Wang, Z. Lu. *Depth over Fidelity in Fixed-Budget Noisy Evolution Strategies.*
ICML 2026 (arXiv 2606.06555), section "Setting".
"""

from __future__ import annotations

import math
import numbers

from typing import Any, Callable

import numpy as np
from scipy.optimize import OptimizeResult as _ScipyOptimizeResult

from icml26.core.validation import check_choice, check_int

__all__ = ["BudgetExhausted", "BudgetedObjective", "OptimizeResult", "EvaluationArchive",
           "postselect"]


class BudgetExhausted(RuntimeError):
    """Raised when an oracle call would exceed the budget (the call is not made).

    References
    ----------
    Wang & Lu, "Depth over Fidelity in Fixed-Budget Noisy Evolution Strategies", ICML 2026
    (arXiv:2606.06555). A ``RuntimeError``, raised at call ``B + 1`` of its fixed budget.

    Examples
    --------
    >>> from icml26.pem import BudgetedObjective, BudgetExhausted
    >>> obj = BudgetedObjective(lambda x: 0.0, budget=1)
    >>> obj([0.0])
    0.0
    >>> try:
    ...     obj([0.0])
    ... except BudgetExhausted:
    ...     print("budget spent", obj.remaining)
    budget spent 0
    """


def _as_scalar(value: Any) -> float:
    """The objective's return value as a float; a non-scalar raises ValueError."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    arr = np.asarray(value)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number) or arr.size != 1:
        raise ValueError(f"objective must return a real scalar, got {type(value).__name__} "
                         f"with shape {arr.shape}")
    return float(arr.reshape(()))


class BudgetedObjective:
    """A noisy objective with a hard cap on oracle calls.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> float`` (one noisy oracle call per invocation).
    budget : int
        Maximum number of calls ``B`` (>= 1). Call ``B + 1`` raises
        :class:`BudgetExhausted` without calling ``fun``.
    noise_free : callable, optional
        ``noise_free(x) -> float``; when given, every evaluated point is also scored
        noise-free and :attr:`best_noise_free` tracks the best such value.
    nan_policy : {"raise", "worst"}
        What to do with a NaN/±inf result: ``"raise"`` a ValueError naming the call, or
        map it to ``+inf`` ("worst") so it ranks last.
    record_history : bool
        Keep ``(call, observed f, noise-free f or nan)`` for every call.

    Attributes
    ----------
    n_calls : int
        Calls made so far (a call that raised inside ``fun`` is still counted).
    best_x, best_f : ndarray, float
        Point with the smallest *observed* value and that value.
    best_noise_free : float
        Smallest noise-free value over evaluated points (nan without ``noise_free``).
    history : list of tuple

    References
    ----------
    Wang & Lu, "Depth over Fidelity in Fixed-Budget Noisy Evolution Strategies", ICML 2026
    (arXiv:2606.06555). Its fixed oracle budget.

    Examples
    --------
    >>> obj = BudgetedObjective(lambda x: float(x @ x), budget=2)
    >>> obj([1.0, 0.0]), obj([0.0, 0.5]), obj.remaining
    (1.0, 0.25, 0)
    >>> obj([0.0, 0.0])
    Traceback (most recent call last):
    ...
    icml26.pem.objective.BudgetExhausted: budget of 2 oracle calls exhausted
    """

    def __init__(self, fun: Callable, budget: int, noise_free: Callable | None = None, *,
                 nan_policy: str = "raise", record_history: bool = True):
        if not callable(fun):
            raise TypeError(f"fun must be callable, got {type(fun).__name__}")
        if noise_free is not None and not callable(noise_free):
            raise TypeError(f"noise_free must be callable or None, got {type(noise_free).__name__}")
        self.fun = fun
        self.budget = check_int(budget, "budget", min_value=1)
        self.noise_free = noise_free
        self.nan_policy = check_choice(nan_policy, "nan_policy", ["raise", "worst"])
        self.record_history = bool(record_history)
        self.n_calls = 0
        self.best_x: np.ndarray | None = None
        self.best_f = math.inf
        self.best_noise_free = math.nan
        self.history: list[tuple[int, float, float]] = []

    @property
    def remaining(self) -> int:
        """Calls left."""
        return self.budget - self.n_calls

    def __call__(self, x) -> float:
        if self.n_calls >= self.budget:
            raise BudgetExhausted(f"budget of {self.budget} oracle calls exhausted")
        x = np.asarray(x, dtype=float)
        self.n_calls += 1
        value = _as_scalar(self.fun(x))
        if not math.isfinite(value):
            if self.nan_policy == "raise":
                raise ValueError(f"objective returned {value} at call {self.n_calls}; expected a "
                                 "finite value (use nan_policy='worst' to rank it last)")
            value = math.inf
        nf = math.nan
        if self.noise_free is not None:
            nf = _as_scalar(self.noise_free(x))
            if not math.isnan(nf) and (math.isnan(self.best_noise_free) or nf < self.best_noise_free):
                self.best_noise_free = nf
        if value < self.best_f or self.best_x is None:
            self.best_f, self.best_x = value, x.copy()
        if self.record_history:
            self.history.append((self.n_calls, value, nf))
        return value


class OptimizeResult(_ScipyOptimizeResult):
    """What every optimizer in :mod:`icml26.pem` returns: a :class:`scipy.optimize.OptimizeResult`
    (a dict with attribute access, as ``scipy.optimize.minimize`` returns) with the ES fields.

    Attributes
    ----------
    x : ndarray
        The returned solution (best aggregated observed point of the run).
    fun : float
        Its aggregated observed value.
    nfev : int
        Oracle calls used (== the budget for a complete run).
    ngen : int
        Generations completed (also as scipy's ``nit``).
    history : list of dict
        Per-generation log (calls so far, re-evaluation calls, sigma, best value).
    method : str
    info : dict
        Method-specific extras (restarts, probe statistic, noise model...).
    success : bool
        True: a fixed-budget run ends by spending its budget, not by converging.
    message : str

    References
    ----------
    Follows ``scipy.optimize.OptimizeResult``; the fields are those of Wang & Lu, "Depth over
    Fidelity in Fixed-Budget Noisy Evolution Strategies", ICML 2026 (arXiv:2606.06555).

    Examples
    --------
    >>> import numpy as np
    >>> res = OptimizeResult(x=np.zeros(2), fun=0.5, nfev=10, ngen=2, method="rbpem")
    >>> res.nit, res["nfev"], isinstance(res, dict)
    (2, 10, True)
    """

    def __init__(self, x, fun, nfev, ngen, history=None, method="", info=None, **extra):
        super().__init__(x=x, fun=fun, nfev=nfev, ngen=ngen, nit=ngen,
                         history=[] if history is None else history, method=method,
                         info={} if info is None else info, success=True,
                         message=extra.pop("message", "budget spent"), **extra)


class EvaluationArchive:
    """Wrap ``fun`` and keep the ``k`` distinct points with the lowest single observed value.

    The archive of the official HPO runner (``ArchiveProblem``): points are told apart after
    rounding to 1e-6; only the first observed value of a point is kept. Use it as the function
    inside a :class:`BudgetedObjective`; it makes no extra calls.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> float``.
    k : int
        Archive size (8 in the official runner).

    Examples
    --------
    >>> arch = EvaluationArchive(lambda x: float(x[0]), k=2)
    >>> [arch([v]) for v in (3.0, 1.0, 2.0, 1.0)]
    [3.0, 1.0, 2.0, 1.0]
    >>> [float(x[0]) for x in arch.candidates()]
    [1.0, 2.0]
    """

    def __init__(self, fun: Callable, k: int = 8):
        if not callable(fun):
            raise TypeError(f"fun must be callable, got {type(fun).__name__}")
        self.fun = fun
        self.k = check_int(k, "k", min_value=1)
        self._seen: set[bytes] = set()
        self._items: list[tuple[float, np.ndarray]] = []

    def __call__(self, x) -> float:
        value = self.fun(x)
        x_arr = np.asarray(x, dtype=float)
        key = np.round(x_arr, 6).tobytes()
        fval = _as_scalar(value)
        if key not in self._seen and math.isfinite(fval):
            self._seen.add(key)
            self._items.append((fval, x_arr.copy()))
            self._items.sort(key=lambda item: item[0])
            del self._items[self.k:]
        return value

    def candidates(self) -> list[np.ndarray]:
        """The archived points, best observed value first."""
        return [x.copy() for _, x in self._items]


def postselect(evaluate: Callable, candidates, runs: int = 16, seed=0):
    """Return the candidate with the lowest mean of ``runs`` fresh evaluations.

    The official HPO runner's returned point: the archive's top points (plus the run's best
    observed point and the initial solution) are each evaluated ``runs`` times with *common
    random numbers* (the same noise stream for every candidate), outside the budget; the
    lowest mean wins.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(x, rng) -> float``, one noisy evaluation drawing its noise from ``rng``.
    candidates : sequence of array-like
        Duplicates (after rounding to 1e-6) are evaluated once.
    runs : int
        Evaluations per candidate (16 in the official runner).
    seed : int or sequence of int
        Seed of the common noise stream.

    Returns
    -------
    x : ndarray
        The selected point.
    mean : float
        Its mean over the ``runs`` evaluations (optimistically biased by the selection; score
        the point with independent evaluations).

    Examples
    --------
    >>> def noisy(x, rng):
    ...     return float(np.sum(np.asarray(x) ** 2) + rng.normal())
    >>> x, m = postselect(noisy, [np.ones(2), np.zeros(2), np.zeros(2)], runs=64)
    >>> x.tolist()
    [0.0, 0.0]
    """
    check_int(runs, "runs", min_value=1)
    unique, seen = [], set()
    for x in candidates:
        x = np.asarray(x, dtype=float)
        key = np.round(x, 6).tobytes()
        if key not in seen:
            seen.add(key)
            unique.append(x)
    if not unique:
        raise ValueError("candidates is empty; expected at least one point")
    best_x, best_mean = None, math.inf
    for x in unique:
        rng = np.random.default_rng(seed)            # common random numbers
        mean = float(np.mean([_as_scalar(evaluate(x, rng)) for _ in range(runs)]))
        if best_x is None or mean < best_mean:
            best_x, best_mean = x.copy(), mean
    return best_x, best_mean
