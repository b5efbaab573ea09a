"""Every part's quick config through the runner (claims by id), and the gates of the claim table.

The closed-loop parts use a small policy (few demonstrations and training steps) so the test
stays fast; with it the competence-dependent bars (calibration, RCD trade-off, α trend) are
not meaningful and are only checked for presence. The guarantees (HCD/Filter/Reject 100 %
satisfaction, RCD α = 0 bit-for-bit, exact-enumeration bars) hold for any policy and are
asserted.
"""

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.core.claims import Measurement, evaluate, load_table
from icml26.core.runner import run_part
from icml26.safedec.experiment import EXPERIMENT, over_seeds, _rcd_margin, MainConfig
from icml26.safedec.policy import train_bc
from icml26.safedec.data import load_or_make_demos

SMALL = {"episodes": "8", "n_demos": "60", "train_steps": "40"}
MAIN_SMALL = {**SMALL, "dev_episodes": "8", "rcd_betas": "8,16"}
TABLE = load_table("safedec")


def _by_id(out):
    return {c.id: c for c in out.result.claims}


@pytest.fixture(scope="module")
def exp():
    return EXPERIMENT


def test_main_part_quick_guarantees_hold(exp):
    out = run_part(exp, "main", quick=True, seeds=1,
                   overrides={**MAIN_SMALL, "greedy": "false", "alphas": "5"})
    claims = _by_id(out)
    assert set(claims) == {c.id for c in TABLE.for_part("main")}
    for cid in ("main/hcd_sat_min", "main/filter_reject_sat_min", "main/rcd0_equals_uncon"):
        assert claims[cid].verdict == "PASS", (cid, claims[cid].measured)
    assert "E1 main table (mean ± std over seeds)" in out.result.tables
    # the 40-step policy is not competent: the success-rate comparisons read INCOMPLETE, not FAIL
    competence = claims["main/competence"]
    assert competence.kind == "control" and competence.verdict == "FAIL"
    gated = [c for cid, c in claims.items() if cid.startswith(("main/hcd_vs_filter_sr", "main/rcd_margin"))]
    assert len(gated) == 4
    assert all(c.verdict == "INCOMPLETE" for c in gated)
    # the random-restriction stand-in was rolled out: it masks like HCD, so it is always safe
    m = out.result.measurements
    assert m["uniform_sat_min"].value == 100.0


def _main_measurements(**over):
    base = {"uncon_sat_avoid": 60.0, "uncon_sat_geofence": 70.0, "competence": 80.0,
            "hcd_sat_min": 100.0, "uncon_sat_min": 40.0, "filter_sat_min": 100.0, "uniform_sat_min": 100.0,
            "filter_reject_sat_min": 100.0, "rcd0_equals_uncon": True}
    for fam in ("avoid", "geofence"):
        base.update({f"hcd_vs_filter_sr_{fam}": Measurement(1.0, interval=(0.0, 2.0)),
                     f"uniform_vs_filter_sr_{fam}": Measurement(-20.0, interval=(-25.0, -15.0)),
                     f"reject_vs_filter_sr_{fam}": 0.5,
                     f"rcd_margin_{fam}": Measurement(2.0, interval=(1.0, 3.0)),
                     f"uniform_rcd_margin_{fam}": Measurement(-20.0, interval=(-25.0, -15.0)),
                     f"filter_rcd_margin_{fam}": -1.0,
                     f"hcd_vs_filter_logp_{fam}": Measurement(0.2, interval=(0.1, 0.3)),
                     f"uniform_vs_filter_logp_{fam}": Measurement(-1.0, interval=(-1.2, -0.8))})
    base.update(over)
    return {c.id: c for c in evaluate(TABLE.for_part("main"), base)}


def test_sr_claims_pass_only_with_a_competent_policy():
    ok = _main_measurements()
    assert ok["main/hcd_vs_filter_sr_avoid"].verdict == "PASS"
    assert ok["main/rcd_margin_geofence"].verdict == "PASS"
    gated = _main_measurements(competence=40.0)
    assert gated["main/hcd_vs_filter_sr_avoid"].verdict == "INCOMPLETE"
    assert gated["main/rcd_margin_geofence"].verdict == "INCOMPLETE"
    assert gated["main/hcd_sat_min"].verdict == "PASS"        # the guarantee needs no competence


