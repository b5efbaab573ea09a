"""Quick runs of every part through the runner: structure, finiteness, determinism, and the
quick-meaningful claims."""

import math

import pytest
import torch

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part
from icml26.pointchr import experiment as E


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("pointchr")


def test_part_a_quick_produces_all_claims_tables_and_figures(experiment):
    outcome = run_part(experiment, "A", quick=True)
    claims = outcome.claims_by_name()
    assert len(claims) == 6
    assert any(name.startswith("FineDetail-8 positive control") for name in claims)
    assert any(name.startswith("FineDetail-8 (i)") for name in claims)
    assert all(math.isfinite(c.measured) for c in claims.values())
    assert all("sign test" in c.note for n, c in claims.items() if n.startswith("FineDetail-8"))
    # the mechanism holds from the first epochs: the gate is monotone in κ at initialisation
    spearman = next(c for n, c in claims.items() if "Spearman" in n)
    assert spearman.passed, spearman.measured
    assert set(outcome.result.figures) == {"FineDetail-8 OA per variant", "test cloud: κ and rectified radius",
                                           "training curves"}
    assert "test OA (%) per seed" in outcome.result.tables
    mech = next(t for n, t in outcome.result.tables.items() if n.startswith("CHR mechanism per seed"))
    assert {"detail_weight_ratio", "gate_a_init", "gate_b"} <= set(mech.columns)


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
    (claim,) = outcome.claims_by_name().values()
    assert claim.bar == f"= {E._gate_name(E.GATE_QUANTILES)}"
    table = next(iter(outcome.result.tables.values()))
    assert len(table) == len(E.DEV_GATE_CANDIDATES)
    assert not set(experiment.part("dev").seeds) & set(experiment.part("A").seeds)


def test_part_b_quick_all_properties_pass(experiment):
    outcome = run_part(experiment, "B", quick=True)
    for claim in outcome.claims_by_name().values():
        assert claim.passed, (claim.name, claim.measured)


def test_scaling_quick_reports_finite_slopes_and_where_the_time_goes(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = outcome.claims_by_name()
    assert len(claims) == 4 and all(math.isfinite(c.measured) for c in claims.values())
    assert {c.bar for c in claims.values()} == {"≤ 1.15", "≤ 2.15", "≤ 1.3"}
    where = outcome.result.tables["where the forward time goes"]
    assert len(where) == 6 and (where["CPU ms"] > 0).all()


def test_cpu_seconds_interleaved_returns_a_median_per_function():
    result = E.cpu_seconds_interleaved({"a": lambda: sum(range(2000)), "b": lambda: None}, 3, 0.001)
    assert set(result) == {"a", "b"} and result["a"] > result["b"] >= 0


def test_coarse_and_full_quick_run(experiment):
    coarse = run_part(experiment, "coarse", quick=True).claims_by_name()
    assert [n for n in coarse if "Coarse-4 (iv)" in n]
    full = run_part(experiment, "full", quick=True)
    assert len(full.claims_by_name()) == 7
    assert any("DGCNN-lite + CHR" in note for note in full.result.notes)


def test_backbones_quick_reports_dgcnn_and_hycore(experiment):
    outcome = run_part(experiment, "backbones", quick=True)
    assert len(outcome.claims_by_name()) == 6
    notes = " ".join(outcome.result.notes)
    assert "DGCNN-lite + CHR − DGCNN-lite" in notes and "HyCoRe-lite" in notes


def test_defaults_and_opt_in_parts(experiment):
    assert [p.name for p in experiment.select()] == ["A", "B", "scaling"]
    assert not any(experiment.part(p).default for p in ("dev", "full", "coarse", "backbones"))
    assert experiment.part("full").full.cache_dir and len(experiment.part("full").seeds) == 5
    assert len(experiment.part("A").seeds) == 5
