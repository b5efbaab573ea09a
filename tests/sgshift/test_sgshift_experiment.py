"""Every part's quick config through the runner: the table's claims by id, their kinds and
controls, and that the gates can flip (a planted Wald control reads NOT EARNED)."""

import numpy as np
import pytest

from icml26.core.claims import Measurement, evaluate
from icml26.core.runner import run_part


@pytest.fixture(scope="module")
def experiment():
    # import the module directly: discovering every method package is slow
    from icml26.sgshift.experiment import EXPERIMENT
    return EXPERIMENT


def _by_id(experiment, part):
    outcome = run_part(experiment, part, quick=True)
    outcome.claims_by_name()                     # raises on a failed job or summarize
    return {c.id: c for c in outcome.result.claims}, outcome.result


def test_experiment_is_registered_with_its_parts(experiment):
    assert [p.name for p in experiment.parts] == ["A", "B", "C", "D", "speed"]
    assert "2505.20634" in experiment.reference
    assert experiment.table.headline == "A/error_ratio_n200"


def test_part_a_quick_builds_every_claim_with_the_wald_control(experiment):
    claims, result = _by_id(experiment, "A")
    assert set(claims) == {s.id for s in experiment.part("A").claim_specs}
    for n in (200, 1000):
        ratio = claims[f"A/error_ratio_n{n}"]
        assert ratio.control["key"] == f"error_ratio_wald_n{n}" and ratio.interval is not None
        auroc = claims[f"A/auroc_n{n}"]
        assert auroc.control["key"] == f"auroc_wald_n{n}"
        assert auroc.competitor["key"] == f"auroc_diff_n{n}"
        assert claims[f"A/auroc_gap_n{n}"].alt == [] and auroc.alt[0]["label"] == "spec"
    assert "A_feature_identification" in result.tables and "A_auroc_vs_n_target" in result.figures
    assert "offset-GLM Wald" in set(result.tables["A_feature_identification"]["method"])


def test_a_lead_is_not_earned_when_the_wald_ranking_clears_it_too(experiment):
    specs = experiment.claim_specs("A/error_ratio_n200")
    ratio = Measurement(0.25, interval=(0.15, 0.40))
    verdict = lambda wald: evaluate(specs, {"error_ratio_n200": ratio,  # noqa: E731
                                            "error_ratio_wald_n200": wald})[0].verdict
    assert verdict(0.7) == "PASS"
    assert verdict(0.05) == "NOT EARNED"         # n_T = 1000: the unpenalised GLM is better
    assert evaluate(specs, {"error_ratio_n200": Measurement(0.4, interval=(0.3, 0.6)),
                            "error_ratio_wald_n200": 0.7})[0].verdict == "INCONCLUSIVE"


def test_ratio_of_means_interval_is_scipys_paired_bca():
    from scipy.stats import bootstrap

    from icml26.sgshift.experiment import INTERVAL_LEVEL, ratio_of_means

    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.0, 0.1, 15), rng.uniform(0.1, 0.3, 15)
    got = ratio_of_means(a, b)
    assert got.value == pytest.approx(a.mean() / b.mean())
    ref = bootstrap((a, b), lambda x, y, axis=-1: x.mean(axis) / y.mean(axis), paired=True,
                    vectorized=True, method="BCa", confidence_level=INTERVAL_LEVEL,
                    n_resamples=9999, random_state=np.random.default_rng(0)).confidence_interval
    assert got.interval == pytest.approx((ref.low, ref.high))
    assert ratio_of_means([0.1], [0.2]).incomplete


def test_part_b_quick_claims(experiment):
    claims, _ = _by_id(experiment, "B")
    gain, omitted = claims["B/absorption_gain"], claims["B/omitted_entry_a"]
    # two quick seeds: the 0.04 margin is too noisy to demand, its sign is not
    assert gain.measured >= 0 and gain.control["key"] == "wald_gain"
    assert omitted.passed and omitted.control["meets_bar"] is False   # basic SGShift blames them


def test_part_c_quick_claims(experiment):
    claims, _ = _by_id(experiment, "C")
    assert claims["C/fp_bound"].passed and claims["C/fp_bound"].kind == "check"
    assert claims["C/fp_vs_basic"].control["key"] == "fp_cv_vs_basic"
    assert claims["C/recall_within_bound"].control["key"] == "recall_within_bound_wald"


def test_part_d_reports_tables_without_claims(experiment):
    _, result = _by_id(experiment, "D")
    table = result.tables["D_support2"]
    assert {"SGShift", "Diff", "offset-GLM Wald"} <= set(table["method"])
    assert result.claims == []


def test_speed_claim_is_a_check(experiment):
    claims, _ = _by_id(experiment, "speed")
    assert claims["speed/path_seconds"].passed and claims["speed/path_seconds"].kind == "check"