@pytest.mark.parametrize("cid, control", [
    ("main/hcd_sat_min", {"uncon_sat_min": 100.0}),
    ("main/hcd_vs_filter_sr_avoid", {"uniform_vs_filter_sr_avoid": Measurement(0.0, interval=(-0.5, 0.5))}),
    ("main/rcd_margin_avoid", {"uniform_rcd_margin_avoid": Measurement(1.0, interval=(0.5, 1.5))}),
    ("main/hcd_vs_filter_logp_geofence",
     {"uniform_vs_filter_logp_geofence": Measurement(0.3, interval=(0.2, 0.4))}),
])
def test_a_planted_passing_control_makes_the_claim_not_earned(cid, control):
    assert _main_measurements()[cid].verdict == "PASS"
    assert _main_measurements(**control)[cid].verdict == "NOT EARNED"


def test_kinds_and_headline():
    kinds = {c.id: c.kind for c in TABLE.claims}
    assert TABLE.headline == "main/hcd_sat_min" and kinds[TABLE.headline] == "paper"
    assert kinds["main/competence"] == "control" and kinds["main/rcd0_equals_uncon"] == "check"
    assert all(kinds[c.id] == "check" for c in TABLE.for_part("exact") + TABLE.for_part("scaling"))
    for c in TABLE.claims:     # every paper claim comparing with Filter names a stand-in control
        if c.kind == "paper" and "filter" in c.id:
            assert c.negative_control


def test_over_seeds_interval_and_point_rule():
    m = over_seeds([1.0, 2.0, 3.0])
    assert m.value == pytest.approx(2.0) and m.interval[0] < 2.0 < m.interval[1]
    assert over_seeds([1.0, 2.0, 3.0], intervals=False).interval is None
    assert over_seeds([]).incomplete


def test_rcd_margin_matches_the_bar_by_hand():
    rows = []
    for seed, (u_sat, u_sr, h_sr, r_sat, r_sr) in enumerate([(40, 40, 30, 80, 35), (50, 44, 30, 70, 30)]):
        rows += [{"seed": seed, "family": "avoid", "decoder": d, "sat": s, "success": r}
                 for d, s, r in (("uncon", u_sat, u_sr), ("hcd", 100, h_sr), ("rcd", r_sat, r_sr))]
    m = _rcd_margin(pd.DataFrame(rows), "avoid", "rcd", MainConfig(intervals=False))
    # seed 0: need sat 70, need SR max(29, 32) = 32 -> min(10, 3) = 3; seed 1: need 75, 36 -> min(-5, -6)
    assert m.value == pytest.approx((3.0 - 6.0) / 2)


def test_train_bc_leaves_the_global_generator_alone():
    demos = load_or_make_demos(20, 7)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    train_bc(demos, seed=0, steps=2)
    assert torch.equal(torch.get_rng_state(), before)
    a = train_bc(demos, seed=0, steps=2)
    b = train_bc(demos, seed=0, steps=2)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_alpha_and_mismatch_parts_quick_structure(exp):
    alpha = run_part(exp, "alpha", quick=True, seeds=1, overrides={**SMALL, "alphas": "0,5,25"})
    assert list(_by_id(alpha)) == ["alpha/spearman_alpha_sat"]
    mismatch = run_part(exp, "mismatch", quick=True, seeds=1, overrides=SMALL)
    assert set(_by_id(mismatch)) == {"mismatch/hcd_minus_uncon_sat", "mismatch/hcd_delta_sat"}


def test_exact_part_quick_claims_pass(exp):
    out = run_part(exp, "exact", quick=True)
    claims = _by_id(out)
    assert len(claims) == 5
    failed = [(c.id, c.measured) for c in claims.values() if c.verdict != "PASS"]
    assert not failed


def test_scaling_part_quick_structure(exp):
    out = run_part(exp, "scaling", quick=True, overrides={"repeats": "3", "steps": "100",
                                                          "n_tokens": "7,28,112", "n_zones": "1,4,16"})
    claims = _by_id(out)
    assert len(claims) == 4
    assert all(np.isfinite(float(c.measured)) for c in claims.values())
