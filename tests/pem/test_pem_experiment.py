"""Quick configs of every part through the core runner; structure and meaningful claims."""

import numpy as np
import pytest

from icml26.core.runner import run_part
from icml26.pem.data import (HIGH_MISRANKING_FUNCTIONS, NoisyLogRegHPO, mechanism_candidate_sets,
                             read_final_noise_free, run_on_bbob_noisy)
from icml26.pem.experiment import EXPERIMENT, pairwise


@pytest.fixture(scope="module")
def experiment():
    return EXPERIMENT      # importing icml26.pem.experiment registered it


def _by_id(outcome):
    return outcome.claims_by_id()               # raises on a failed job or summarize


def test_e1_quick_builds_every_table_claim_with_its_controls(experiment):
    claims = _by_id(run_part(experiment, "E1", quick=True))
    specs = experiment.part("E1").claim_specs
    assert set(claims) == {s.id for s in specs}
    assert claims["E1/budget_exact"].passed and claims["E1/budget_exact"].kind == "check"
    win = claims["E1/rbpem_vs_resample5"]
    assert win.interval is not None and win.control["key"] == "base_hard_vs_resample5"
    assert win.competitor["key"] == "sepcma_vs_resample5"
    assert all(c.verdict != "INCOMPLETE" for c in claims.values()), claims


def test_e1_win_fraction_interval_is_the_exact_binomial_interval():
    from scipy.stats import binomtest

    from icml26.pem.experiment import WIN_INTERVAL_LEVEL, win_measurement

    m = win_measurement(55, 20, ties=2)
    ci = binomtest(55, 75).proportion_ci(WIN_INTERVAL_LEVEL, method="exact")
    assert m.value == pytest.approx(55 / 75) and m.interval == pytest.approx((ci.low, ci.high))
    assert "ties 2" in m.note


def test_e1_a_win_the_base_es_without_pem_also_has_is_not_earned(experiment):
    from icml26.core.claims import evaluate
    from icml26.pem.experiment import win_measurement

    specs = [s for s in experiment.part("E1").claim_specs if s.id == "E1/rbpem_vs_resample5"]
    strong = {"rbpem_vs_resample5": win_measurement(55, 20),
              "sepcma_vs_resample5": win_measurement(50, 25)}
    assert evaluate(specs, {**strong, "base_hard_vs_resample5": win_measurement(20, 55)}
                    )[0].verdict == "PASS"          # the stand-in's interval lies below 0.5
    assert evaluate(specs, {**strong, "base_hard_vs_resample5": win_measurement(60, 15)}
                    )[0].verdict == "NOT EARNED"    # ... or wholly above it
    # 30/45: the stand-in's 90 % interval [0.305, 0.501] reaches the bar, so the data cannot
    # say it fails: the control is read by its interval, and the claim is INCONCLUSIVE
    assert evaluate(specs, {**strong, "base_hard_vs_resample5": win_measurement(30, 45)}
                    )[0].verdict == "INCONCLUSIVE"


def test_e1_not_worse_is_decided_on_the_interval(experiment):
    from icml26.core.claims import evaluate
    from icml26.pem.experiment import win_measurement

    specs = [s for s in experiment.part("E1").claim_specs if s.id == "E1/rbpem_vs_sepcma"]
    control = {"resample5_vs_sepcma": win_measurement(15, 60)}
    verdict = lambda w, l: evaluate(specs, {"rbpem_vs_sepcma": win_measurement(w, l),  # noqa: E731
                                            **control})[0].verdict
    assert verdict(30, 45) == "INCONCLUSIVE"  # 0.40 [0.30, 0.50]: cannot tell
    assert verdict(20, 55) == "FAIL"          # a clear loss can no longer pass
    assert verdict(45, 30) == "PASS"


def test_e1b_quick_measures_the_base_es_control(experiment):
    claims = _by_id(run_part(experiment, "E1b", quick=True))
    assert claims["E1b/rbpem_vs_sepcma"].control["key"] == "base_hard_vs_sepcma"
    assert claims["E1b/budget_exact"].passed


def test_e2_quick_mechanism_claims_pass_and_the_shrink_control_fails(experiment):
    claims = _by_id(run_part(experiment, "E2", quick=True))
    assert len(claims) == 4 and all(c.passed for c in claims.values()), claims
    assert claims["E2/mse_ratio"].control["meets_bar"] is False
    assert claims["E2/mean_ratio"].kind == "check" and claims["E2/jensen"].kind == "check"


def test_e3_quick_overhead_checks_pass(experiment):
    claims = _by_id(run_part(experiment, "E3", quick=True))
    assert len(claims) == 3 and all(c.passed and c.kind == "check" for c in claims.values())


