"""Probe-and-switch: measure ranking noise once, then run RB-PEM or sep-CMA-ES.

A probe population ``x0 + σ0·N(0, I)`` of size λ is evaluated twice (2λ calls, charged to
the budget); if the rank disagreement ``RD ≥ τ`` (default 0.12) RB-PEM spends the rest of
the budget, otherwise plain sep-CMA-ES does. Also home of :func:`minimize`, the front
door to every optimizer in :mod:`icml26.pem`.

References
----------
S. Wang, Z. Lu. *Depth over Fidelity in Fixed-Budget Noisy Evolution Strategies.*
ICML 2026 (arXiv 2606.06555); code name ``ProbeSwitch-MR(t=0.12)``.
"""

from __future__ import annotations

import numpy as np

from icml26.core.validation import check_choice, check_int, check_scalar_in

from .baselines import ResampleCMA, SepCMABaseline, UHCMA
from .objective import BudgetedObjective, OptimizeResult
from .pem import RBPEM, _check_x0_sigma0, default_popsize, rank_disagreement

__all__ = ["ProbeSwitch", "minimize", "METHODS"]


class ProbeSwitch:
    """Probe-and-switch between RB-PEM (high misranking) and sep-CMA-ES (low noise).

    Parameters
    ----------
    x0, sigma0 : array-like, float
        Initial point and step size (also the probe's centre and spread).
    threshold : float
        ``τ``: run RB-PEM when the probe's rank disagreement is ``≥ τ`` (0.12; the
        paper's conservative transfer value is 0.22).
    bounds, popsize, seed
        As :class:`~icml26.pem.RBPEM`.
    **rbpem_kwargs
        Passed to :class:`~icml26.pem.RBPEM`.

    Attributes
    ----------
    probe_rd_ : float
        Rank disagreement measured by the probe (nan when the probe was skipped).
    choice_ : {"rbpem", "sep_cma"}

    References
    ----------
    Wang & Lu, "Depth over Fidelity in Fixed-Budget Noisy Evolution Strategies", ICML 2026
    (arXiv:2606.06555). Its probe-and-switch rule.

    Examples
    --------
    >>> import numpy as np
    >>> from icml26.pem import ProbeSwitch, BudgetedObjective
    >>> noise = np.random.default_rng(0)
    >>> obj = BudgetedObjective(lambda x: float(x @ x) + 30 * noise.normal(), budget=400)
    >>> res = ProbeSwitch(np.ones(5), 1.0, bounds=(-5, 5), seed=0).optimize(obj)
    >>> res.nfev, res.info["choice"]
    (400, 'rbpem')
    """

    def __init__(self, x0, sigma0, *, threshold=0.12, bounds=None, popsize=None, seed=None,
                 **rbpem_kwargs):
        self.x0, self.sigma0, self.threshold = x0, sigma0, threshold
        self.bounds, self.popsize, self.seed = bounds, popsize, seed
        self.rbpem_kwargs = rbpem_kwargs
        self._x0, self._sigma0, self._box = _check_x0_sigma0(x0, sigma0, bounds)
        check_scalar_in(threshold, "threshold", low=0.0)
        self._lam = (default_popsize(self._x0.size) if popsize is None
                     else check_int(popsize, "popsize", min_value=2))
        RBPEM(self._x0, self._sigma0, bounds=bounds, popsize=popsize, **rbpem_kwargs)  # validate

    def optimize(self, objective: BudgetedObjective) -> OptimizeResult:
        """Probe (2λ calls), then spend the remaining budget on the chosen optimizer."""
        if not isinstance(objective, BudgetedObjective):
            raise TypeError("objective must be a BudgetedObjective (it counts the oracle calls), "
                            f"got {type(objective).__name__}")
        probe_seed, run_seed = np.random.SeedSequence(self.seed).spawn(2)
        self.probe_rd_ = float("nan")
        if objective.remaining >= 2 * self._lam:
            rng = np.random.default_rng(probe_seed)
            X = self._x0[None, :] + self._sigma0 * rng.standard_normal((self._lam, self._x0.size))
            if self._box is not None:
                X = np.clip(X, *self._box)
            f1 = np.array([objective(x) for x in X])
            f2 = np.array([objective(x) for x in X])
            self.probe_rd_ = rank_disagreement(f1, f2)
        use_pem = self.probe_rd_ >= self.threshold   # nan (skipped probe) -> sep-CMA
        self.choice_ = "rbpem" if use_pem else "sep_cma"
        seed = int(run_seed.generate_state(1)[0])
        if use_pem:
            inner = RBPEM(self._x0, self._sigma0, bounds=self.bounds, popsize=self.popsize,
                          seed=seed, **self.rbpem_kwargs)
        else:
            inner = SepCMABaseline(self._x0, self._sigma0, bounds=self.bounds,
                                   popsize=self.popsize, seed=seed)
        result = inner.optimize(objective) if objective.remaining > 0 else OptimizeResult(
            x=objective.best_x, fun=objective.best_f, nfev=objective.n_calls, ngen=0)
        result.method = "probe_switch"
        result.info = {**result.info, "probe_rd": self.probe_rd_, "choice": self.choice_}
        return result


METHODS = ("rbpem", "probe_switch", "sep_cma", "resample", "uh_cma")


def minimize(fun, x0, sigma0, budget, method="rbpem", bounds=None, seed=None,
             **kw) -> OptimizeResult:
    """Minimize a noisy function with exactly ``budget`` oracle calls.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> float`` (noisy).
    x0 : array-like of shape (n,)
    sigma0 : float
    budget : int
        Total oracle calls ``B`` (re-evaluations and probes included).
    method : {"rbpem", "probe_switch", "sep_cma", "resample", "uh_cma"}
    bounds : (lb, ub), optional
    seed : int, optional
    **kw
        Passed to the optimizer (e.g. ``n_bootstrap=64``, ``k=5``, ``maxevals=30``).

    Returns
    -------
    OptimizeResult

    Examples
    --------
    >>> import numpy as np
    >>> from icml26.pem import minimize
    >>> noise = np.random.default_rng(0)
    >>> res = minimize(lambda x: float(x @ x) + noise.normal(), np.ones(3), 0.5, budget=300,
    ...                seed=0)
    >>> res.nfev
    300
    """
    check_choice(method, "method", METHODS)
    objective = BudgetedObjective(fun, budget)
    cls = {"rbpem": RBPEM, "probe_switch": ProbeSwitch, "sep_cma": SepCMABaseline,
           "resample": ResampleCMA, "uh_cma": UHCMA}[method]
    return cls(x0, sigma0, bounds=bounds, seed=seed, **kw).optimize(objective)
