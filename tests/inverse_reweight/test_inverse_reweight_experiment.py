"""Each part's quick config through the runner: structure and the meaningful quick claims."""

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part

EXP = get_experiment("inverse_reweight")


def test_registered_parts():
    assert [p.name for p in EXP.parts] == ["E1", "ablation", "properties", "scaling"]
    assert not EXP.part("ablation").default


@pytest.mark.slow
def test_e1_quick_claims():
    outcome = run_part(EXP, "E1", quick=True)
    claims = outcome.claims_by_name()
    assert set(claims) == {
        "ρ=100: top-1 gain ILR − CE (points)", "ρ=100: LIC(ILR) / LIC(CE)", "ρ=100: NC1(ILR) / NC1(CE)",
        "ρ=100: NC2_classifier(ILR) − NC2_classifier(CE)", "ρ=100: top-1 ILR-detached − ILR (points)"}
    # Robust at quick scale: ILR equalises class losses; detaching the weights hurts.
    assert claims["ρ=100: LIC(ILR) / LIC(CE)"].passed
    assert claims["ρ=100: top-1 ILR-detached − ILR (points)"].passed
    table = outcome.result.tables["mnist1d_lt"]
    assert list(table["method"]) == ["CE", "ILR", "ILR-detached"]
    assert "per_class" in outcome.result.figures


def test_properties_quick_claims_all_pass():
    claims = run_part(EXP, "properties", quick=True).claims_by_name()
    assert len(claims) == 6 and all(c.passed for c in claims.values()), claims


def test_scaling_quick_claim_passes():
    claims = run_part(EXP, "scaling", quick=True).claims_by_name()
    assert claims["ILR extra cost (reweighting) vs |B|+C: log-log slope"].passed
