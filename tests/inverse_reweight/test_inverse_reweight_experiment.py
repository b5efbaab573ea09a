"""Each part's quick config through the runner, and the claim gates on planted per-seed data."""

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.core.claims import evaluate
from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part

EXP = get_experiment("inverse_reweight")


def _claims(outcome):
    return {c.id: c for c in outcome.result.claims}


def test_registered_parts_and_headline():
    assert [p.name for p in EXP.parts] == ["E1", "E1b", "dev", "ablation", "properties", "scaling"]
    assert [p.name for p in EXP.parts if not p.default] == ["dev", "ablation"]
    assert EXP.headline == "E1/ilr_vs_best_baseline"
    kinds = {s.id: s.kind for p in EXP.parts for s in p.claim_specs}
    assert {k for i, k in kinds.items() if i.startswith(("properties/", "scaling/"))} == {"check"}
    assert kinds["E1/detached_vs_ilr"] == "check" and kinds["dev/constants_match_rule"] == "control"
    # every paper claim names a negative control
    for part in EXP.parts:
        for spec in part.claim_specs:
            if spec.kind == "paper":
                assert spec.negative_control, spec.id


def test_tuned_constants_cover_every_variant():
    from icml26.inverse_reweight.experiment import (COMPETITOR, LR_FAMILY, STRONG_BASELINES,
                                                    TUNED_LR, VARIANTS, LongTailConfig,
                                                    long_tail_tasks, method_lr)

    assert COMPETITOR in STRONG_BASELINES
    assert all(method_lr(m, LongTailConfig()) in TUNED_LR.values() for m in VARIANTS)
    assert set(LR_FAMILY.values()) <= set(TUNED_LR)
    old = LongTailConfig(tuned_lr=False, lr=0.1)                    # the old shared-lr rule
    assert {t["lr"] for t in long_tail_tasks(old)} == {0.1}
    grid = long_tail_tasks(LongTailConfig(methods=("CE",), lr_grid=(0.05, 0.1)))
    assert [t["lr"] for t in grid] == [0.05, 0.1]
    with pytest.raises(ValueError, match="competitor"):
        long_tail_tasks(LongTailConfig(competitor="best"))


@pytest.mark.slow
def test_e1_quick_claims():
    outcome = run_part(EXP, "E1", quick=True)
    claims = _claims(outcome)
    assert set(claims) == {s.id for s in EXP.part("E1").claim_specs}
    # ILR equalises class losses at quick scale; detaching the weights does not help.
    assert claims["E1/lic_ratio"].measured < 1.0
    headline = claims["E1/ilr_vs_best_baseline"]
    assert headline.control["key"] == "base_vs_best_baseline"
    assert headline.competitor["key"] == "best_baseline_vs_ce"
    table = outcome.result.tables["mnist1d_lt"]
    assert list(table["method"]) == ["CE", "CE-DRW", "LDAM-DRW", "ILR", "ILR-detached"]
    assert "per_class" in outcome.result.figures


def test_properties_quick_claims_all_pass():
    claims = _claims(run_part(EXP, "properties", quick=True))
    assert len(claims) == 6 and all(c.passed for c in claims.values()), claims


def test_scaling_quick_claim_is_measured():
    claim = _claims(run_part(EXP, "scaling", quick=True))["scaling/reweight_slope"]
    assert np.isfinite(claim.measured)


def _frame(gain_ilr, gain_cedrw, n_seeds=10, competitor_gain=5.0, lic=(0.7, 0.9)):
    """Per-seed rows at one ρ: CE at 0.80; ILR, CE-DRW and LDAM-DRW at fixed per-seed gains
    (points, plus a small seed-dependent jitter); LIC ratios to CE ``lic`` (ILR, CE-DRW)."""
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(n_seeds):
        jitter = rng.normal(0, 0.2, 4)
        for i, (method, gain, lic_ratio) in enumerate((
                ("CE", 0.0, 1.0), ("ILR", gain_ilr, lic[0]), ("CE-DRW", gain_cedrw, lic[1]),
                ("LDAM-DRW", competitor_gain, 1.5))):
            rows.append({"rho": 100.0, "method": method, "seed": seed,
                         "top1": 0.80 + (gain + (jitter[i] if i else 0.0)) / 100,
                         "lic": lic_ratio, "nc1": 1.0, "nc2_classifier": 0.5})
    return pd.DataFrame(rows)


def _verdicts(frame, competitor="LDAM-DRW"):
    from icml26.inverse_reweight.experiment import long_tail_measurements

    out = evaluate(EXP.part("E1").claim_specs, long_tail_measurements(frame, competitor))
    return {c.id: c.verdict for c in out}


