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
        "ρ=100: top-1 ILR − CE paired over seeds: one-sided sign test p",
        "ρ=100: top-1 gain ILR − CE (points): 95 % CI lower bound",
        "ρ=100: LIC(ILR) / LIC(CE)", "ρ=100: NC1(ILR) / NC1(CE)",
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


def _frame(gains_100, gains_10=(0.1, 0.2, -0.1)):
    """A summarised-jobs frame with CE at 0.80 and ILR at 0.80 + gain/100 per seed."""
    import pandas as pd

    rows = []
    for rho, gains in ((100.0, gains_100), (10.0, gains_10)):
        for seed, g in enumerate(gains):
            for method, top1 in (("CE", 0.80), ("ILR", 0.80 + g / 100)):
                rows.append({"rho": rho, "method": method, "seed": seed, "top1": top1,
                             "lic": 1.0, "nc1": 1.0, "nc2_classifier": 0.5})
    return pd.DataFrame(rows)


def test_paired_gain_matches_a_direct_computation():
    import numpy as np
    from scipy import stats

    from icml26.inverse_reweight.experiment import paired_gain

    d = np.array([0.4, 0.9, 1.6, -0.2, 1.1])
    out = paired_gain(d)
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / np.sqrt(5)
    assert out["mean"] == pytest.approx(d.mean())
    assert out["low"] == pytest.approx(d.mean() - half) and out["high"] == pytest.approx(d.mean() + half)
    assert (out["wins"], out["losses"]) == (4, 1)
    assert out["p_one_sided"] == pytest.approx(6 / 32)          # P(X >= 4), X ~ Bin(5, 1/2)


def test_gain_claim_rules_paired_and_point():
    from icml26.inverse_reweight.experiment import _long_tail_claims

    # five seeds all above CE: the sign test (p = 1/32) and the interval pass, although the
    # mean (+0.84) is below the old point bar of +1.0
    claims = {c.name: c for c in _long_tail_claims(_frame([0.5, 0.9, 0.7, 1.2, 0.9]))[0]}
    sign = claims["ρ=100: top-1 ILR − CE paired over seeds: one-sided sign test p"]
    ci = claims["ρ=100: top-1 gain ILR − CE (points): 95 % CI lower bound"]
    assert sign.passed and sign.measured == pytest.approx(1 / 32)
    assert ci.passed and "5/0" in ci.note
    assert "ρ=10: top-1 gain ILR − CE (points)" in claims       # ρ=10 keeps its point bar
    old = {c.name: c for c in _long_tail_claims(_frame([0.5, 0.9, 0.7, 1.2, 0.9]), "point")[0]}
    assert not old["ρ=100: top-1 gain ILR − CE (points)"].passed
    # three seeds cannot reach p < 0.05; a seed below CE fails the interval
    claims = {c.name: c for c in _long_tail_claims(_frame([1.5, 2.0, -1.0]))[0]}
    assert not claims["ρ=100: top-1 ILR − CE paired over seeds: one-sided sign test p"].passed
    assert not claims["ρ=100: top-1 gain ILR − CE (points): 95 % CI lower bound"].passed
