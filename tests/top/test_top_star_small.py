"""star-small (#40): the quick run through the runner, its config validation, the paired
summary over seeds, and E2's NDCG spread."""

import dataclasses

import pandas as pd
import pytest

from icml26.core.experiment import JobResult, get_experiment
from icml26.core.runner import run_part


def claims_of(part: str, result) -> dict:
    """The part's claims built from its table, keyed by measurement key."""
    from icml26.core.claims import evaluate

    specs = get_experiment("top").part(part).claim_specs
    return {c.id.split("/", 1)[1]: c for c in evaluate(specs, result.measurements)}


def star_jobs(exact: dict, tf_token2: float = 0.5) -> list:
    return [JobResult("star-small", seed, {"graph": "2-4-12", "objective": o},
                      {"graph": "2-4-12", "objective": o, "steps": 3000, "exact": value,
                       "per_token": [1.0, value, value, 1.0],
                       "teacher_forced": [1.0, tf_token2 if o == "ntp" else 1.0, 1.0, 1.0],
                       "curve": [{"step": 250, "exact": 0.5}, {"step": 500, "exact": value}],
                       "steps_per_second": 20.0}, 1.0)
            for o, values in exact.items() for seed, value in enumerate(values)]


def test_star_small_quick_runs_through_the_runner():
    experiment = get_experiment("top")
    part = experiment.part("star-small")
    assert not part.default and list(part.seeds) == [0, 1, 2]
    outcome = run_part(experiment, "star-small", quick=True)
    claims = {c.id for c in outcome.result.claims}
    assert {j.metrics["objective"] for j in outcome.jobs} == {"ntp", "top", "top_unrelated"}
    assert claims == {f"star-small/{k}" for k in ("top_exact", "top_minus_ntp", "ntp_exact", "min_margin",
                                                  "ntp_tf_token2", "ntp_tf_later_min")}
    assert "null_min_margin" in outcome.result.measurements
    assert "star_small_paired" in outcome.result.tables


def test_star_small_config_is_constant_lr_resumable_and_separate_from_star_long():
    from icml26.top.experiment import STAR_LONG, STAR_SMALL, check_star_config

    check_star_config(STAR_SMALL)
    assert STAR_SMALL.min_lr == STAR_SMALL.lr          # constant after warm-up, as in the search
    assert STAR_SMALL.min_seeds == 3 and STAR_SMALL.checkpoint
    assert STAR_SMALL.log_dir and STAR_SMALL.log_dir != STAR_LONG.log_dir
    assert STAR_LONG.steps == 30_000 and STAR_LONG.graphs == ("2-4-12",)   # star-long unchanged


@pytest.mark.parametrize("change, message", [
    ({"graphs": ("2-4-6",)}, "num_nodes"),
    ({"graphs": ("2-4",)}, "degree-path_len-num_nodes"),
    ({"min_lr": 2e-3, "lr": 1e-3}, "min_lr"),
    ({"n_embd": 50, "n_head": 4}, "multiple"),
    ({"batch_size": 400, "n_train": 300}, "n_train"),
    ({"objectives": ("ntp", "bogus")}, "objective"),
    ({"steps": 0}, "steps"),
    ({"top_positions": "everywhere"}, "top_positions"),
])
def test_star_config_validation_rejects_bad_configs_before_training(change, message):
    from icml26.top.experiment import STAR_SMALL_QUICK, check_star_config, run_star

    cfg = dataclasses.replace(STAR_SMALL_QUICK, **change)
    with pytest.raises(ValueError, match=message):
        check_star_config(cfg)
    with pytest.raises(ValueError, match=message):
        run_star(cfg, 0, {"graph": cfg.graphs[0], "objective": "ntp"})


def test_star_small_paired_claims_apply_the_bar_per_seed():
    from icml26.top.experiment import STAR_SMALL, summarize_star_small

    good = {"ntp": [0.5, 0.52, 0.49], "top": [1.0, 0.99, 0.97], "top_unrelated": [0.5, 0.5, 0.51]}
    result = summarize_star_small(star_jobs(good), STAR_SMALL)
    claims = claims_of("star-small", result)
    every = claims["min_margin"]
    assert every.passed and every.measured == pytest.approx(0.47)
    assert every.control["measured"] == pytest.approx(-0.02)         # the null head's smallest margin
    assert claims["ntp_tf_token2"].passed
    assert all(not c.incomplete for c in claims.values())
    assert any("p cannot go below 0.125" in n for n in result.notes)
    paired = result.tables["star_small_paired"]
    assert list(paired.seed) == [0, 1, 2] and paired["TOP step ≥ 0.85 (curve)"].tolist() == [500] * 3
    # one seed that does not break through fails the per-seed bar even if the mean would pass
    mixed = dict(good, top=[1.0, 1.0, 0.55])
    claims = claims_of("star-small", summarize_star_small(star_jobs(mixed), STAR_SMALL))
    assert not claims["min_margin"].passed
    # fewer than three seeds: INCOMPLETE, never PASS
    two = {o: v[:2] for o, v in good.items()}
    claims = claims_of("star-small", summarize_star_small(star_jobs(two), STAR_SMALL))
    assert all(c.incomplete and not c.passed for c in claims.values())
    # a planted control: the null head as good as TOP makes the per-seed margin NOT EARNED
    planted = dict(good, top_unrelated=[1.0, 0.99, 0.97])
    claims = claims_of("star-small", summarize_star_small(star_jobs(planted), STAR_SMALL))
    assert claims["min_margin"].verdict == "NOT EARNED"


def test_ndcg_spread_reports_per_seed_gain_and_where_the_bar_lies():
    from icml26.top.experiment import TEXT_SEEDS, ndcg_gain_by_seed, ndcg_spread_note

    frame = pd.DataFrame([
        {"objective": "ntp", "seed": s, "ndcg_graded_ntp_logits": 0.85, "ndcg_graded_top_head": None}
        for s in range(3)] + [
        {"objective": "top", "seed": s, "ndcg_graded_ntp_logits": 0.86, "ndcg_graded_top_head": 0.89 + g}
        for s, g in zip(range(3), (0.0, 0.02, 0.04))])
    gains = ndcg_gain_by_seed(frame)
    assert gains["gain"].tolist() == pytest.approx([0.04, 0.06, 0.08])
    note = ndcg_spread_note(gains, TEXT_SEEDS)
    assert "mean 0.0600 ± sd 0.0200 over 3 seeds" in note and "lies inside it" in note
    assert TEXT_SEEDS.objectives == ("ntp", "top", "top_unrelated") and TEXT_SEEDS.steps == 200
