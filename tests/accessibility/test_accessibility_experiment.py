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
    assert [p.name for p in experiment.parts] == ["profile", "pathway", "scaling", "tiny"]
    assert [p.name for p in experiment.select()] == ["profile", "pathway", "scaling"]  # E3 opt-in


def test_e1_statistics_direct():
    frame = pd.DataFrame({"layer": range(6), "entropy_norm": [0.5, 0.6, 0.8, 0.82, 0.9, 0.4],
                          "erank": [5, 8, 30, 40, 50, 10], "enrichment_8": [3, 2, 1, 1.5, 2, 4],
                          "ce_lens": [9, 9, 12, 10, 8, 2]})
    s = e1_statistics(frame, 5)  # plateau = layers 2..4
    assert s == pytest.approx({"min_entropy": 0.8, "entropy_spread": 0.1, "erank_ratio": 4.0,
                               "access_ratio": 1.5 / 4, "lens_ratio": 5.0})


def test_scaling_quick(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    (claim,) = outcome.result.claims
    assert math.isfinite(claim.measured) and outcome.result.figures


def test_tiny_quick(experiment):
    outcome = run_part(experiment, "tiny", quick=True)
    assert not outcome.failed_jobs, outcome.failed_jobs[0].error if outcome.failed_jobs else ""
    assert {"E3 tiny char LM depth profile", "E3 pathway arms", "E3 from-scratch counterfactual"} <= set(outcome.result.tables)


def test_profile_and_pathway_quick_on_smollm2(experiment, smollm2, tmp_path):
    overrides = {"cache_dir": str(tmp_path)}
    first = run_part(experiment, "profile", quick=True, overrides=overrides)
    assert not first.failed_jobs, first.failed_jobs[0].error if first.failed_jobs else ""
    names = [c.name for c in first.result.claims]
    assert len(names) == 6 and all(math.isfinite(c.measured) for c in first.result.claims)
    assert "E1 depth profile" in first.result.figures
    from icml26.accessibility.experiment import _load_model, _profile_pass_cached
    from icml26.core.experiment import apply_overrides

    config = apply_overrides(experiment.part("profile").quick, overrides)
    payload, cached = _profile_pass_cached(config, *_load_model(config.model))
    assert cached and payload["n_layers"] == 30  # a rerun reads the forward pass from the cache
    path = run_part(experiment, "pathway", quick=True, overrides=overrides)
    assert not path.failed_jobs, path.failed_jobs[0].error if path.failed_jobs else ""
    claims = path.claims_by_name()
    assert claims["E2(a) harness: min over arms and seeds of dev ΔCE"].passed  # >= 0 by construction
    assert len(claims) == 7
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
