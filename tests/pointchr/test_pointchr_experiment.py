"""Quick runs of every part through the runner: structure, finiteness, determinism, and the
quick-meaningful claims."""

import math

import pytest
import torch

from icml26.core.claims import Measurement, evaluate
from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part
from icml26.pointchr import experiment as E


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("pointchr")


def _by_id(outcome) -> dict:
    return {c.id: c for c in outcome.result.claims}


def test_part_a_quick_produces_all_claims_tables_and_figures(experiment):
    outcome = run_part(experiment, "A", quick=True)
    claims = _by_id(outcome)
    assert set(claims) == {"A/curv_gain", "A/kappa_hist_oa", "A/chr_gain", "A/chr_vs_shuffled",
                           "A/chr_curv_vs_curv", "A/chr_vs_curv", "A/spearman_kappa_radius",
                           "A/detail_weight_ratio"}
    m = outcome.result.measurements
    gains = ("curv_gain", "chr_gain", "chr_shuffled_gain", "chr_vs_shuffled", "base_vs_shuffled",
             "chr_vs_curv", "chr_curv_vs_curv")
    assert all(math.isfinite(m[k].value) for k in gains)
    assert all("sign test" in m[k].note and "paired t interval" in m[k].note for k in gains)
    assert "kappa_hist_oa" not in m            # the world check needs the full data
    assert claims["A/kappa_hist_oa"].verdict == "INCOMPLETE"
    # the mechanism holds from the first epochs: the gate is monotone in κ at initialisation
    assert claims["A/spearman_kappa_radius"].verdict == "PASS", m["spearman_kappa_radius"]
    assert set(outcome.result.figures) == {"FineDetail-8 OA per variant", "test cloud: κ and rectified radius",
                                           "training curves"}
    assert "test OA (%) per seed" in outcome.result.tables
    mech = next(t for n, t in outcome.result.tables.items() if n.startswith("CHR mechanism per seed"))
    assert {"detail_weight_ratio", "gate_a_init", "gate_b"} <= set(mech.columns)


def _a_specs(experiment):
    return list(experiment.part("A").claim_specs)


def _gain(*diffs):
    from icml26.core.stats import paired_t_interval

    return Measurement(sum(diffs) / len(diffs), interval=paired_t_interval(diffs, E.INTERVAL_LEVEL))


def test_headline_is_not_earned_when_the_shuffled_kappa_control_also_gains(experiment):
    base = {"curv_gain": _gain(7, 6, 5, 8, 6), "chr_gain": _gain(6, 5, 4, 6, 5)}
    weak = evaluate(_a_specs(experiment), {**base, "chr_shuffled_gain": _gain(0.5, -1, 0, 1, -0.5)})
    strong = evaluate(_a_specs(experiment), {**base, "chr_shuffled_gain": _gain(4, 5, 4, 6, 5)})
    assert {c.id: c for c in weak}["A/chr_gain"].verdict == "PASS"
    assert {c.id: c for c in strong}["A/chr_gain"].verdict == "NOT EARNED"


def test_headline_is_incomplete_when_the_positive_control_fails(experiment):
    claims = evaluate(_a_specs(experiment), {"curv_gain": _gain(0.1, -0.2, 0.3, 0.0, -0.1),
                                             "chr_gain": _gain(-1, -2, 0, -1, -1),
                                             "chr_shuffled_gain": _gain(0, 0.5, -0.5, 0, 0.1)})
    assert {c.id: c for c in claims}["A/chr_gain"].verdict == "INCOMPLETE"


def test_chr_on_top_of_kappa_is_decided_on_its_interval(experiment):
    common = {"curv_gain": _gain(7, 6, 5, 8, 6)}
    verdict = lambda g: {c.id: c for c in evaluate(_a_specs(experiment), {**common, "chr_curv_vs_curv": g})}[
        "A/chr_curv_vs_curv"].verdict
    assert verdict(_gain(1.0, 1.5, 0.8, 1.2, 1.1)) == "PASS"
    assert verdict(_gain(0.5, -1.0, -0.5, 0.25, 0.0)) == "INCONCLUSIVE"
    assert verdict(_gain(-1.0, -1.5, -0.8, -1.2, -1.1)) == "FAIL"


def test_job_cache_config_holds_no_machine_path(experiment, tmp_path, monkeypatch):
    for part in ("A", "dev", "coarse", "backbones", "full"):
        assert experiment.part(part).full.cache_dir == "default"
    seen = []
    monkeypatch.setattr(E, "cached_json", lambda folder, *a: seen.append(folder) or {"oa": 1.0})
    E._cached(E.CompareConfig(cache_dir="default"), 0, {"variant": "base"}, lambda: {})
    E._cached(E.CompareConfig(cache_dir=str(tmp_path)), 0, {"variant": "base"}, lambda: {})
    assert seen == [str(E.cache_root("pointchr", "jobs")), str(tmp_path)]


