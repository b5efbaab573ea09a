"""fsba experiment: the quick run of every part, and the pieces the experiment added to the library
(Newton secular solve, diagnostics left out of the timings, numeric lazy regularization, pooling)."""

import time

import numpy as np
import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part
from icml26.fsba import (FSBA, LFSBA, BilevelProblem, NotStronglyConvexError, cubic_model,
                         cubic_step, hyper_cleaning_digits, make_saddle_bilevel)
from icml26.fsba.experiment import SaddleConfig, run_saddle


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("fsba")


def _passed(outcome, prefix=""):
    return {c.name: c for c in outcome.result.claims if c.name.startswith(prefix)}


def test_saddle_quick_every_claim_passes(experiment):
    outcome = run_part(experiment, "saddle", quick=True)
    assert not outcome.failed_jobs
    claims = outcome.result.claims
    assert len(claims) == 5
    for claim in claims:
        assert claim.passed, (claim.name, claim.measured, claim.note)
    assert outcome.result.figures["e1_saddle_escape"].axes[0].get_ylabel() == "φ(x_t) − φ*"


def test_lazy_scaling_quick_cost_ratio_above_one(experiment):
    outcome = run_part(experiment, "lazy-scaling", quick=True)
    claims = outcome.claims_by_name()
    assert claims["E2 LFSBA reaches the SOSP on every run"].passed
    ratio = claims["E2 cost-model ratio at every d (min over runs)"]
    assert ratio.passed and ratio.measured > 3.0
    # the slope needs d up to 160 and the wall-clock ratio is timing: reported, not asserted
    assert "E2 slope of log(cost ratio) vs log d" in claims
    gated = claims["E2 measured-time ratio T_FSBA/T_LFSBA at d ≥ 320 (min over runs)"]
    assert gated.incomplete and "min over every d" in gated.note      # quick dims stop at 80
    assert "e2_lazy_ratio" in outcome.result.figures
    old = run_part(experiment, "lazy-scaling", quick=True, overrides={"time_gate_min_d": 0})
    assert "E2 measured-time ratio T_FSBA/T_LFSBA at every d (min over runs)" in old.claims_by_name()


def test_method_seconds_are_cpu_seconds():
    from icml26.fsba import optimizers

    assert optimizers._clock is __import__("time").process_time


def test_hyper_cleaning_quick_fsba_beats_f2ba(experiment):
    outcome = run_part(experiment, "hyper-cleaning", quick=True)
    assert not outcome.failed_jobs
    claims = outcome.result.claims
    assert len(claims) == 4
    # at quick scale (60 samples, 4×4 images, 30 F2BA steps) the accuracy and F1 bars are
    # reported only; FSBA reaching F2BA's final loss early is checked
    assert claims[0].passed and claims[0].measured <= 8
    assert np.isfinite(claims[2].measured) and claims[2].measured > 0.0
    assert "e3_validation_vs_time" in outcome.result.figures


def test_minimax_quick_every_claim_passes(experiment):
    outcome = run_part(experiment, "minimax", quick=True)
    assert not outcome.failed_jobs
    assert len(outcome.result.claims) == 6
    for claim in outcome.result.claims:
        assert claim.passed, (claim.name, claim.measured, claim.note)


def test_penalty_rate_quick_slopes_near_minus_one(experiment):
    outcome = run_part(experiment, "penalty-rate", quick=True)
    assert len(outcome.result.claims) == 3
    for claim in outcome.result.claims:
        assert claim.passed, (claim.name, claim.measured)


def test_saddle_job_is_deterministic():
    config = SaddleConfig(first_order_iters=200)
    a = run_saddle(config, 3, {"method": "perturbed F2BA"})
    b = run_saddle(config, 3, {"method": "perturbed F2BA"})
    assert a["phi_gap"] == b["phi_gap"] and a["first_sosp"] == b["first_sosp"]


def test_cubic_step_satisfies_the_global_optimality_conditions():
    """(H + (M/2)‖s‖I)s = −G and H + (M/2)‖s‖I ⪰ 0 (Nesterov & Polyak 2006, Thm 10)."""
    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        A = rng.standard_normal((n, n))
        H = A + A.T
        lam = np.linalg.eigvalsh(H)
        G = rng.standard_normal(n) * 10 ** rng.uniform(-4, 2)
        M = 10 ** rng.uniform(-2, 2)
        s = cubic_step(G, H, M)
        shift = 0.5 * M * np.linalg.norm(s)
        assert lam[0] + shift >= -1e-8 * (1 + abs(lam[0]))
        # the residual is conditioned by ‖H‖‖s‖ (small G, long steps sit next to the pole)
        scale = 1 + np.linalg.norm(G) + np.linalg.norm(H, 2) * np.linalg.norm(s)
        assert np.linalg.norm((H + shift * np.eye(n)) @ s + G) <= 1e-8 * scale


