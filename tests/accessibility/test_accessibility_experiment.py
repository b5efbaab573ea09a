"""The quick run of every part through the runner (SmolLM2 parts skip when it is not installed)."""

import math

import numpy as np

import pandas as pd
import pytest

from icml26.accessibility.experiment import e1_statistics
from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("accessibility")


@pytest.fixture(scope="module")
def smollm2():
    from icml26.zoo.smollm2 import SmolLM2NotInstalledError, smollm2_gguf_path

    try:
        smollm2_gguf_path()
    except SmolLM2NotInstalledError as exc:
        pytest.skip(str(exc))


def test_parts_registered(experiment):
    assert [p.name for p in experiment.parts] == ["profile", "pathway", "scaling", "pathway5", "tiny"]
    assert [p.name for p in experiment.select()] == ["profile", "pathway", "scaling"]  # 5 seeds, E3 opt-in


def test_claim_table_kinds_and_controls():
    from icml26.core.claims import load_table

    table = load_table("accessibility")
    assert table.headline == "profile/access_ratio" and table.headline_spec.kind == "paper"
    for spec in table.claims:
        if spec.kind == "paper":   # every paper claim that can pass names a negative control
            assert spec.negative_control, spec.id
        if spec.part in ("pathway", "pathway5") and spec.kind == "paper":
            assert set(spec.requires) == {f"{spec.part}/shuffled_gain_abs", f"{spec.part}/memorisation_drop"}
    assert {c.id for c in table.claims if c.kind == "check"} == {"profile/stability", "scaling/slope"}


def test_e1_statistics_direct():
    frame = pd.DataFrame({"layer": range(6), "entropy_norm": [0.5, 0.6, 0.8, 0.82, 0.9, 0.4],
                          "erank": [5, 8, 30, 40, 50, 10], "enrichment_8": [3, 2, 1, 1.5, 2, 4],
                          "enrichment_8_random": [1, 1, 1, 2, 1, 1],
                          "ce_lens": [9, 9, 12, 10, 8, 2]})
    s = e1_statistics(frame, 5)  # plateau = layers 2..4; early band = layer 1; late band: none (L − 1 = 4 ∈ P)
    assert s == pytest.approx({"min_entropy": 0.8, "entropy_spread": 0.1, "erank_ratio": 4.0,
                               "access_ratio": 1.5 / 4, "lens_ratio": 5.0, "min_entropy_early": 0.6,
                               "entropy_spread_early": 0.0, "erank_ratio_early": 0.8,
                               "access_ratio_random_basis": 1.0})


def _pathway_jobs(gains: dict, n_tokens: int = 400, seeds=(0, 1, 2), noise: float = 0.02):
    """Synthetic E2 jobs: per arm a per-token CE ``CE_bias-only − gain + noise``; an arm with gain 0
    equals the bias-only arm exactly (early stopping at step 0, as the shuffled arm does)."""
    from icml26.core.experiment import JobResult

    jobs = []
    for i, seed in enumerate(seeds):
        rng = np.random.default_rng(seed)
        base = 2.0 + rng.normal(0, 0.5, n_tokens)
        for arm, gain in {"bias_only": 0.0, **gains}.items():
            gain = gain[i] if isinstance(gain, (list, tuple)) else gain   # per-seed gains
            ce = base - gain - (rng.normal(0, noise, n_tokens) if gain else 0.0)
            metrics = {"arm": arm, "path_ce": float(ce.mean()), "base_ce": 2.1, "delta_ce": 0.05,
                       "dev_delta_ce": 0.0, "kl": 0.1, "flip_rate": 0.1, "train_ce_base": 2.0,
                       "train_ce": 1.9, "best_step": 10, "steps_run": 60, "enrichment_base": 3.0,
                       "enrichment_path": 3.0, "history": [{"step": 0, "dev_ce": 2.0}],
                       "token_ce": [float(v) for v in ce], "n_train": 100, "n_dev": 10, "n_test": n_tokens}
            jobs.append(JobResult(part="pathway", seed=seed, task={"arm": arm}, metrics=metrics, seconds=1.0))
    jobs.append(JobResult(part="pathway", seed=0, task={"arm": "shuffled15_no_early_stop"}, seconds=1.0,
                          metrics={"arm": "shuffled15_no_early_stop", "train_ce_base": 2.0, "train_ce": 1.0}))
    return jobs


def _verdicts(experiment, jobs):
    from icml26.accessibility.experiment import PathwayConfig
    from icml26.core.claims import evaluate, load_table

    result = experiment.part("pathway").summarize(jobs, PathwayConfig())
    claims = evaluate(load_table("accessibility").for_part("pathway"), result.measurements)
    return {c.id: c.verdict for c in claims}


