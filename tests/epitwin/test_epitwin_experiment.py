"""Quick configs of every part through the runner: structure, claims present, figures."""

import math

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part
from icml26.epitwin.experiment import DEV_READOUT_GRID


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("epitwin")


def _ok(outcome):
    assert all(j.error is None for j in outcome.jobs), [j.error for j in outcome.jobs if j.error]


def _claims(outcome):
    return {c.id: c for c in outcome.result.claims}


def test_registration(experiment):
    names = [p.name for p in experiment.parts]
    assert names == ["W", "X", "B", "scaling", "W_switch", "W_route", "W_seeds", "X_seeds", "dev",
                     "dev_steps", "dev_readout"]
    assert [p.name for p in experiment.select()] == ["W", "B", "scaling"]  # X opt-in
    assert experiment.part("W_switch").full.world == "switching"
    route = experiment.part("W_route").full
    assert route.world == "routing" and {"epitwin", "epitwin_mse", "labram", "linear",
                                         "epitwin_state"} <= set(route.methods)
    w = experiment.part("W").full
    assert (route.train_stride, route.duration_s, route.lr) == (w.train_stride, w.duration_s, w.lr)
    assert list(experiment.part("W_route").seeds) == [0, 1, 2] and route.cache_dir
    assert experiment.part("W_seeds").full.epochs == w.epochs and not w.cache_dir
    dev = experiment.part("dev").full
    assert dev.brain_seed != w.brain_seed  # the dev patient is never a reported one
    # the default W takes >= 1,000 optimiser steps (1-s stride, 70 % of 600 s, batch 8)
    w = experiment.part("W").full
    n_windows = (int(0.7 * w.duration_s * 256) - w.window) // w.train_stride + 1
    assert w.train_stride == 256 and w.epochs * -(-n_windows // w.batch_size) >= 1000


def test_part_w_quick(experiment):
    outcome = run_part(experiment, "W", quick=True)
    _ok(outcome)
    claims = _claims(outcome)
    assert set(claims) == {"W/epitwin_vs_labram", "W/epitwin_vs_idw", "W/epitwin_vs_ridge",
                           "W/epitwin_vs_mse", "W/refine_soi", "W/refine_lsd"}
    for c in claims.values():  # two training epochs: verdicts are not meaningful, numbers are
        assert math.isfinite(float(c.measured)), c.id
    for cid in ("W/epitwin_vs_labram", "W/epitwin_vs_idw", "W/epitwin_vs_ridge"):
        assert claims[cid].interval is not None and claims[cid].control["measured"] is not None
    # one training seed: the refinement claims' interval over seeds cannot be formed
    assert claims["W/refine_lsd"].verdict == "INCOMPLETE"
    paired = outcome.result.tables["W: paired RMSE ratios (seeds x test windows)"]
    assert ("step0", "idw") in set(zip(paired["A"], paired["B"]))  # the negative control
    table = next(iter(outcome.result.tables.values()))
    assert {"epitwin", "epitwin_mse", "labram", "idw", "ridge", "zero"} <= set(table["method"])
    assert set(outcome.result.figures) == {"masked shaft vs truth", "power spectra of masked contacts",
                                           "training curves (train and validation RMSE per epoch)"}
    steps = outcome.result.tables["W: optimiser steps and validation RMSE"]
    assert set(steps["method"]) == {"epitwin", "epitwin_mse", "labram"}
    assert (steps["optimiser steps"] > 0).all()
    assert any("MNE interpolate_bads" in n for n in outcome.result.notes)
    assert claims["W/epitwin_vs_labram"].competitor["key"] == "ridge_vs_labram"


def test_part_x_quick(experiment):
    outcome = run_part(experiment, "X", quick=True)
    _ok(outcome)
    claims = _claims(outcome)
    assert set(claims) == {"X/epitwin_vs_labram", "X/epitwin_vs_idw", "X/nohspe_increase",
                           "X/nogfba_increase"}
    for c in claims.values():
        assert math.isfinite(float(c.measured)), c.id
    assert claims["X/epitwin_vs_labram"].control["measured"] is not None  # step-0 EpiTwin
    assert outcome.result.figures


def test_part_b_quick_passes(experiment):
    outcome = run_part(experiment, "B", quick=True)
    _ok(outcome)
    claims = _claims(outcome)
    assert set(claims) == {"B/equivariance", "B/masked_input_influence", "B/laplacian_vs_eigh",
                           "B/rbf_bias_monotone", "B/disc_lengths"}
    for c in claims.values():
        assert c.verdict == "PASS" and c.kind == "check", (c.id, c.measured)


def test_scaling_quick(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    _ok(outcome)
    (claim,) = outcome.result.claims
    assert claim.id == "scaling/slope_n"
    # wall-clock timing on a shared machine: the structure is tested, the verdict reported
    assert math.isfinite(claim.measured) and claim.bar == "≤ 2.15"
    assert outcome.result.figures


def test_part_w_switch_quick(experiment):
    outcome = run_part(experiment, "W_switch", quick=True)
    _ok(outcome)
    claims = _claims(outcome)
    assert "W_switch/epitwin_vs_ridge" in claims
    assert all(cid.startswith("W_switch/") for cid in claims)


def test_part_w_route_quick(experiment):
    outcome = run_part(experiment, "W_route", quick=True)
    _ok(outcome)
    claims = _claims(outcome)
    assert {"W_route/oracle_vs_ridge", "W_route/state_vs_oracle", "W_route/epitwin_vs_idw",
            "W_route/epitwin_vs_labram", "W_route/epitwin_vs_ridge"} <= set(claims)
    assert claims["W_route/state_vs_oracle"].kind == "control"
    for c in claims.values():
        assert math.isfinite(float(c.measured)), c.id
    tables = outcome.result.tables
    metrics = tables["W_route: leave-one-shaft-out metrics (z-units)"]
    assert {"epitwin", "epitwin_mse", "labram", "idw", "ridge", "ridge_oracle", "ridge_inferred",
            "epitwin_state", "epitwin_convex_state", "step0"} <= set(metrics["method"])
    paired = tables["W_route: paired RMSE ratios (seeds x test windows)"]
    assert ("epitwin", "ridge_oracle") in set(zip(paired["A"], paired["B"]))
    assert ((paired["seed-shafts A better"] + paired["A worse"]) <= 4).all()
    assert "without the signed unmixing" in claims["W_route/state_vs_oracle"].note
    assert claims["W_route/state_vs_class"].kind == "control"
    assert "ridge_class" in set(metrics["method"])


def test_dev_parts_quick_apply_the_rules(experiment):
    outcome = run_part(experiment, "dev", quick=True)
    _ok(outcome)
    rows = outcome.result.tables["dev: best validation RMSE by model and lr"]
    assert set(rows["method"]) == {"epitwin_mse", "labram"} and len(rows) == 6
    assert sum("dev rule 1 picks" in n for n in outcome.result.notes) == 2
    outcome = run_part(experiment, "dev_steps", quick=True)
    _ok(outcome)
    assert sum("dev rule 2" in n for n in outcome.result.notes) == 2
    assert any("dev rule 3 picks" in n for n in outcome.result.notes)
    outcome = run_part(experiment, "dev_readout", quick=True)
    _ok(outcome)
    assert len(outcome.result.tables["dev: best validation RMSE by read-out setting"]) == len(DEV_READOUT_GRID)
    assert any("dev rule 4 picks" in n for n in outcome.result.notes)