def test_a_job_gives_the_same_numbers_whatever_the_thread_count():
    config = E.CompareConfig(n_train_per_class=4, n_test_per_class=3, n_points=96, epochs=2)
    task = {"dataset": "finedetail8", "backbone": "pointnet", "variant": "chr"}
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        first = E._train_and_test(config, 0, task)
        torch.set_num_threads(2)
        second = E._train_and_test(config, 0, task)
        assert torch.get_num_threads() == 2          # the job restores the caller's setting
    finally:
        torch.set_num_threads(threads)
    assert first == second


def test_gate_rule_spec_is_a_flag_and_backbone_jobs_are_shared(tmp_path):
    calls = []
    for rule in ("quantile", "spec"):
        config = E.CompareConfig(gate_rule=rule, cache_dir=str(tmp_path))
        for variant in ("base", "chr"):
            task = {"dataset": "finedetail8", "backbone": "pointnet", "variant": variant}
            E._cached(config, 0, task, lambda v=variant: calls.append(v) or {"oa": 0.5})
    assert calls == ["base", "chr", "chr"]          # base is reused, each CHR gate trains
    assert E._task_gate(E.CompareConfig(gate_rule="spec"), {}) == "spec"
    assert E._task_gate(E.CompareConfig(), {}) == tuple(E.GATE_QUANTILES)
    with pytest.raises(ValueError, match="gate_rule must be one of"):
        E.compare_tasks(E.CompareConfig(gate_rule="median"))


def test_sign_test_counts_wins_and_ignores_ties():
    assert E.sign_test([1.0, 2.0, 0.5, 3.0, 0.1]) == {"wins": 5, "losses": 0, "ties": 0, "p": 0.03125}
    result = E.sign_test([1.0, -1.0, 0.0])
    assert (result["wins"], result["losses"], result["ties"]) == (1, 1, 1) and result["p"] == 0.75


def test_dev_quick_reports_every_candidate_and_the_registration_check(experiment):
    outcome = run_part(experiment, "dev", quick=True)
    (claim,) = outcome.result.claims
    assert claim.id == "dev/registered_is_winner"
    assert f"registered {E._gate_name(E.GATE_QUANTILES)}" in outcome.result.measurements["registered_is_winner"].note
    table = next(iter(outcome.result.tables.values()))
    assert len(table) == len(E.DEV_GATE_CANDIDATES)
    assert not set(experiment.part("dev").seeds) & set(experiment.part("A").seeds)


def test_part_b_quick_all_properties_pass(experiment):
    outcome = run_part(experiment, "B", quick=True)
    claims = _by_id(outcome)
    assert len(claims) == 10 and all(i.startswith("B/") for i in claims)
    for claim in claims.values():
        assert claim.kind == "check" and claim.verdict == "PASS", (claim.id, claim.measured)


def test_scaling_quick_reports_finite_slopes_and_where_the_time_goes(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = _by_id(outcome)
    assert set(claims) == {"scaling/push_midpoint_slope", "scaling/knn_slope", "scaling/overhead_dgcnn",
                           "scaling/overhead_pointnet", "scaling/overhead_pointnet_with_curvature"}
    assert all(math.isfinite(c.measured) and c.kind == "check" for c in claims.values())
    where = outcome.result.tables["where the forward time goes"]
    assert len(where) == 8 and (where["CPU ms"] > 0).all()


def test_cpu_seconds_interleaved_returns_a_median_per_function():
    result = E.cpu_seconds_interleaved({"a": lambda: sum(range(2000)), "b": lambda: None}, 3, 0.001)
    assert set(result) == {"a", "b"} and result["a"] > result["b"] >= 0


def test_coarse_and_full_quick_run(experiment):
    coarse = _by_id(run_part(experiment, "coarse", quick=True))
    assert set(coarse) == {"coarse/coarse_chr_gain"}
    full = run_part(experiment, "full", quick=True)
    assert set(_by_id(full)) == {"full/chr_gain", "full/coarse_chr_gain"}
    assert any("DGCNN-lite + CHR" in note for note in full.result.notes)


def test_backbones_quick_reports_dgcnn_and_hycore(experiment):
    outcome = run_part(experiment, "backbones", quick=True)
    assert set(_by_id(outcome)) == {"backbones/chr_gain"}
    notes = " ".join(outcome.result.notes)
    assert "DGCNN-lite + CHR − DGCNN-lite" in notes and "HyCoRe-lite" in notes


def test_defaults_and_opt_in_parts(experiment):
    assert [p.name for p in experiment.select()] == ["A", "B", "scaling"]
    assert not any(experiment.part(p).default for p in ("dev", "full", "coarse", "backbones"))
    assert experiment.part("full").full.cache_dir == "default" and len(experiment.part("full").seeds) == 5
    assert len(experiment.part("A").seeds) == 5
