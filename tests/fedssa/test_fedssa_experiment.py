"""Quick configs of every part through the runner: claims by id, the gates can flip."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.core.claims import evaluate
from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("fedssa")


@pytest.fixture(scope="module")
def dual(experiment):
    return run_part(experiment, "dual", quick=True)


def _claims(outcome):
    return {c.id: c for c in outcome.result.claims}


def test_dual_quick_measures_every_claim(dual):
    claims = _claims(dual)
    assert set(claims) == {"dual/oracle_vs_fedavg", "dual/beats_fedavg", "dual/gain_vs_fedavg", "dual/ari_share",
                           "dual/high_band_hetero", "dual/high_band_homo", "dual/gain_vs_shuffled"}
    m = dual.result.measurements
    for key in ("gain_vs_fedavg", "oracle_vs_fedavg", "gain_vs_shuffled", "gain_shuffled_vs_fedavg"):
        value = m[key].value if hasattr(m[key], "value") else m[key]
        assert math.isfinite(float(value)), key
    assert {"per-round test accuracy", "learned filter responses"} <= set(dual.result.figures)
    table = dual.result.tables["accuracy by method"]
    assert set(table["method"]) == {"FedSSA", "FedAvg (Flower)", "FedSSA-shuffled", "FedSSA, oracle semantic clusters"}
    # the quick federation has exactly one client per (structure, semantics) cell
    assert m["high_band_homo"] < 0.3
    paired = dual.result.tables["paired margins of FedSSA (points) with sign tests"]
    assert {"mean", "wins", "sign test p (one-sided)"} <= set(paired.columns)
    assert len(paired) == 3


def test_baselines_quick_measures_every_claim(experiment):
    outcome = run_part(experiment, "baselines", quick=True)
    claims = _claims(outcome)
    assert set(claims) == {"baselines/oracle_vs_fedprox", "baselines/beats_fedprox", "baselines/gain_vs_fedprox",
                           "baselines/gain_vs_local", "baselines/gain_vs_personal"}
    m = outcome.result.measurements
    for key in ("gain_vs_fedprox", "gain_vs_local", "gain_vs_personal", "gain_fedavg_vs_local"):
        assert math.isfinite(float(m[key].value if hasattr(m[key], "value") else m[key])), key
    assert set(outcome.result.tables["accuracy by method"]["method"]) >= {
        "FedSSA", "FedAvg (Flower)", "FedProx (Flower)", "Local", "FedPer", "GCFL-lite"}


def test_dual_jobs_are_cached_and_shared_with_baselines(tmp_path):
    import dataclasses

    from icml26.fedssa import experiment as fx
    config = dataclasses.replace(fx.QUICK, rounds=2, methods=fx.GATE_METHODS, cache_dir=str(tmp_path))
    first = fx.run_dual(config, 0, {"method": "fedavg"})
    # part `baselines` has another method list but the same job: read back, not recomputed
    again = fx.run_dual(dataclasses.replace(config, methods=fx.REQUIRED), 0, {"method": "fedavg"})
    assert again == json_roundtrip(first) and len(list(tmp_path.iterdir())) == 1
    fx.run_dual(dataclasses.replace(config, rounds=3), 0, {"method": "fedavg"})  # another config: new entry
    assert len(list(tmp_path.iterdir())) == 2


def json_roundtrip(value):
    import json
    return json.loads(json.dumps(value))


def _table():
    from icml26.core.claims import load_table
    return load_table("fedssa")


def _gate(fedssa, fedavg, shuffled, oracle):
    from icml26.fedssa.experiment import consistent_gain, margin
    scores = pd.DataFrame({"fedssa": fedssa, "fedavg": fedavg, "fedssa-shuffled": shuffled,
                           "fedssa-oracle": oracle})
    m = {"beats_fedavg": consistent_gain(scores, "fedssa", "fedavg"),
         "beats_fedavg_shuffled": consistent_gain(scores, "fedssa-shuffled", "fedavg"),
         "oracle_vs_fedavg": margin(scores, "fedssa-oracle", "fedavg"),
         "gain_oracle_vs_fedavg": margin(scores, "fedssa-oracle", "fedavg").value,
         "gain_vs_fedavg": margin(scores, "fedssa", "fedavg"),
         "gain_shuffled_vs_fedavg": margin(scores, "fedssa-shuffled", "fedavg").value}
    return {c.id: c.verdict for c in evaluate(_table().for_part("dual"), m)}


def test_headline_gate_passes_and_flips():
    rng = np.random.default_rng(0)
    base = 80 + rng.normal(size=10)
    # FedSSA +2 on every seed, oracle +3, shuffled 0: PASS
    v = _gate(base + 2 + 0.1 * rng.normal(size=10), base, base + 0.1 * rng.normal(size=10), base + 3)
    assert v["dual/beats_fedavg"] == "PASS"
    # a planted negative control that also clears the gate: NOT EARNED
    v = _gate(base + 2, base, base + 2.5, base + 3)
    assert v["dual/beats_fedavg"] == "NOT EARNED"
    # margin below half the oracle's: FAIL even on 10/10 wins
    v = _gate(base + 1, base, base, base + 3)
    assert v["dual/beats_fedavg"] == "FAIL"
    # the positive control fails (oracle clusters lose to FedAvg): INCOMPLETE
    v = _gate(base + 2, base, base, base - 3)
    assert v["dual/beats_fedavg"] == "INCOMPLETE"


def test_mean_gain_reads_its_interval_and_its_control():
    rng = np.random.default_rng(1)
    base = 80 + rng.normal(size=10)
    shuffled = base - 1 + 0.1 * rng.normal(size=10)
    v = _gate(base + 2 + 0.3 * rng.normal(size=10), base, shuffled, base + 3)
    assert v["dual/gain_vs_fedavg"] == "PASS"
    # margins of both signs around zero: the paired BCa interval straddles the bar
    v = _gate(base + np.array([3.0, -3.0] * 5) + 0.2 + 0.1 * rng.normal(size=10), base, shuffled, base + 3)
    assert v["dual/gain_vs_fedavg"] == "INCONCLUSIVE"
    # the shuffled-cluster control gains as much: NOT EARNED
    v = _gate(base + 2 + 0.3 * rng.normal(size=10), base, base + 1, base + 3)
    assert v["dual/gain_vs_fedavg"] == "NOT EARNED"


def test_single_axis_quick_reports_both_ablation_gaps(experiment):
    outcome = run_part(experiment, "single-axis", quick=True)
    assert set(_claims(outcome)) == {"single-axis/semantic_only_vs_nostr", "single-axis/structure_only_vs_nosem"}
    assert outcome.result.figures


def test_scaling_quick_reports_finite_slopes(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = _claims(outcome)
    assert set(claims) == {"scaling/epoch_slope", "scaling/server_slope"}
    # CPU timing on a shared machine: the verdicts are reported, the structure is tested
    assert all(math.isfinite(outcome.result.measurements[k]) for k in ("epoch_slope", "server_slope"))


def test_sign_test_and_the_preregistered_rules():
    from icml26.fedssa.experiment import (BETA_GRID, EPOCH_GRID, LAMBDA_SEM_GRID, FederationConfig, choose_cell,
                                          choose_epochs, epochs_for, grid_tasks, sign_test)
    assert sign_test([1.0, 2.0, 0.5, 3.0, 0.1]) == (5, 5, 1 / 32)
    assert sign_test([1.0, -2.0, 0.0])[:2] == (1, 2)
    assert BETA_GRID == (0.0, 0.01, 0.1) and LAMBDA_SEM_GRID == (0.0, 0.01, 0.1)
    assert len(grid_tasks(FederationConfig())) == 9
    cells = [{"beta_elbo": b, "lambda_sem": l, "val_score": 80.0} for b in BETA_GRID for l in LAMBDA_SEM_GRID]
    assert (choose_cell(cells)["beta_elbo"], choose_cell(cells)["lambda_sem"]) == (0.0, 0.0)  # ties: grid order
    cells[5]["val_score"] = 81.0
    assert (choose_cell(cells)["beta_elbo"], choose_cell(cells)["lambda_sem"]) == (0.01, 0.1)
    assert EPOCH_GRID == (1, 5)
    records = [{"method": "a", "local_epochs": 1, "val_score": 70.0}, {"method": "a", "local_epochs": 5, "val_score": 70.0},
               {"method": "b", "local_epochs": 1, "val_score": 71.0}, {"method": "b", "local_epochs": 5, "val_score": 70.0}]
    assert choose_epochs(records) == {"a": 5, "b": 1}  # ties go to the larger E
    config = FederationConfig(epochs=(("fedssa", 1), ("fedavg", 5)))
    assert epochs_for(config, "fedssa-oracle") == 1 and epochs_for(config, "fedavg") == 5
    assert epochs_for(config, "local") == config.local_epochs
    assert epochs_for(FederationConfig(epochs=("fedssa:1", "fedavg:5")), "fedssa-shuffled") == 1


def test_client_fit_leaves_the_global_torch_rng_unchanged():
    from icml26.fedssa.data import make_csbm_federation
    from icml26.fedssa.fedssa import FedSSAClient, FedSSAConfig
    graph = make_csbm_federation(n_regions=1, nodes_per_region=60, n_classes=3, n_features=8, n_clients=1,
                                 partition="region", seed=0)[0]
    state = torch.get_rng_state()
    client = FedSSAClient(graph, FedSSAConfig(hidden=8, latent=4, K=3, local_epochs=2), 3, seed=0)
    client.fit({})
    assert torch.equal(torch.get_rng_state(), state)


def test_chosen_epochs_follow_the_rule_on_the_recorded_dev_jobs():
    from icml26.core.ledger import load_jobs
    from icml26.fedssa.experiment import CHOSEN_EPOCHS, DEV_SEED, choose_epochs
    jobs = load_jobs("fedssa").get("epochs")
    if not jobs:
        pytest.skip("part epochs not recorded")
    assert {j["seed"] for j in jobs} == {DEV_SEED}
    assert choose_epochs([j["metrics"] for j in jobs]) == dict(CHOSEN_EPOCHS)
