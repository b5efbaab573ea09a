"""Every part's quick config through the runner: structure, and the meaningful quick bars."""

import math

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("top")


def test_e1_quick_runs_all_objectives_and_top_does_not_hurt(experiment):
    outcome = run_part(experiment, "E1", quick=True)
    claims = outcome.claims_by_name()
    assert {j.metrics["objective"] for j in outcome.jobs} == {"ntp", "top", "mtp", "dsmtp"}
    assert "E1 NTP exact at the Clever-Hans plateau" in claims
    assert "E1 NTP teacher-forced acc, token 2" in claims
    assert claims["E1 TOP exact − NTP exact"].passed  # both near 0 this early: TOP must not be worse
    assert "star_graph" in outcome.result.tables and "star_graph_curves" in outcome.result.figures
    for job in outcome.jobs:
        assert job.metrics["curve"] and 0.0 <= job.metrics["exact"] <= 1.0


def test_e2_quick_reports_ce_and_ndcg(experiment):
    outcome = run_part(experiment, "E2", quick=True)
    claims = outcome.claims_by_name()
    assert set(claims) == {"E2 val CE(NTP+TOP) − CE(NTP) (nats/char)",
                           "E2 NDCG@10 TOP head − NDCG@10 NTP logits", "E2 MTP (n=2) val CE reported"}
    assert claims["E2 MTP (n=2) val CE reported"].passed
    top = next(j.metrics for j in outcome.jobs if j.metrics["objective"] == "top")
    assert math.isfinite(top["val_ce"]) and 0.0 <= top["ndcg_top_head"] <= 1.0
    assert 0.0 <= top["ndcg_graded_top_head"] <= 1.0 and 0.0 <= top["ndcg_graded_ntp_logits"] <= 1.0
    assert "graded NDCG@10 TOP head" in outcome.result.tables["text_lm"].columns
    assert len(top["corpus_sha1"]) == 40


def test_scaling_quick_measures_slope_and_step_ratio(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = outcome.claims_by_name()
    slope = claims["scaling: top_targets log-log slope vs T+W"].measured
    assert 0.3 < slope < 2.0
    assert claims["scaling: step time NTP+TOP / NTP"].measured > 0.5


def test_star_long_quick_includes_negative_control(experiment):
    outcome = run_part(experiment, "star-long", quick=True)
    claims = outcome.claims_by_name()
    assert "star-long G(2-4-12) mean exact(TOP)" in claims
    control = claims["star-long G(2-4-12) negative control exact(TOP-shuffled) − exact(NTP)"]
    assert control.passed  # both near 0 after 30 steps: the controls must not beat NTP yet
    assert claims["star-long G(2-4-12) null control exact(TOP-unrelated) − exact(NTP)"].passed
    assert not experiment.part("star-long").default


def test_same_seed_gives_same_metrics(experiment):
    from icml26.top.experiment import STAR_QUICK, run_star
    import dataclasses

    cfg = dataclasses.replace(STAR_QUICK, steps=5, n_train=200, n_test=50, n_eval_curve=50, eval_every=5)
    a = run_star(cfg, 3, {"graph": "2-4-12", "objective": "top"})
    b = run_star(cfg, 3, {"graph": "2-4-12", "objective": "top"})
    assert a["exact"] == b["exact"] and a["curve"][0]["ntp_loss"] == b["curve"][0]["ntp_loss"]


def _tiny_star(tmp_path, **kw):
    import dataclasses
    from icml26.top.experiment import STAR_QUICK

    return dataclasses.replace(STAR_QUICK, steps=10, n_train=300, n_test=60, n_eval_curve=60,
                               eval_every=5, log_dir=str(tmp_path), **kw)


def test_interrupted_run_resumes_from_checkpoint_to_identical_result(tmp_path, monkeypatch):
    import icml26.top.experiment as exp

    task = {"graph": "2-4-12", "objective": "top_shuffled"}  # exercises the shuffle generator too
    clean = exp.run_star(_tiny_star(tmp_path / "clean"), 1, task)

    real_eval, calls = exp.evaluate_star_graph, []

    def dies_at_second_point(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the session ends between step 5 and step 10
        return real_eval(*args, **kwargs)

    cfg = _tiny_star(tmp_path / "resumed", checkpoint=True)
    monkeypatch.setattr(exp, "evaluate_star_graph", dies_at_second_point)
    with pytest.raises(KeyboardInterrupt):
        exp.run_star(cfg, 1, task)
    monkeypatch.setattr(exp, "evaluate_star_graph", real_eval)
    log = tmp_path / "resumed" / "2-4-12_top_shuffled_seed1.jsonl"
    assert len(log.read_text().splitlines()) == 1            # only step 5 was logged
    resumed = exp.run_star(cfg, 1, task)
    assert resumed["exact"] == clean["exact"] and resumed["per_token"] == clean["per_token"]
    strip = lambda curve: [{k: v for k, v in p.items() if k != "seconds"} for p in curve]
    assert strip(resumed["curve"]) == strip(clean["curve"])
    assert len(log.read_text().splitlines()) == 2
    again = exp.run_star(cfg, 1, task)                         # finished: nothing left to train
    assert again["exact"] == clean["exact"]


def test_checkpoint_refuses_another_config_and_needs_a_folder(tmp_path):
    import dataclasses
    import icml26.top.experiment as exp

    task = {"graph": "2-4-12", "objective": "ntp"}
    cfg = _tiny_star(tmp_path, checkpoint=True)
    exp.run_star(cfg, 0, task)
    with pytest.raises(ValueError, match="another configuration"):
        exp.run_star(dataclasses.replace(cfg, lr=5e-4), 0, task)
    with pytest.raises(ValueError, match="needs log_dir"):
        exp.run_star(dataclasses.replace(cfg, log_dir=""), 0, task)


def test_checkpoint_resumes_under_a_run_with_other_jobs(tmp_path):
    import dataclasses
    import icml26.top.experiment as exp

    task = {"graph": "2-4-12", "objective": "ntp"}
    cfg = _tiny_star(tmp_path, checkpoint=True)
    first = exp.run_star(dataclasses.replace(cfg, objectives=("ntp",)), 0, task)
    again = exp.run_star(dataclasses.replace(cfg, objectives=("ntp", "top", "top_unrelated")), 0, task)
    assert again["exact"] == first["exact"] and again["curve"] == first["curve"]
