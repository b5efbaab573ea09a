"""Every part's quick config through the runner: structure, and the meaningful quick bars."""

import math

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part


def claims_of(part: str, result) -> dict:
    """The part's claims built from its table, keyed by measurement key."""
    from icml26.core.claims import evaluate

    specs = get_experiment("top").part(part).claim_specs
    return {c.id.split("/", 1)[1]: c for c in evaluate(specs, result.measurements)}


def by_key(outcome) -> dict:
    return {c.id.split("/", 1)[1]: c for c in outcome.result.claims}


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("top")


def test_e1_quick_runs_all_objectives_and_top_does_not_hurt(experiment):
    outcome = run_part(experiment, "E1", quick=True)
    claims = by_key(outcome)
    assert {j.metrics["objective"] for j in outcome.jobs} == {"ntp", "top", "mtp", "dsmtp"}
    assert claims["ntp_exact"].name == "E1 NTP exact at the Clever-Hans plateau"
    assert claims["ntp_exact"].kind == "control" and claims["top_minus_ntp"].kind == "check"
    assert "ntp_tf_token2" in claims
    assert claims["top_minus_ntp"].passed  # both near 0 this early: TOP must not be worse
    assert "star_graph" in outcome.result.tables and "star_graph_curves" in outcome.result.figures
    for job in outcome.jobs:
        assert job.metrics["curve"] and 0.0 <= job.metrics["exact"] <= 1.0


def test_e2_quick_reports_ce_and_ndcg(experiment):
    outcome = run_part(experiment, "E2", quick=True)
    claims = by_key(outcome)
    assert set(claims) == {"ce_gap", "ndcg_gain"}
    assert claims["ndcg_gain"].id == experiment.headline and claims["ndcg_gain"].kind == "paper"
    assert [a["label"] for a in claims["ndcg_gain"].alt] == ["spec"]        # the spec's 0.05 beside it
    assert set(outcome.result.tables["ndcg_gain_by_gain"]["gain"]) == {"graded", "binary", "exponential"}
    mtp = outcome.result.tables["text_lm"].set_index("objective").loc["mtp"]
    assert mtp["val CE (nats/char)"]                                         # MTP's CE is reported
    top = next(j.metrics for j in outcome.jobs if j.metrics["objective"] == "top")
    assert math.isfinite(top["val_ce"]) and 0.0 <= top["ndcg_top_head"] <= 1.0
    assert 0.0 <= top["ndcg_graded_top_head"] <= 1.0 and 0.0 <= top["ndcg_graded_ntp_logits"] <= 1.0
    assert 0.0 <= top["ndcg_exp_top_head"] <= 1.0 and 0.0 <= top["ndcg_exp_ntp_logits"] <= 1.0
    assert "graded NDCG@10 TOP head" in outcome.result.tables["text_lm"].columns
    assert len(top["corpus_sha1"]) == 40


