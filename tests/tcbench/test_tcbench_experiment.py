"""Every part's quick config through the runner; claims by id; the gates can flip."""

import copy
import json
from dataclasses import replace

import numpy as np
import pytest

from icml26.core.claims import evaluate
from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part
from icml26.tcbench import SynthTC
from icml26.tcbench.experiment import _oracle_features, protocol_latents, summarize_paradox


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("tcbench")


@pytest.fixture(scope="module")
def paradox(experiment):
    return run_part(experiment, "paradox", quick=True)


def _by_id(outcome):
    return {c.id: c for c in outcome.result.claims}


def test_protocol_quick_passes_every_control(experiment):
    outcome = run_part(experiment, "protocol", quick=True)
    claims = _by_id(outcome)
    assert set(claims) == {f"protocol/{k}" for k in (
        "A_iso_stat_ratio", "A_iso_dyn_ratio", "A_shortcut_stat_ratio", "A_shortcut_dyn_ratio",
        "A_shortcut_pr_ratio")}
    assert all(c.kind == "control" and c.verdict == "PASS" for c in claims.values()), \
        [(c.id, c.measured) for c in claims.values()]
    json.dumps(outcome.jobs[0].metrics)
    assert "protocol_xi_dyn" in outcome.result.figures


def test_paradox_quick_builds_every_claim_with_its_controls(experiment, paradox):
    claims = _by_id(paradox)
    table = [s.id for s in experiment.part("paradox").claim_specs]
    assert list(claims) == table
    assert experiment.headline == "paradox/B1_E1_vs_controls"
    # every paper claim that can pass names a negative control, measured in the same run
    for c in claims.values():
        if c.kind == "paper" and not c.id.startswith("paradox/B5"):
            assert c.control is not None and np.isfinite(c.control["measured"]), c.id
    # the generator control ran: E1, E2, E3, E5 on SynthTC(saturate=False)
    assert set(paradox.jobs[0].metrics["control"]) == {"E1", "E2", "E3", "E5"}
    assert "generator control (no saturation)" in paradox.result.tables
    # E5 = five eye features + |lat|
    assert paradox.jobs[0].metrics["E5"]["dim"] == 6
    # the physics control is regime-uniform at quick scale too
    for key in ("B2_E5_stat_ratio", "B2_E5_dyn_ratio"):
        assert claims[f"paradox/{key}"].verdict == "PASS"


def test_b4_geometry_rule_stays_reachable(experiment, paradox):
    config = experiment.part("paradox").config(quick=True)
    m = paradox.jobs[0].metrics["E2"]
    std = summarize_paradox(paradox.jobs, config).measurements["B4_E2_pr_ratio"]
    raw = summarize_paradox(paradox.jobs, replace(config, geometry_standardize=False)
                            ).measurements["B4_E2_pr_ratio"]
    assert std.value == pytest.approx(m["pr_std_intense"] / m["pr_std_moderate"])
    assert raw.value == pytest.approx(m["pr_intense"] / m["pr_moderate"])


def test_planted_control_flips_the_collapse_claim(experiment, paradox):
    """A control world that collapses exactly like the benchmark world makes B1 NOT EARNED;
    one where the generic encoders are as good as E5 lets B1 pass on its own value."""
    config = experiment.part("paradox").config(quick=True)
    specs = [s for s in experiment.part("paradox").claim_specs
             if s.id in ("paradox/B1_E1_ratio", "paradox/B5_E1_ood_ratio",
                         "paradox/B1_E1_vs_controls")]
    jobs = copy.deepcopy(paradox.jobs)
    for job in jobs:                     # control world = the benchmark world itself
        job.metrics["control"] = {e: job.metrics[e] for e in ("E1", "E2", "E3", "E5")}
    same = {c.id: c for c in evaluate(specs, summarize_paradox(jobs, config).measurements)}
    if same["paradox/B1_E1_ratio"].measured >= 1.3:
        assert same["paradox/B1_E1_ratio"].verdict == "NOT EARNED"
    for job in jobs:                     # control world where E1 is as regime-uniform as E5
        job.metrics["control"]["E1"] = job.metrics["E5"]
    flat = {c.id: c for c in evaluate(specs, summarize_paradox(jobs, config).measurements)}
    assert flat["paradox/B1_E1_ratio"].verdict == (
        "PASS" if flat["paradox/B1_E1_ratio"].measured >= 1.3 else "FAIL")
    # B5 (the paradox) needs the collapse first
    if flat["paradox/B1_E1_vs_controls"].verdict != "PASS":
        assert flat["paradox/B5_E1_ood_ratio"].verdict == "INCOMPLETE"


def test_b6_rise_gate_is_per_seed(experiment):
    specs = [s for s in experiment.part("paradox").claim_specs
             if s.id == "paradox/B6_E1_rise_vs_E5"]
    from icml26.tcbench.experiment import _wins
    up, flat = [0.1, 0.12, 0.08, 0.11, 0.15], [0.0, 0.01, -0.02, 0.0, 0.01]
    verdict = lambda a, b, ca, cb: evaluate(specs, {  # noqa: E731
        "B6_E1_rise_vs_E5": _wins(a, b), "B6_E1_rise_vs_E5_nosat": _wins(ca, cb)})[0].verdict
    assert verdict(up, flat, flat, up) == "PASS"           # 5/5 seeds, control world 0/5
    assert verdict(up, flat, up, flat) == "NOT EARNED"     # the control world rises too
    assert verdict(up[:4] + [-0.1], flat, flat, up) == "INCONCLUSIVE"   # 4/5 seeds
    assert verdict(flat, up, flat, up) == "FAIL"


def test_oracle_features_ancillary_inputs():
    f = SynthTC(n_trajectories=4, image_size=32, seed=1).generate()
    lat = _oracle_features(f, "abs_lat")
    assert np.allclose(lat[:, -1], np.abs(f.lat))
    assert _oracle_features(f, "none").shape[1] == lat.shape[1] - 1
    with pytest.raises(ValueError, match="ancillary must be one of"):
        _oracle_features(f, "banana")


def test_scaling_quick_reports_a_finite_slope(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = _by_id(outcome)
    assert np.isfinite(claims["scaling/fit_time_slope"].measured)


def test_protocol_latents_reject_unknown_kind():
    f = SynthTC(n_trajectories=3, render=False).generate()
    with pytest.raises(ValueError, match="kind must be one of"):
        protocol_latents(f, "banana")


def test_protocol_run_is_deterministic(experiment):
    part = experiment.part("protocol")
    cfg = replace(part.quick, n_trajectories=40, min_count=10)
    a, b = part.run(cfg, 42), part.run(cfg, 42)
    assert a["shortcut"]["xi_stat_ratio"] == b["shortcut"]["xi_stat_ratio"]
