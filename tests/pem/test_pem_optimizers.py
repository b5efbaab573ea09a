"""RB-PEM, probe-and-switch and the pycma baselines: budget, invariants, bad input."""

import math

import numpy as np
import pytest

from icml26.pem import (RBPEM, UHCMA, BudgetedObjective, BudgetExhausted, ProbeSwitch,
                        ResampleCMA, SepCMABaseline, minimize)


def noisy_sphere(noise, seed=0):
    rng = np.random.default_rng(seed)
    return lambda x: float(np.sum(np.asarray(x) ** 2) + noise * rng.standard_normal())


# -- BudgetedObjective ------------------------------------------------------------------

def test_budget_refuses_call_after_limit():
    calls = []
    obj = BudgetedObjective(lambda x: calls.append(1) or 1.0, budget=3)
    for _ in range(3):
        obj(np.zeros(2))
    with pytest.raises(BudgetExhausted):
        obj(np.zeros(2))
    assert obj.n_calls == 3 and len(calls) == 3


def test_budget_tracks_best_and_noise_free():
    obj = BudgetedObjective(lambda x: float(x[0]) + 1.0, budget=5, noise_free=lambda x: float(x[0]))
    for v in (3.0, -1.0, 2.0):
        obj(np.array([v]))
    assert obj.best_f == 0.0 and obj.best_x.tolist() == [-1.0] and obj.best_noise_free == -1.0
    assert [h[0] for h in obj.history] == [1, 2, 3]


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_objective_returning_non_finite_raises(value):
    obj = BudgetedObjective(lambda x: value, budget=5)
    with pytest.raises(ValueError, match="objective returned"):
        obj(np.zeros(2))


def test_nan_policy_worst_maps_to_inf():
    obj = BudgetedObjective(lambda x: np.nan, budget=5, nan_policy="worst")
    assert obj(np.zeros(2)) == math.inf


def test_objective_returning_non_scalar_raises():
    obj = BudgetedObjective(lambda x: np.ones(2), budget=5)
    with pytest.raises(ValueError, match="real scalar"):
        obj(np.zeros(2))


def test_budget_must_be_positive():
    with pytest.raises(ValueError, match="budget"):
        BudgetedObjective(lambda x: 0.0, budget=0)


# -- RB-PEM --------------------------------------------------------------------------

@pytest.mark.parametrize("budget", [1, 7, 100, 357])
def test_rbpem_uses_exactly_the_budget(budget):
    obj = BudgetedObjective(noisy_sphere(1.0), budget)
    with pytest.warns(UserWarning) if budget < 8 else _nullcontext():
        res = RBPEM(np.ones(6), 0.5, bounds=(-5, 5), seed=0).optimize(obj)
    assert obj.n_calls == budget and res.nfev == budget


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_too_few_residuals_leave_the_pool_empty():
    # 2 re-evaluated points (4 residuals < 6) never feed the pool: hard weights
    opt = RBPEM(np.ones(4), 0.5, seed=0)
    opt.optimize(BudgetedObjective(lambda x: float(x @ x), 200))
    assert opt.residual_pool_.size == 0


def test_rbpem_reevaluations_respect_the_cap():
    obj = BudgetedObjective(noisy_sphere(50.0), 1500)
    opt = RBPEM(np.full(10, 3.0), 1.5, bounds=(-5, 5), seed=1)
    opt.optimize(obj)
    assert all(h["reeval_calls"] <= math.floor(0.3 * h["lam"]) for h in opt.history_)
    assert sum(h["reeval_calls"] for h in opt.history_) / obj.n_calls <= 0.25
    assert opt.residual_pool_.size > 0 and opt.e_bar_ > 0


def test_rbpem_converges_on_noise_free_sphere():
    obj = BudgetedObjective(lambda x: float(x @ x), 3000)
    res = RBPEM(np.full(5, 3.0), 1.5, bounds=(-5, 5), seed=0).optimize(obj)
    assert res.fun < 1e-6


def test_rbpem_beats_its_start_under_noise():
    f = noisy_sphere(5.0)
    res = minimize(f, np.full(10, 3.0), 1.5, 2000, bounds=(-5, 5), seed=2)
    assert np.sum(res.x ** 2) < 0.2 * 90


def test_deterministic_objective_gives_a_pool_of_zeros():
    # 3 re-evaluated points give the 6 residuals the scale fit needs
    opt = RBPEM(np.ones(4), 0.5, popsize=10, reeval_min=3, seed=0)
    opt.optimize(BudgetedObjective(lambda x: float(x @ x), 400))
    assert opt.residual_pool_.size > 0 and np.all(opt.residual_pool_ == 0)


def test_rbpem_is_deterministic_given_seed():
    runs = [RBPEM(np.ones(5), 0.5, bounds=(-5, 5), seed=7).optimize(
        BudgetedObjective(noisy_sphere(1.0, seed=3), 500)) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].x, runs[1].x)


