"""Quick configs of every part through the runner: structure, the claims' wiring, and that the
gates can flip (a planted control makes a claim NOT EARNED or INCOMPLETE).

The quick configs are tiny (40 clones, 6 epochs, a 64-32 network), so the verdicts of the
comparative claims are not asserted here: the full run reports them.
"""

import math

import numpy as np
import pandas as pd
import pytest

from icml26.core.claims import Measurement, evaluate
from icml26.core.runner import run_part
from icml26.lcl.experiment import (EXPERIMENT, FATE_SIGNAL_BAR, _gated_cycle,
                                   _log_ratio_measurement)


@pytest.fixture(scope="module")
def experiment():
    return EXPERIMENT


def _by_id(outcome):
    return outcome.claims_by_id()               # raises on a failed job or summarize


def test_fate_quick_run_builds_every_table_claim_with_its_controls(experiment):
    outcome = run_part(experiment, "fate", quick=True)
    claims = _by_id(outcome)
    assert set(claims) == {s.id for s in experiment.part("fate").claim_specs}
    head = claims["fate/kl_vs_scvi"]
    assert head.control["key"] == "uniform_vs_scvi" and head.competitor["key"] == "lda_vs_scvi"
    assert head.interval is None                                   # one quick seed: no interval
    assert claims["fate/kl_vs_uniform"].control["key"] == "permuted_vs_uniform"
    assert claims["fate/permuted_control"].kind == "control"
    assert math.isfinite(claims["fate/kl_vs_supervised"].measured)
    assert outcome.result.figures and outcome.result.tables


def test_a_fate_claim_against_uninformative_baselines_is_incomplete(experiment):
    """When the scVI-sized embeddings predict no better than uniform, 'LCL beats them' cannot
    be read as 'LCL beats scVI'; a uniform prediction that meets the bar makes it unearned."""
    specs = experiment.claim_specs("fate/scvi_informative", "fate/kl_vs_scvi")
    good = {"scvi_informative": 0.7, "kl_vs_scvi": Measurement(0.6, interval=(0.5, 0.7)),
            "uniform_vs_scvi": 1.3, "lda_vs_scvi": 0.5}
    assert [c.verdict for c in evaluate(specs, good)] == ["PASS", "PASS"]
    assert evaluate(specs, {**good, "scvi_informative": 1.0})[1].verdict == "INCOMPLETE"
    assert evaluate(specs, {**good, "uniform_vs_scvi": 0.75})[1].verdict == "NOT EARNED"
    assert evaluate(specs, {**good, "kl_vs_scvi": Measurement(0.8, interval=(0.6, 1.0))}
                    )[1].verdict == "INCONCLUSIVE"


def test_cycle_invariance_counts_only_with_fate_signal(experiment):
    frame = pd.DataFrame([
        {"method": "A", "seed": 0, "kl_gt": 0.2, "cycle_r2": 0.05},
        {"method": "B", "seed": 0, "kl_gt": 0.5, "cycle_r2": 0.01}])
    assert _gated_cycle(frame, "A", "cycle_r2", 0.4).value == pytest.approx(0.05)
    blind = _gated_cycle(frame, "B", "cycle_r2", 0.4)        # 0.5 / 0.4 > FATE_SIGNAL_BAR
    assert blind.value == math.inf and "no fate signal" in blind.note
    assert 0.5 / 0.4 > FATE_SIGNAL_BAR
    specs = experiment.claim_specs("fate/cycle_r2_z")
    verdict = evaluate(specs, {"cycle_r2_z": 0.05, "cycle_r2_pca10": blind.value,
                               "cycle_r2_lda": 0.3})[0].verdict
    assert verdict == "PASS"
    assert evaluate(specs, {"cycle_r2_z": 0.05, "cycle_r2_pca10": 0.02,
                            "cycle_r2_lda": 0.3})[0].verdict == "NOT EARNED"


def test_log_ratio_measurement_is_a_geometric_mean_with_a_paired_interval():
    num = pd.Series([0.2, 0.3, 0.25, 0.28], index=[0, 1, 2, 3])
    den = pd.Series([0.4, 0.45, 0.5, 0.4], index=[0, 1, 2, 3])
    m = _log_ratio_measurement(num, den, "toy")
    assert m.value == pytest.approx(np.exp(np.mean(np.log(num / den))))
    assert m.interval[0] <= m.value <= m.interval[1]
    assert _log_ratio_measurement(num, den * 0, "toy").incomplete
    zero = _log_ratio_measurement(num.where(num.index != 0, 0.0), den, "toy")
    assert zero.value == pytest.approx((0.3 + 0.25 + 0.28) / den.sum()) and zero.interval is None


def test_clone_quick_run_builds_every_table_claim_with_its_controls(experiment):
    claims = _by_id(run_part(experiment, "clone", quick=True))
    assert set(claims) == {s.id for s in experiment.part("clone").claim_specs}
    head = claims["clone/knn_vs_scvi"]
    assert head.control["key"] == "random_vs_scvi" and head.competitor["key"] == "lda_vs_scvi"
    ch = claims["clone/ch_vs_scvi"]
    assert math.isfinite(ch.measured) and ch.bar == "≥ 10"
    assert ch.control["key"] == "random_ch_vs_scvi" and claims["clone/ch_train_vs_scvi"].kind == "check"


def test_scaling_quick_run_checks_the_batch_count(experiment):
    claims = _by_id(run_part(experiment, "scaling", quick=True))
    slope = claims["scaling/time_slope"]
    assert math.isfinite(slope.measured) and slope.bar == "≤ 1.15" and slope.kind == "check"
    assert claims["scaling/batches_in_range"].passed


def test_semi_part_is_opt_in(experiment):
    assert [p.name for p in experiment.select()] == ["fate", "clone", "scaling"]


def test_lcl_fit_leaves_the_global_generators_alone():
    import torch

    from icml26.lcl import LCL, simulate_lineage_tracing

    data = simulate_lineage_tracing(n_clones=20, seed=0)
    torch_state, np_state = torch.get_rng_state(), np.random.get_state()[1].copy()
    LCL(hidden_dims=(32, 16), embedding_dim=8, batch_size=10, max_epochs=2, warmup_epochs=1
        ).fit(data.X, data.clone)
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert np.array_equal(np.random.get_state()[1], np_state)


def test_pca_lda_embedding_separates_labelled_groups():
    from icml26.lcl import pca_lda_embedding

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(5), 20)
    X = rng.normal(size=(100, 30)) + 3.0 * np.eye(30)[y]
    E, = pca_lda_embedding(X, y, n_pca=10)
    assert E.shape == (100, 4)
    centroids = np.stack([E[y == c].mean(0) for c in range(5)])
    spread = np.mean([E[y == c].std(0).mean() for c in range(5)])
    assert np.min(np.linalg.norm(centroids[:, None] - centroids[None], axis=-1)
                  + 1e9 * np.eye(5)) > 3 * spread
    with pytest.raises(ValueError, match="clones must have 100 labels"):
        pca_lda_embedding(X, y[:50])