def test_pathway_gates_flip(experiment):
    """The E2 claims pass only when the mid layer beats its controls; a planted control flips them."""
    # the mid layer carries information, the adapter alone (m = L, shuffled twin) hurts
    fair = {"m15": 0.03, "m30": -0.02, "shuffled15": 0.0, "inc15": 0.03, "inc15_shuffled": -0.04}
    v = _verdicts(experiment, _pathway_jobs(fair))
    assert [v[f"pathway/{k}"] for k in ("gain_mid", "mid_vs_shuffled", "incremental")] == ["PASS"] * 3
    # the adapter-capacity arm gains as much: the mid-layer gain is not earned, the increment is nil
    v = _verdicts(experiment, _pathway_jobs(dict(fair, m30=0.03, inc15=0.03)))
    assert v["pathway/gain_mid"] == "NOT EARNED" and v["pathway/mid_vs_shuffled"] == "NOT EARNED"
    assert v["pathway/incremental"] in ("FAIL", "INCONCLUSIVE")
    # the shuffled twin of the incremental arm gains as much: not earned
    v = _verdicts(experiment, _pathway_jobs(dict(fair, inc15_shuffled=0.03)))
    assert v["pathway/incremental"] == "NOT EARNED"
    # G(m15) ≥ 0.5·G(L) with the shuffled arm far below it: earned; with G(L) ≤ 0 the shuffled arm meets it too
    v = _verdicts(experiment, _pathway_jobs(dict(fair, m30=0.04)))
    assert v["pathway/mid_vs_half_last"] == "PASS"
    assert _verdicts(experiment, _pathway_jobs(fair))["pathway/mid_vs_half_last"] == "NOT EARNED"
    # a shuffled arm that gains (the harness fails): every paper claim is INCOMPLETE
    v = _verdicts(experiment, _pathway_jobs(dict(fair, shuffled15=0.03)))
    assert v["pathway/shuffled_gain_abs"] == "FAIL"
    assert {v[f"pathway/{k}"] for k in ("gain_mid", "mid_vs_half_last", "incremental")} == {"INCOMPLETE"}
    # no effect: the interval straddles the bar or lies below it
    v = _verdicts(experiment, _pathway_jobs(dict(fair, m15=0.0005), noise=0.2))
    assert v["pathway/gain_mid"] in ("INCONCLUSIVE", "FAIL")


def test_a_gain_that_changes_sign_across_training_seeds_is_inconclusive(experiment):
    """Tight token intervals do not decide a claim when the trained pathways disagree: the
    verdict reads the hull of the token interval and the t-interval over seeds."""
    fair = {"m15": 0.03, "m30": -0.02, "shuffled15": 0.0, "inc15_shuffled": -0.04}
    steady = _verdicts(experiment, _pathway_jobs(dict(fair, inc15=[0.012, 0.010, 0.011]), n_tokens=4000))
    assert steady["pathway/incremental"] == "PASS"
    split = _verdicts(experiment, _pathway_jobs(dict(fair, inc15=[0.03, -0.01, 0.013]), n_tokens=4000))
    assert split["pathway/incremental"] == "INCONCLUSIVE"      # same mean; tokens alone would pass


def test_scaling_quick(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = {c.id: c for c in outcome.result.claims}
    assert set(claims) == {"scaling/slope"}
    assert math.isfinite(claims["scaling/slope"].measured) and outcome.result.figures


def test_tiny_quick(experiment):
    outcome = run_part(experiment, "tiny", quick=True)
    assert not outcome.failed_jobs, outcome.failed_jobs[0].error if outcome.failed_jobs else ""
    assert {"E3 tiny char LM depth profile", "E3 pathway arms", "E3 from-scratch counterfactual"} <= set(outcome.result.tables)
    assert {c.id for c in outcome.result.claims} == {"tiny/erank_ratio", "tiny/access_ratio"}


def test_profile_and_pathway_quick_on_smollm2(experiment, smollm2, tmp_path):
    overrides = {"cache_dir": str(tmp_path)}
    first = run_part(experiment, "profile", quick=True, overrides=overrides)
    assert not first.failed_jobs, first.failed_jobs[0].error if first.failed_jobs else ""
    claims = {c.id: c for c in first.result.claims}
    assert set(claims) == {f"profile/{k}" for k in ("min_entropy", "entropy_spread", "erank_ratio", "access_ratio",
                                                    "lens_ratio", "stability")}
    assert all(math.isfinite(c.measured) for c in claims.values())
    assert math.isfinite(first.result.measurements["access_ratio_random_basis"])
    assert "E1 depth profile" in first.result.figures
    from icml26.accessibility.experiment import _load_model, _profile_pass_cached
    from icml26.core.experiment import apply_overrides

    config = apply_overrides(experiment.part("profile").quick, overrides)
    payload, cached = _profile_pass_cached(config, *_load_model(config.model))
    assert cached and payload["n_layers"] == 30  # a rerun reads the forward pass from the cache
    path = run_part(experiment, "pathway", quick=True, overrides=overrides)
    assert not path.failed_jobs, path.failed_jobs[0].error if path.failed_jobs else ""
    claims = {c.id: c for c in path.result.claims}
    assert claims["pathway/min_dev_dce"].passed  # >= 0 by construction
    assert len(claims) == 8 and claims["pathway/incremental"].measured is not None
    n_test = {j.metrics["n_test"] for j in path.jobs if not j.metrics.get("skipped")}
    assert n_test == {(2 + 2) * (32 - 4 - 1)}   # test-split blocks + held-out train blocks, skip 4
    assert list(tmp_path.glob("pathway-*/meta.json"))


def test_seeds_resample_the_training_blocks():
    from icml26.accessibility.experiment import PathwayConfig, train_token_rows

    config = PathwayConfig(train_blocks=32, train_pool_blocks=48)
    per_block = 252
    rows = {s: train_token_rows(config, 48 * per_block, s) for s in (0, 1)}
    assert all(r.size == 32 * per_block and np.unique(r).size == r.size for r in rows.values())
    assert not np.array_equal(rows[0], rows[1])                       # seeds draw different blocks
    assert np.array_equal(rows[0], train_token_rows(config, 48 * per_block, 0))   # deterministic
    assert set(np.unique(rows[0] // per_block)).issubset(range(48))
    assert train_token_rows(PathwayConfig(train_pool_blocks=0), 32 * per_block, 0) is None   # the old rule
    with pytest.raises(ValueError, match="not a multiple"):
        train_token_rows(config, 48 * per_block + 1, 0)