def test_gain_over_ce_is_not_earned_when_plain_drw_gains_as_much():
    # ILR beats CE on every seed, but so does CE-DRW (the negative control): NOT EARNED
    verdicts = _verdicts(_frame(gain_ilr=1.0, gain_cedrw=2.0))
    assert verdicts["E1/ilr_vs_ce"] == "NOT EARNED"
    assert verdicts["E1/ilr_vs_cedrw"] == "FAIL"
    # a CE-DRW that does not gain: the same ILR gain over CE is earned; beating such a
    # CE-DRW is not (plain CE, the negative control, beats it too)
    verdicts = _verdicts(_frame(gain_ilr=1.0, gain_cedrw=-1.0))
    assert verdicts["E1/ilr_vs_ce"] == "PASS" and verdicts["E1/ilr_vs_cedrw"] == "NOT EARNED"
    assert _verdicts(_frame(gain_ilr=3.0, gain_cedrw=1.0))["E1/ilr_vs_cedrw"] == "PASS"


def test_lic_claim_needs_a_control_that_fails():
    assert _verdicts(_frame(1.0, 2.0, lic=(0.7, 0.5)))["E1/lic_ratio"] == "NOT EARNED"
    assert _verdicts(_frame(1.0, 2.0, lic=(0.7, 0.95)))["E1/lic_ratio"] == "PASS"
    assert _verdicts(_frame(1.0, 2.0, lic=(0.9, 0.95)))["E1/lic_ratio"] == "FAIL"


def test_nc_bars_fail_for_ce_itself():
    # NC relative to CE: a method with CE's own geometry (ratio 1, difference 0) fails the
    # bars (under the spec's tolerance bars it passed)
    verdicts = _verdicts(_frame(1.0, 2.0))
    assert verdicts["E1/nc1_ratio"] == "FAIL" and verdicts["E1/nc2_diff"] == "FAIL"


def test_headline_interval_verdicts():
    assert _verdicts(_frame(1.0, 0.0, competitor_gain=5.0))["E1/ilr_vs_best_baseline"] == "FAIL"
    assert _verdicts(_frame(6.0, 0.0, competitor_gain=5.0))["E1/ilr_vs_best_baseline"] == "PASS"
    # CE-DRW beats the competitor as well: not earned
    assert _verdicts(_frame(6.0, 5.5, competitor_gain=5.0))["E1/ilr_vs_best_baseline"] == \
        "NOT EARNED"
    assert _verdicts(_frame(5.05, 0.0, competitor_gain=5.0, n_seeds=3))[
        "E1/ilr_vs_best_baseline"] == "INCONCLUSIVE"


def test_paired_measurement_matches_direct_computation():
    from scipy import stats

    from icml26.core.stats import paired_mean_interval
    from icml26.inverse_reweight.experiment import paired_measurement

    d = np.array([0.4, 0.9, 1.6, -0.2, 1.1])
    m = paired_measurement(d)                                   # 5 seeds: Student-t
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / np.sqrt(5)
    assert m.value == pytest.approx(d.mean())
    assert m.interval == pytest.approx((d.mean() - half, d.mean() + half))
    assert "4/1 seeds" in m.note
    d10 = np.linspace(-0.5, 1.5, 10)                            # 10 seeds: paired BCa
    assert paired_measurement(d10).interval == pytest.approx(paired_mean_interval(d10))


def test_competitor_rules():
    from icml26.inverse_reweight.experiment import COMPETITOR, choose_competitor

    frame = _frame(1.0, 2.0)
    assert choose_competitor(frame, "test_max") == "LDAM-DRW"
    assert choose_competitor(frame, "dev") == (COMPETITOR if COMPETITOR in ("CE-DRW", "LDAM-DRW")
                                               else None)


def test_choose_on_dev_rule():
    from icml26.inverse_reweight.experiment import choose_on_dev

    rows = [{"method": m, "lr": lr, "seed": s, "top1": t + 0.001 * s} for s in (100, 101)
            for m, lr, t in (("CE", 0.05, 0.78), ("CE", 0.1, 0.80), ("CE", 0.2, 0.80),
                             ("BalancedSoftmax", 0.1, 0.84), ("LDAM-DRW", 0.05, 0.86),
                             ("LDAM-DRW", 0.1, 0.85), ("ILR", 0.2, 0.81))]
    lrs, competitor = choose_on_dev(pd.DataFrame(rows))
    assert lrs == {"BalancedSoftmax": 0.1, "CE": 0.1, "ILR": 0.2, "LDAM-DRW": 0.05}  # tie -> smaller
    assert competitor == "LDAM-DRW"


def test_fit_leaves_the_callers_rng_alone():
    from icml26.inverse_reweight import LongTailTrainer
    from icml26.inverse_reweight.data import make_gaussian_lt

    X, y, *_ = make_gaussian_lt(n_classes=3, n_features=8, n_max=40, imbalance_ratio=4, seed=0)
    state = torch.get_rng_state()
    LongTailTrainer("ilr", epochs=2, network="mlp", batch_size=16, random_state=1).fit(X, y)
    assert torch.equal(torch.get_rng_state(), state)