def test_ask_tell_round_trip_and_reevaluation_band():
    opt = RBPEM(np.zeros(3), 1.0, popsize=10, seed=0)
    X = opt.ask()
    f = np.arange(10.0)[::-1]          # candidate 9 is best
    idx = opt.request_reevaluations(f)
    assert len(idx) == 2               # reeval_min, e_bar = 0
    order = np.argsort(f)
    assert set(idx) <= set(order[2:7])  # band around sorted position mu-1 = 4
    opt.tell(X, [np.array([v, v]) if i in idx else np.array([v]) for i, v in enumerate(f)])
    assert opt.generation_ == 1


def test_tell_rejects_a_different_population():
    opt = RBPEM(np.zeros(3), 1.0, seed=0)
    X = opt.ask()
    with pytest.raises(ValueError, match="last ask"):
        opt.tell(X + 1.0, [np.array([0.0])] * len(X))


def test_restart_after_patience():
    opt = RBPEM(np.zeros(2), 1.0, bounds=(-1, 1), restart_patience=3, seed=0)
    opt.optimize(BudgetedObjective(lambda x: 1.0, 200))
    assert opt.n_restarts_ > 0


@pytest.mark.parametrize("kwargs, match", [
    ({"x0": [np.nan, 0.0]}, "x0"),
    ({"x0": [[0.0, 0.0]]}, "x0"),
    ({"sigma0": 0.0}, "sigma0"),
    ({"sigma0": np.inf}, "sigma0"),
    ({"popsize": 1}, "popsize"),
    ({"mu": 0}, "mu"),
    ({"mu": 100}, "mu"),
    ({"n_bootstrap": 0}, "n_bootstrap"),
    ({"reeval_max_frac": 1.5}, "reeval_max_frac"),
    ({"bounds": (1.0, 1.0)}, "lb < ub"),
    ({"bounds": ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])}, "shape"),
    ({"mean_update": "median"}, "mean_update"),
    ({"weights": "linear"}, "weights"),
])
def test_rbpem_rejects_bad_input(kwargs, match):
    args = {"x0": [0.0, 0.0], "sigma0": 1.0, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        RBPEM(args.pop("x0"), args.pop("sigma0"), **args)


def test_x0_outside_bounds_is_clipped_with_warning():
    with pytest.warns(UserWarning, match="outside bounds"):
        opt = RBPEM([3.0, 0.0], 0.5, bounds=(-1, 1))
    assert opt.mean_.tolist() == [1.0, 0.0]


def test_objective_nan_propagates_as_value_error():
    with pytest.raises(ValueError, match="objective returned nan"):
        minimize(lambda x: np.nan, np.zeros(2), 1.0, 50)


def test_optimize_needs_a_budgeted_objective():
    with pytest.raises(TypeError, match="BudgetedObjective"):
        RBPEM(np.zeros(2), 1.0).optimize(lambda x: 0.0)


# -- probe-and-switch and baselines ------------------------------------------------------

def test_probe_switch_picks_rbpem_under_heavy_noise():
    res = ProbeSwitch(np.ones(5), 1.0, bounds=(-5, 5), seed=0).optimize(
        BudgetedObjective(noisy_sphere(100.0), 300))
    assert res.info["choice"] == "rbpem" and res.info["probe_rd"] >= 0.12 and res.nfev == 300


def test_probe_switch_picks_sep_cma_without_noise():
    res = ProbeSwitch(np.ones(5), 1.0, bounds=(-5, 5), seed=0).optimize(
        BudgetedObjective(lambda x: float(x @ x), 300))
    assert res.info["choice"] == "sep_cma" and res.info["probe_rd"] == 0.0 and res.nfev == 300


def test_probe_is_skipped_when_budget_is_below_two_generations():
    res = ProbeSwitch(np.ones(5), 1.0, seed=0).optimize(BudgetedObjective(noisy_sphere(9.0), 10))
    assert res.info["choice"] == "sep_cma" and math.isnan(res.info["probe_rd"]) and res.nfev == 10


@pytest.mark.parametrize("method, kw", [("sep_cma", {}), ("resample", {"k": 5}),
                                        ("uh_cma", {"maxevals": 30}), ("probe_switch", {})])
@pytest.mark.parametrize("budget", [9, 233])
def test_every_method_uses_exactly_the_budget(method, kw, budget):
    res = minimize(noisy_sphere(20.0), np.full(4, 2.0), 1.0, budget, method=method,
                   bounds=(-5, 5), seed=0, **kw)
    assert res.nfev == budget


def test_resample_tells_the_mean_of_k_evaluations():
    values = iter(range(10_000))
    obj = BudgetedObjective(lambda x: float(next(values)), 8 * 5)
    res = ResampleCMA(np.zeros(3), 1.0, k=5, popsize=8, seed=0).optimize(obj)
    # candidate 0 of the only generation: calls 0, 8, 16, 24, 32 -> mean 16
    assert res.fun == pytest.approx(16.0) and res.ngen == 1


def test_baselines_are_deterministic_given_seed():
    for cls in (SepCMABaseline, UHCMA):
        a, b = [cls(np.ones(3), 0.5, seed=4).optimize(BudgetedObjective(noisy_sphere(1.0), 200))
                for _ in range(2)]
        np.testing.assert_array_equal(a.x, b.x)


def test_minimize_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        minimize(lambda x: 0.0, np.zeros(2), 1.0, 10, method="nelder_mead")
