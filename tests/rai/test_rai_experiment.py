"""Quick runs of both parts through the runner: structure, the premise print, figures, claims."""

import math

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part

GLYPHSAFE_CLAIMS = {
    "precondition met (share of seeds)", "1. RAI image-attack ASR / no-defense ASR",
    "2a. |colour-VQA(RAI) − colour-VQA(none)| (points)", "2b. RAI benign-image over-refusal",
    "3. random prototypes: relative ASR reduction", "4. all-token over-refusal − RAI over-refusal",
    "5a. proj(text harmful) − proj(image attack) > 0 (dilution)",
    "5b. RAI moves image attacks toward text-harmful (share of the gap)",
    "5c. RAI moves benign images (share of the gap)", "6. selected token on the glyph (share of attacks)",
    "1'. RAI (grid setting selected on dev) ASR / no-defense ASR"}


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("rai")


def test_glyphsafe_quick_run(experiment, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    outcome = run_part(experiment, "glyphsafe", quick=True)
    claims = outcome.claims_by_name()
    assert set(claims) == GLYPHSAFE_CLAIMS
    assert "precondition" in capfd.readouterr().out
    methods = set(outcome.result.tables["defenses (test split, mean ± std over seeds)"]["method"])
    assert methods == {"no defense", "RAI", "RAI scale=relative (Resolution; report only)", "RAI-inlexicon", "random prototypes", "all-token modulation", "AdaShield-S",
                       "ECSO-lite", "CoCA", "RAI (dev-selected)"}
    assert len(outcome.result.figures) == 3
    for fig in outcome.result.figures.values():
        for ax in fig.axes[:1]:
            assert ax.get_xlabel() and ax.get_ylabel()
    # the untrained quick model cannot meet the premise: the claim says so instead of passing
    assert not claims["precondition met (share of seeds)"].passed
    assert 0.0 <= claims["6. selected token on the glyph (share of attacks)"].measured <= 1.0


def test_overhead_quick_run(experiment):
    outcome = run_part(experiment, "overhead", quick=True)
    claims = outcome.claims_by_name()
    assert set(claims) == {"log-log slope of score+modulate time in N_v (d = 128)",
                           "score+modulate time / one prefill at N_v = 16 (toy model)"}
    # wall-clock timings on a shared machine: the verdict is reported, the structure tested
    assert all(math.isfinite(c.measured) for c in claims.values())
    assert claims["log-log slope of score+modulate time in N_v (d = 128)"].bar == "≤ 1.15"