def test_e4_quick(experiment):
    outcome = run_part(experiment, "E4", quick=True)
    claims = _by_id(outcome)
    assert claims["E4/budget_exact"].passed
    test = claims["E4/rbpem_vs_resample5"]
    assert test.control["key"] == "base_hard_vs_resample5" and test.interval is not None
    assert "E4 noise-free validation log-loss" in outcome.result.tables
    assert any("post-selection" in n for n in outcome.result.notes)


def test_e4_sign_test_matches_the_binomial_tail():
    from math import comb

    from icml26.pem.experiment import sign_test

    a = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, 3.0, 2.0])
    b = np.array([2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0])
    out = sign_test(a, b)                              # 7 wins, 2 losses, 1 tie
    assert (out["wins"], out["losses"], out["ties"]) == (7, 2, 1)
    assert out["p_one_sided"] == pytest.approx(sum(comb(9, k) for k in range(7, 10)) / 2 ** 9)


def test_postselect_returns_the_archive_point_with_the_best_mean():
    from icml26.pem.objective import EvaluationArchive, postselect

    calls = []

    def noisy(x, rng=None):
        calls.append(1)
        rng = np.random.default_rng(len(calls)) if rng is None else rng
        return float(np.sum(np.asarray(x) ** 2) + 0.5 * rng.normal())

    archive = EvaluationArchive(noisy, k=3)
    for v in (2.0, 0.0, 1.0, 3.0, 0.5):
        archive(np.array([v]))
    assert len(archive.candidates()) == 3
    assert len(calls) == 5                              # the archive makes no extra call
    x, mean = postselect(noisy, archive.candidates(), runs=200, seed=0)
    assert x.tolist() == [0.0] and abs(mean) < 0.1
    # common random numbers: equal points would get identical means
    _, m1 = postselect(noisy, [np.array([1.0])], runs=5, seed=1)
    _, m2 = postselect(noisy, [np.array([1.0])], runs=5, seed=1)
    assert m1 == m2


def test_e4_best_observed_rule_is_still_reachable(experiment):
    from dataclasses import replace

    from icml26.pem.experiment import run_hpo

    quick = experiment.part("E4").config(quick=True)
    out = run_hpo(replace(quick, returned_point="best_observed",
                          algorithms=("rbpem", "resample5")), 0)
    assert set(out) == {"rbpem", "resample5"} and out["rbpem"]["calls"] == quick.budget
    with pytest.raises(ValueError, match="returned_point"):
        run_hpo(replace(quick, returned_point="last"), 0)


def test_bbob_noisy_run_reports_noise_free_delta_f():
    def random_search(fun, x0, bounds, budget):
        rng = np.random.default_rng(0)
        return min(fun(rng.uniform(*bounds)) for _ in range(budget))

    res = run_on_bbob_noisy(random_search, 101, 1, 2, 50)   # noisy sphere, moderate Gaussian
    assert res["evaluations"] == 50 and res["delta_f"] > 0 and not res["solved"]


def test_high_misranking_slice_has_fifteen_functions():
    assert len(HIGH_MISRANKING_FUNCTIONS) == 15
    assert all(101 <= f <= 130 for f in HIGH_MISRANKING_FUNCTIONS)


def test_read_final_noise_free_takes_the_last_data_line(tmp_path):
    (tmp_path / "data_f101").mkdir()
    (tmp_path / "data_f101" / "x.dat").write_text(
        "% header\n1 0 +5.0e+00 +6.0e+00\n% next\n10 0 +2.5e-01 +1.0e+00\n")
    assert read_final_noise_free(tmp_path) == 0.25


def test_pairwise_counts_both_at_target_as_tie():
    import pandas as pd

    frame = pd.DataFrame([
        {"seed": 0, "function": 1, "instance": 1, "algorithm": "a", "delta_f": 1e-9},
        {"seed": 0, "function": 1, "instance": 1, "algorithm": "b", "delta_f": 1e-10},
        {"seed": 0, "function": 2, "instance": 1, "algorithm": "a", "delta_f": 1.0},
        {"seed": 0, "function": 2, "instance": 1, "algorithm": "b", "delta_f": 2.0},
    ])
    r = pairwise(frame, "a", "b")
    assert (r["wins"], r["losses"], r["ties"], r["win_rate"]) == (1, 0, 1, 0.75)


def test_mechanism_generator_values_are_the_quadratic():
    m, Y, f = mechanism_candidate_sets(2, dimension=5, popsize=4, rng=0)
    np.testing.assert_allclose(f, 0.5 * np.sum((m[:, None, :] + Y) ** 2, axis=2))


def test_hpo_objective_is_noisy_and_finite():
    task = NoisyLogRegHPO(seed=0)
    x = np.array([-1.0, -4.0, 0.0, 5.0, -2.0])
    values = [task(x) for _ in range(3)]
    assert np.all(np.isfinite(values)) and len(set(values)) == 3
    assert np.isfinite(task([-0.5, -6.0, 3.0, 2.0, 0.0]))   # the most aggressive corner
