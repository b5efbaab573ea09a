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
    "1'. RAI (grid setting selected on dev) ASR / no-defense ASR",
    "oracle control: oracle ASR / no-defense ASR (dev, worst seed)",
    "1 (literal). RAI absolute λ = 1 (spec default) ASR / no-defense ASR",
    "7. risk-score AUROC, attack vs benign images (mean over seeds)"}


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("rai")


def test_glyphsafe_quick_run(experiment, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    outcome = run_part(experiment, "glyphsafe", quick=True)
    claims = outcome.claims_by_name()
    assert set(claims) == GLYPHSAFE_CLAIMS
    assert "precondition" not in capfd.readouterr().out           # the terminal stays quiet
    assert any("precondition" in j.output for j in outcome.jobs)   # it goes to the run's log
    methods = set(outcome.result.tables["defenses (test split, mean ± std over seeds)"]["method"])
    assert methods == {"no defense", "RAI", "RAI absolute λ = 1 (spec literal)", "RAI-inlexicon", "random prototypes",
                       "all-token modulation", "oracle: unsafe word's embedding on RAI's token", "AdaShield-S",
                       "ECSO-lite", "CoCA", "RAI (dev-selected)"}
    assert len(outcome.result.figures) == 3
    for fig in outcome.result.figures.values():
        for ax in fig.axes[:1]:
            assert ax.get_xlabel() and ax.get_ylabel()
    # the untrained quick model cannot meet the premise: the claim says so instead of passing
    assert not claims["precondition met (share of seeds)"].passed
    assert 0.0 <= claims["6. selected token on the glyph (share of attacks)"].measured <= 1.0
    assert 0.0 <= claims["7. risk-score AUROC, attack vs benign images (mean over seeds)"].measured <= 1.0
    # RAI's ASR claims are INCOMPLETE exactly when the oracle control fails
    gated = [n for n in claims if n.startswith(("1", "3."))]
    oracle_passed = claims["oracle control: oracle ASR / no-defense ASR (dev, worst seed)"].passed
    assert all((claims[n].verdict == "INCOMPLETE") == (not oracle_passed) for n in gated)


def test_overhead_quick_run(experiment):
    outcome = run_part(experiment, "overhead", quick=True)
    claims = outcome.claims_by_name()
    assert set(claims) == {"log-log slope of score+modulate time in N_v (d = 128)",
                           "score+modulate time / one prefill at N_v = 16 (toy model)"}
    # wall-clock timings on a shared machine: the verdict is reported, the structure tested
    assert all(math.isfinite(c.measured) for c in claims.values())
    assert claims["log-log slope of score+modulate time in N_v (d = 128)"].bar == "≤ 1.15"


def test_strength_rule_auroc_and_oracle_gate():
    import numpy as np

    from icml26.core.experiment import Claim
    from icml26.rai.experiment import _gate, auroc, select_strength

    rows = [{"strength": 1.0, "attack_asr": 0.9, "over_refusal": 0.0},
            {"strength": 3.0, "attack_asr": 0.4, "over_refusal": 0.04},
            {"strength": 5.0, "attack_asr": 0.1, "over_refusal": 0.2}]
    assert select_strength(rows, 0.05) == 3.0          # lowest ASR within the over-refusal cap
    rows[1]["attack_asr"] = 0.9
    assert select_strength(rows, 0.05) == 1.0          # ties to the smaller λ
    assert select_strength([dict(r, over_refusal=0.3 + r["strength"] / 100) for r in rows], 0.05) == 1.0
    assert auroc([2, 3], [0, 1]) == 1.0 and auroc([0, 1], [2, 3]) == 0.0 and auroc([1, 1], [1, 1]) == 0.5
    rng = np.random.default_rng(0)
    pos, neg = rng.normal(1, 1, 40), rng.normal(0, 1, 50)
    brute = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])
    assert abs(auroc(pos, neg) - brute) < 1e-12
    claim = Claim.at_most("1. x", 0.1, 0.5)
    assert claim.verdict == "PASS" and _gate(claim, "").verdict == "PASS"
    gated = _gate(claim, "the world gives no pathway")
    assert gated.verdict == "INCOMPLETE" and not gated.passed and "no pathway" in gated.note