def test_cubic_step_next_to_the_hard_case_matches_the_hard_case_step():
    """G almost ⊥ the bottom eigenvector: the model value tends to the hard-case minimum
    (the root of the secular equation sits within rounding of the pole)."""
    rng = np.random.default_rng(5)
    for _ in range(60):
        n = int(rng.integers(2, 12))
        A = rng.standard_normal((n, n))
        H = A + A.T
        lam, V = np.linalg.eigh(H)
        G_hard = rng.standard_normal(n)
        G_hard -= V[:, 0] * (V[:, 0] @ G_hard)
        M = 10 ** rng.uniform(-1, 1)
        s_hard = cubic_step(G_hard, H, M)
        assert np.linalg.norm(s_hard) == pytest.approx(-2 * lam[0] / M, rel=1e-9) \
            or np.linalg.norm(s_hard) > -2 * lam[0] / M
        G = G_hard + 1e-9 * V[:, 0]
        s = cubic_step(G, H, M)
        best = cubic_model(G, H, M, s)
        assert best <= cubic_model(G, H, M, s_hard) + 1e-6 * (1 + abs(best))
        assert best <= cubic_model(G, H, M, -s) + 1e-12


def test_recorded_seconds_leave_out_the_diagnostics():
    problem, x0 = make_saddle_bilevel(d=8, seed=0)
    phi = problem.exact["phi"]

    def slow_phi(x):
        time.sleep(0.02)
        return phi(x)

    problem.exact = dict(problem.exact, phi=slow_phi)
    result = FSBA(penalty=1e4, max_iter=100).minimize(problem, x0)
    slept = 0.02 * len(result.history["iteration"])
    seconds = result.history["seconds"]
    assert np.all(np.diff(seconds) >= 0)
    assert seconds[-1] < 0.5 * slept


def test_numeric_lazy_regularization_scale():
    problem, x0 = make_saddle_bilevel(d=8, seed=0)
    opt = LFSBA(penalty=1e4, lazy_period=4, lazy_reg_scale=3.0)
    assert opt._lazy_reg_factor(4) == 3.0
    assert LFSBA(lazy_period=4)._lazy_reg_factor(4) == 2.0
    assert LFSBA(lazy_period=4, lazy_reg_scale="linear")._lazy_reg_factor(4) == 4.0
    assert opt.minimize(problem, x0).first_sosp_iteration() is not None
    with pytest.raises(ValueError, match="lazy_reg_scale"):
        LFSBA(lazy_reg_scale=-1.0).minimize(problem, x0)
    with pytest.raises(ValueError, match="lazy_reg_scale"):
        LFSBA(lazy_reg_scale="cubic").minimize(problem, x0)


def test_pooled_digits_and_bad_pooling():
    task = hyper_cleaning_digits(0, n_train=20, n_val=20, pooling=2)
    assert task.train[0].shape == (20, 17) and task.problem.dy == 170
    full = hyper_cleaning_digits(0, n_train=20, n_val=20)
    # 2×2 mean of the first block equals the pooled first feature
    np.testing.assert_allclose(task.train[0][:, 0],
                               full.train[0][:, [0, 1, 8, 9]].mean(axis=1))
    with pytest.raises(ValueError, match="pooling must divide"):
        hyper_cleaning_digits(0, pooling=3)


def test_lower_level_not_strongly_convex_is_detected():
    problem = BilevelProblem(lambda x, y: (y ** 2).sum() + (x ** 2).sum(),
                             lambda x, y: -0.5 * (y ** 2).sum() + (x * y).sum(), 2, 2)
    with pytest.raises(NotStronglyConvexError, match="lower-level Hessian") as info:
        FSBA().minimize(problem, np.ones(2))
    assert info.value.min_eigenvalue == pytest.approx(-1.0)
    problem, x0 = make_saddle_bilevel(d=8, seed=0)
    with pytest.raises(ValueError, match="y0 contains NaN"):
        FSBA().minimize(problem, x0, y0=np.full(8, np.nan))
