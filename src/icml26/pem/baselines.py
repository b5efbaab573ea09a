"""The paper's baselines at the same oracle budget, built on pycma (``cma``).

- :class:`SepCMABaseline` — pycma CMA-ES with ``CMA_diagonal=True`` (sep-CMA-ES, the
  paper's base), or full covariance with ``diagonal=False``; λ as RB-PEM, tolerances off.
- :class:`ResampleCMA` — sep-CMA-ES where each candidate is evaluated ``k`` times and the
  mean is told (the last generation may use fewer than ``k``). pycma has no resampling
  wrapper, so this thin loop is ours.
- :class:`UHCMA` — UH-CMA-ES (Hansen et al. 2009): pycma's ``NoiseHandler`` with
  ``maxevals=[1, 1, maxevals]``, median aggregation, ``epsilon=0``, driven by ``cma.fmin2``.

All stop exactly at the budget: the :class:`~icml26.pem.objective.BudgetedObjective`
counts every call (pycma's ``maxfevals`` is not enough once re-evaluations happen) and a
pycma termination before the budget restarts from ``x0``.

References
----------
N. Hansen, A. S. P. Niederberger, L. Guzzella, P. Koumoutsakos. *A Method for Handling
Uncertainty in Evolutionary Optimization With an Application to Feedback Control of
Combustion.* IEEE TEVC 13(1), 2009. R. Ros, N. Hansen. *A Simple Modification in CMA-ES
Achieving Linear Time and Space Complexity.* PPSN 2008. S. Wang, Z. Lu. *Depth over
Fidelity in Fixed-Budget Noisy Evolution Strategies.* ICML 2026.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from icml26.core.validation import check_int

from .objective import BudgetedObjective, BudgetExhausted, OptimizeResult
from .pem import _check_x0_sigma0, default_popsize

__all__ = ["SepCMABaseline", "ResampleCMA", "UHCMA", "pycma_seed"]


def pycma_seed(seed) -> int:
    """A non-zero pycma seed derived from ``seed`` (pycma treats 0/None as "random")."""
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1)[0] % (2 ** 31 - 2)) + 1
    return int(np.random.SeedSequence(seed).generate_state(1)[0] % (2 ** 31 - 2)) + 1


class _PycmaBaseline:
    """Shared setup: validated x0/sigma0/bounds, λ, pycma options, restart bookkeeping."""

    method = "pycma"
    diagonal = True

    def _setup(self):
        self._x0, self._sigma0, self._box = _check_x0_sigma0(self.x0, self.sigma0, self.bounds)
        self._lam = (default_popsize(self._x0.size) if self.popsize is None
                     else check_int(self.popsize, "popsize", min_value=2))

    def _options(self, restart: int) -> dict:
        opts = {"maxfevals": math.inf, "seed": pycma_seed(None if self.seed is None
                                                           else (self.seed, restart)),
                "verbose": -9, "verb_log": 0, "verb_time": 0, "verb_disp": 0,
                "popsize": self._lam, "CMA_diagonal": bool(self.diagonal),
                "tolfun": 0.0, "tolfunhist": 0.0, "tolx": 0.0, "tolstagnation": int(1e9),
                "tolxstagnation": False, "tolflatfitness": int(1e9),
                "tolconditioncov": 1e30, "tolupsigma": 1e30}
        if self._box is not None:
            opts["bounds"] = [self._box[0].tolist(), self._box[1].tolist()]
        return opts

    def _clip(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return np.clip(x, *self._box) if self._box is not None else x

    @staticmethod
    def _check_objective(objective) -> None:
        if not isinstance(objective, BudgetedObjective):
            raise TypeError("objective must be a BudgetedObjective (it counts the oracle calls), "
                            f"got {type(objective).__name__}")

    def _new_es(self, restart: int):
        import cma

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cma.CMAEvolutionStrategy(self._x0.tolist(), self._sigma0, self._options(restart))

    def _ask_tell_loop(self, objective: BudgetedObjective, evaluate) -> OptimizeResult:
        """Generations until the budget is spent; ``evaluate(points)`` returns the values to
        tell. A generation that does not fit any more is evaluated as far as it goes."""
        self._check_objective(objective)
        best_x, best_f, ngen, restart, history = None, math.inf, 0, 0, []
        es = self._new_es(restart)
        while objective.remaining > 0:
            if es.stop():
                restart += 1
                es = self._new_es(restart)
            X = es.ask()
            points = [self._clip(x) for x in X]
            if objective.remaining < len(points):
                for x in points[:objective.remaining]:
                    objective(x)
                break
            f = evaluate(points)
            i = int(np.argmin(f))
            if f[i] < best_f:
                best_f, best_x = float(f[i]), points[i]
            es.tell(X, list(f))
            ngen += 1
            history.append({"evals": objective.n_calls, "sigma": float(es.sigma), "best_f": best_f})
        if best_x is None:
            best_x, best_f = objective.best_x, objective.best_f
        return self._result(objective, best_x, best_f, ngen, restart, history)

    def _result(self, objective, best_x, best_f, ngen, restarts, history) -> OptimizeResult:
        x = np.asarray(best_x if best_x is not None else objective.best_x, dtype=float)
        return OptimizeResult(x=x, fun=float(best_f), nfev=objective.n_calls, ngen=ngen,
                              history=history, method=self.method,
                              info={"restarts": restarts, "popsize": self._lam})


class SepCMABaseline(_PycmaBaseline):
    """sep-CMA-ES (pycma, ``CMA_diagonal=True``) at a fixed oracle budget.

    Parameters
    ----------
    x0, sigma0, bounds, popsize, seed
        As :class:`~icml26.pem.RBPEM`.
    diagonal : bool
        ``False`` gives full-covariance CMA-ES.

    References
    ----------
    Ros & Hansen, "A Simple Modification in CMA-ES Achieving Linear Time and Space Complexity",
    PPSN 2008. Wang & Lu, "Depth over Fidelity in Fixed-Budget Noisy Evolution Strategies", ICML
    2026 (arXiv:2606.06555): sep-CMA-ES is its main competitor.

    Examples
    --------
    >>> import numpy as np
    >>> from icml26.pem import SepCMABaseline, BudgetedObjective
    >>> obj = BudgetedObjective(lambda x: float(x @ x), budget=300)
    >>> SepCMABaseline(np.ones(4), 0.5, seed=1).optimize(obj).nfev
    300
    """

    def __init__(self, x0, sigma0, *, bounds=None, popsize=None, diagonal=True, seed=None):
        self.x0, self.sigma0, self.bounds = x0, sigma0, bounds
        self.popsize, self.diagonal, self.seed = popsize, diagonal, seed
        self.method = "sep_cma" if diagonal else "cma"
        self._setup()

    def optimize(self, objective: BudgetedObjective) -> OptimizeResult:
        """Run until the budget is spent (a partial last generation is evaluated, not told)."""
        def evaluate(points):
            return np.array([objective(x) for x in points])

        return self._ask_tell_loop(objective, evaluate)


class ResampleCMA(_PycmaBaseline):
    """sep-CMA-ES with fixed ``k``-fold resampling (mean of ``k`` evaluations per candidate).

    Each generation evaluates every candidate once, then rounds 2..k re-evaluate the
    candidates while budget remains (so the last generation may use fewer than ``k``).

    Parameters
    ----------
    x0, sigma0, bounds, popsize, seed
        As :class:`SepCMABaseline`.
    k : int
        Evaluations per candidate (the paper uses 2, 3, 5, 10).

    References
    ----------
    Ros & Hansen, "A Simple Modification in CMA-ES Achieving Linear Time and Space Complexity",
    PPSN 2008. Fixed resampling is the fidelity baseline of Wang & Lu, "Depth over Fidelity in
    Fixed-Budget Noisy Evolution Strategies", ICML 2026 (arXiv:2606.06555).

    Examples
    --------
    >>> import numpy as np
    >>> from icml26.pem import ResampleCMA, BudgetedObjective
    >>> obj = BudgetedObjective(lambda x: float(x @ x), budget=203)
    >>> ResampleCMA(np.ones(4), 0.5, k=5, seed=1).optimize(obj).nfev
    203
    """

    def __init__(self, x0, sigma0, *, k=5, bounds=None, popsize=None, seed=None):
        self.x0, self.sigma0, self.bounds = x0, sigma0, bounds
        self.k, self.popsize, self.seed = k, popsize, seed
        self.method = f"resample{k}"
        check_int(k, "k", min_value=1)
        self._setup()

    def optimize(self, objective: BudgetedObjective) -> OptimizeResult:
        """Run until the budget is spent; rounds 2..k stop when the budget does."""
        def evaluate(points):
            sums = np.array([objective(x) for x in points])
            counts = np.ones(len(points))
            for _ in range(2, self.k + 1):
                for i in range(min(len(points), objective.remaining)):
                    sums[i] += objective(points[i])
                    counts[i] += 1
            return sums / counts

        return self._ask_tell_loop(objective, evaluate)


class UHCMA(_PycmaBaseline):
    """UH-CMA-ES: pycma's ``NoiseHandler`` (uncertainty handling of Hansen et al. 2009).

    ``cma.fmin2(..., noise_handler=NoiseHandler(n, maxevals=[1, 1, maxevals],
    aggregate=np.median, epsilon=epsilon))`` with the same λ and σ0 as the other methods
    and all tolerances off; the budget wrapper stops it at exactly ``B`` calls.

    Parameters
    ----------
    x0, sigma0, bounds, popsize, seed
        As :class:`SepCMABaseline`.
    maxevals : int
        Largest number of evaluations per fitness value (the paper's UH30 uses 30).
    epsilon : float
        Re-evaluation perturbation (0: re-evaluate the same point).
    diagonal : bool
        Diagonal covariance (default ``False``: the reference code runs full CMA-ES here).

    References
    ----------
    Hansen, Niederberger, Guzzella & Koumoutsakos, "A Method for Handling Uncertainty in
    Evolutionary Optimization With an Application to Feedback Control of Combustion", IEEE
    Transactions on Evolutionary Computation 13(1), 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from icml26.pem import UHCMA, BudgetedObjective
    >>> obj = BudgetedObjective(lambda x: float(x @ x), budget=250)
    >>> UHCMA(np.ones(4), 0.5, seed=1).optimize(obj).nfev
    250
    """

    def __init__(self, x0, sigma0, *, maxevals=30, epsilon=0.0, bounds=None, popsize=None,
                 diagonal=False, seed=None):
        self.x0, self.sigma0, self.bounds = x0, sigma0, bounds
        self.maxevals, self.epsilon, self.popsize = maxevals, epsilon, popsize
        self.diagonal, self.seed = diagonal, seed
        self.method = f"uh{maxevals}"
        check_int(maxevals, "maxevals", min_value=1)
        self._setup()

    def optimize(self, objective: BudgetedObjective) -> OptimizeResult:
        import cma

        self._check_objective(objective)
        state = {"es": None, "ngen": 0}
        best_x, best_f, restart = None, math.inf, 0

        def callback(es):
            state["es"] = es
            state["ngen"] += 1

        def wrapped(x):
            return objective(self._clip(x))

        while objective.remaining > 0:
            handler = cma.NoiseHandler(self._x0.size, maxevals=[1, 1, int(self.maxevals)],
                                       aggregate=np.median, epsilon=float(self.epsilon))
            state["es"] = None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cma.fmin2(wrapped, self._x0.tolist(), self._sigma0, self._options(restart),
                              noise_handler=handler, callback=callback)
            except BudgetExhausted:
                pass
            es = state["es"]
            if es is not None and es.result.fbest is not None and es.result.fbest < best_f:
                best_f, best_x = float(es.result.fbest), self._clip(es.result.xbest)
            restart += 1
        if best_x is None:
            best_x, best_f = objective.best_x, objective.best_f
        return self._result(objective, best_x, best_f, state["ngen"], restart - 1, [])