def test_scaling_quick_measures_slope_and_step_ratio(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = by_key(outcome)
    slope = claims["target_slope"].measured
    assert math.isfinite(slope) and slope > 0  # a timing: its value is the full run's to judge
    assert claims["step_ratio"].measured > 0


def test_star_long_quick_includes_negative_control(experiment):
    outcome = run_part(experiment, "star-long", quick=True)
    claims = by_key(outcome)
    assert "top_exact" in claims and claims["top_exact"].control["key"] == "ntp_exact"
    assert any("shuffled-order control exact(TOP-shuffled) − exact(NTP)" in n for n in outcome.result.notes)
    assert claims["null_minus_ntp"].kind == "control" and claims["null_minus_ntp"].measured is not None
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


def fake_star_jobs(exact: dict) -> list:
    """JobResults as run_star returns them: exact[objective] = one value per seed."""
    from icml26.core.experiment import JobResult

    return [JobResult("star-long", seed, {"graph": "2-4-12", "objective": o},
                      {"graph": "2-4-12", "objective": o, "steps": 30_000, "exact": value,
                       "per_token": [1.0] * 4, "teacher_forced": [1.0] * 4, "curve": [],
                       "steps_per_second": 7.0}, 1.0)
            for o, values in exact.items() for seed, value in enumerate(values)]


def test_star_long_claims_are_incomplete_until_three_seeds_have_run():
    import dataclasses
    from icml26.top.experiment import STAR_LONG, summarize_star_b

    one_seed = {"ntp": [0.52], "top": [1.0], "top_unrelated": [0.5]}
    claims = claims_of("star-long", summarize_star_b(fake_star_jobs(one_seed), STAR_LONG))
    assert STAR_LONG.min_seeds == 3 and len(claims) == 7
    for claim in claims.values():
        assert claim.incomplete and not claim.passed and claim.verdict == "INCOMPLETE"
        assert "3 seeds needed, 1 finished" in claim.note or "5 needed" in claim.note
    three = {"ntp": [0.52, 0.5, 0.51], "top": [1.0, 0.5, 0.98], "top_unrelated": [0.5, 0.5, 0.52]}
    claims = claims_of("star-long", summarize_star_b(fake_star_jobs(three), STAR_LONG))
    top = claims["top_exact"]
    assert not top.incomplete and top.measured == pytest.approx(2.48 / 3) and not top.passed  # < 0.85
    assert claims["ntp_exact"].passed
    assert claims["null_minus_ntp"].passed
    single = dataclasses.replace(STAR_LONG, min_seeds=1)
    claims = claims_of("star-long", summarize_star_b(fake_star_jobs(one_seed), single))
    assert claims["top_exact"].passed and claims["top_exact"].control["verdict"] == "FAIL"
    # a planted control: NTP breaking through as well makes TOP's exact NOT EARNED
    solved = {"ntp": [0.9], "top": [1.0], "top_unrelated": [0.5]}
    claims = claims_of("star-long", summarize_star_b(fake_star_jobs(solved), single))
    assert claims["top_exact"].verdict == "NOT EARNED"


def _curve_jobs(curves: dict, steps: int = 30_000) -> list:
    """star-long jobs whose learning curves are given: curves[objective] = per seed a list of
    (step, exact) points."""
    from icml26.core.experiment import JobResult

    return [JobResult("star-long", seed, {"graph": "2-4-12", "objective": o},
                      {"graph": "2-4-12", "objective": o, "steps": steps, "exact": points[-1][1],
                       "curve": [{"step": st, "exact": ex} for st, ex in points],
                       "per_token": [1.0] * 4, "teacher_forced": [1.0] * 4, "steps_per_second": 7.0}, 1.0)
            for o, per_seed in curves.items() for seed, points in enumerate(per_seed)]


def test_transition_claims_count_seeds_and_compare_steps_to_solve_per_seed():
    from icml26.top.experiment import STAR_LONG, summarize_star_b

    plateau, late, early = [(10_000, 0.5), (30_000, 0.52)], [(17_000, 0.9), (30_000, 1.0)], [(5_000, 0.9), (30_000, 1.0)]
    # five seeds: TOP solves each earlier than NTP; NTP escapes late on two of them
    jobs = _curve_jobs({"ntp": [plateau, late, plateau, late, plateau], "top": [early] * 5,
                        "top_unrelated": [plateau] * 5})
    result = summarize_star_b(jobs, STAR_LONG)
    claims = claims_of("star-long", result)
    reached = claims["seeds_top_reaches"]
    stayed = claims["seeds_ntp_stays"]
    sign = claims["sign_p_top_first"]
    assert reached.measured == 1.0 and reached.verdict == "PASS"
    assert stayed.measured == pytest.approx(0.6) and stayed.verdict == "PASS"
    assert sign.measured == pytest.approx(0.5 ** 5) and sign.verdict == "PASS"
    assert "TOP earlier on 5, later on 0, tie on 0" in sign.note
    assert sign.control["key"] == "sign_p_null_first" and sign.control["verdict"] == "FAIL"
    assert reached.control["measured"] == pytest.approx(0.4)     # NTP reaches 0.85 on 2/5 seeds
    # without the null head's runs the sign test's PASS cannot be earned
    no_null = [j for j in jobs if j.metrics["objective"] != "top_unrelated"]
    assert claims_of("star-long", summarize_star_b(no_null, STAR_LONG))["sign_p_top_first"].verdict == "INCOMPLETE"
    by_seed = result.tables["star_long_transition_by_seed"]
    assert by_seed["steps saved"].tolist() == [25_000, 12_000, 25_000, 12_000, 25_000]
    # the null: TOP no faster than NTP -> the sign test fails and the count does too
    jobs = _curve_jobs({"ntp": [late] * 5, "top": [plateau, late, plateau, late, plateau]})
    claims = claims_of("star-long", summarize_star_b(jobs, STAR_LONG))
    assert claims["sign_p_top_first"].verdict == "FAIL"
    assert claims["seeds_top_reaches"].verdict == "FAIL"
    # the H200 run's shape (3 seeds, NTP escaping on 2): INCOMPLETE, never a verdict
    jobs = _curve_jobs({"ntp": [plateau, [(3_000, 0.7), (30_000, 0.79)], late], "top": [early] * 3})
    for key, claim in claims_of("star-long", summarize_star_b(jobs, STAR_LONG)).items():
        if key.startswith(("seeds_", "sign_")):
            assert claim.verdict == "INCOMPLETE" and "5 needed" in claim.note


def test_shuffled_control_is_reported_not_held_to_a_bar():
    import dataclasses
    from icml26.top.experiment import STAR_LONG, summarize_star_b

    jobs = fake_star_jobs({"ntp": [0.52], "top": [1.0], "top_shuffled": [0.981]})
    result = summarize_star_b(jobs, dataclasses.replace(STAR_LONG, min_seeds=1))
    assert "top_shuffled" not in " ".join(result.measurements)
    assert any("exact(TOP-shuffled) − exact(NTP) = +0.461" in n for n in result.notes)


def fake_text_jobs(rows: dict, seed: int = 0) -> list:
    from icml26.core.experiment import JobResult

    jobs = []
    for o, (ce, b_ntp, b_top, g_ntp, g_top) in rows.items():
        jobs.append(JobResult("E2", seed, {"objective": o}, {
            "objective": o, "val_ce": ce, "ndcg_ntp_logits": b_ntp, "ndcg_top_head": b_top,
            "ndcg_graded_ntp_logits": g_ntp, "ndcg_graded_top_head": g_top, "steps": 1,
            "corpus_sha1": "x" * 40, "steps_per_second": 1.0, "n_params": 1}, 1.0))
    return jobs


def test_ndcg_claim_is_graded_by_default_and_binary_on_request():
    import dataclasses
    from icml26.top.experiment import TEXT_FULL, summarize_text

    jobs = fake_text_jobs({"ntp": (2.5, 0.952, None, 0.80, None), "top": (2.51, 0.974, 0.99, 0.81, 0.86)})
    result = summarize_text(jobs, TEXT_FULL)
    graded = claims_of("E2", result)["ndcg_gain"]
    assert graded.measured == pytest.approx(0.06) and graded.bar == "≥ 0"
    assert graded.verdict == "INCOMPLETE"         # one seed, no control run: not earnable
    assert graded.alt == [{"label": "spec", "bar": "≥ 0.05", "verdict": "PASS"}]
    by_gain = result.tables["ndcg_gain_by_gain"].set_index("gain")
    assert by_gain.loc["binary", "TOP head − NTP logits"] == pytest.approx(0.038)
    assert by_gain.loc["exponential", "95 % t-interval"] == "not measured in this run"
    old = dataclasses.replace(TEXT_FULL, ndcg_gain="binary")   # the spec's gain
    spec = claims_of("E2", summarize_text(jobs, old))["ndcg_gain"]
    assert spec.measured == pytest.approx(0.038) and "1 − 0.952 = 0.048" in spec.note
    assert spec.alt[0]["verdict"] == "FAIL"       # below the spec's 0.05 by construction


@pytest.mark.parametrize("top_graded, verdict", [((0.86, 0.85, 0.87), "PASS"),
                                                 ((0.86, 0.75, 0.82), "INCONCLUSIVE"),
                                                 ((0.70, 0.69, 0.71), "FAIL")])
def test_ndcg_claim_is_decided_by_the_paired_interval_over_seeds(top_graded, verdict):
    from icml26.top.experiment import TEXT_FULL, summarize_text

    jobs = [j for seed, g in enumerate(top_graded) for j in fake_text_jobs(
        {"ntp": (2.5, 0.95, None, 0.80, None), "top": (2.5, 0.97, 0.99, 0.80, g)}, seed=seed)]
    claim = claims_of("E2", summarize_text(jobs, TEXT_FULL))["ndcg_gain"]
    assert claim.interval is not None and "paired over 3 seeds" in claim.note
    # without control runs a passing claim cannot be earned: INCOMPLETE in place of PASS
    assert claim.verdict == ("INCOMPLETE" if verdict == "PASS" else verdict)


def test_ndcg_claim_is_not_earned_when_the_unrelated_control_head_ranks_as_well():
    from icml26.top.experiment import TEXT_FULL, summarize_text

    def run(control_graded):
        jobs = [j for seed, (g, c) in enumerate(zip((0.86, 0.85, 0.87), control_graded)) for j in fake_text_jobs(
            {"ntp": (2.5, 0.95, None, 0.80, None), "top": (2.5, 0.97, 0.99, 0.80, g),
             "top_unrelated": (2.6, 0.95, 0.95, 0.79, c)}, seed=seed)]
        return claims_of("E2", summarize_text(jobs, TEXT_FULL))["ndcg_gain"]

    earned = run((0.70, 0.71, 0.69))                 # the unrelated head ranks worse: control fails
    assert earned.verdict == "PASS" and earned.control["verdict"] == "FAIL"
    planted = run((0.86, 0.85, 0.87))                # a control that ranks as well: not earned
    assert planted.verdict == "NOT EARNED" and planted.control["meets_bar"] is True


def test_default_parts_are_cut_and_the_spec_sized_ones_are_opt_in(experiment):
    from icml26.top.experiment import STAR_FULL, STAR_SPEC, TEXT_FULL, TEXT_SPEC

    assert [p.name for p in experiment.parts if p.default] == ["E1", "E2", "scaling"]
    assert (STAR_FULL.steps, STAR_FULL.mtp_steps, STAR_SPEC.steps, STAR_SPEC.mtp_steps) == (1000, 300, 2000, 1000)
    assert (TEXT_FULL.steps, TEXT_SPEC.steps) == (200, 300)
    assert experiment.part("E1-full").full is STAR_SPEC and experiment.part("E2-full").full is TEXT_SPEC
    outcome = run_part(experiment, "E1-full", quick=True, overrides={"steps": "4", "mtp_steps": "2",
                                                                      "eval_every": "2"})
    assert all(name.startswith("E1-full ") for name in outcome.claims_by_name())
    assert {c.id for c in outcome.result.claims} == {f"E1-full/{k}" for k in (
        "ntp_exact", "ntp_tf_later_min", "ntp_tf_token2", "top_minus_ntp")}
