"""The measurements behind cdal's claims on hand-made frames, and the gates of claims.toml
(a planted negative control reads NOT EARNED, a failed positive control INCOMPLETE)."""

import numpy as np
import pandas as pd
import pytest

from icml26.cdal import experiment as ex
from icml26.cdal.experiment import (ANCHOR, FAIRSC, KMEANS, LMVSC_NAME, RESID, TRUTH, dependent_measurements,
                                    gap_measurement, pareto_counts, rotated_measurements)
from icml26.core.claims import Measurement, evaluate
from icml26.core.experiment import get_experiment
from icml26.core.stats import paired_mean_interval

OURS = "CDAL(lam=100)"


def frame_of(per_method: dict) -> pd.DataFrame:
    """per_method: method -> list of (nmi, balance) per seed."""
    rows = [{"method": m, "seed": s, "nmi": nmi, "balance": bal}
            for m, values in per_method.items() for s, (nmi, bal) in enumerate(values)]
    frame = pd.DataFrame(rows)
    for metric in ex.METRICS:
        if metric not in frame:
            frame[metric] = np.nan
    return frame


def base_methods(n=10, ours=(0.9, 0.85), resid=(0.92, 0.86), lmvsc=None):
    lmvsc = lmvsc or [(0.95, 0.9) if s % 2 else (0.6, 0.0) for s in range(n)]
    return {OURS: [ours] * n, KMEANS: [(0.45, 0.0)] * n, ANCHOR: [(0.4, 0.01)] * n,
            LMVSC_NAME: lmvsc, RESID: [resid] * n, FAIRSC: [(0.7, 0.95)] * n, TRUTH: [(1.0, 0.9)] * n}


def specs(part, *ids):
    return [s for s in get_experiment("cdal").part(part).claim_specs if s.id in ids]


def test_balance_margin_uses_every_seed():
    m = rotated_measurements(frame_of(base_methods()), OURS)
    # LMVSC is unfair (Balance 0) on the even seeds only: margin 0.85 there, −0.05 on the odd ones
    margin = m["balance_margin_lmvsc"]
    assert margin.value == pytest.approx(0.4)
    assert "5/10 seeds" in margin.note
    assert margin.interval[0] < 0.4 < margin.interval[1]


def test_nmi_gap_to_residualise_only_on_seeds_where_both_are_fair():
    methods = base_methods(resid=(0.9, 0.85))
    methods[RESID] = [(0.99, 0.0)] * 3 + [(0.9, 0.85)] * 7   # baseline unfair on seeds 0-2
    m = rotated_measurements(frame_of(methods), OURS)
    assert m["nmi_gap_resid_fair"].value == pytest.approx(0.0)
    assert "3, 4, 5, 6, 7, 8, 9" in m["nmi_gap_resid_fair"].note
    # the anchor MVC negative control is never fair: no seed qualifies → incomplete, cannot pass
    assert m["nmi_gap_resid_fair_anchor"].incomplete


def test_gap_interval_is_scipy_bca_paired():
    diffs = [0.01, -0.26, -0.01, 0.0, 0.0, 0.02, -0.03, 0.0, 0.01, -0.02]
    m = gap_measurement(diffs)
    assert m.value == pytest.approx(np.mean(diffs))
    assert m.interval == pytest.approx(paired_mean_interval(diffs, level=ex.CI_LEVEL))
    assert "half-width" in m.note


def test_pareto_counts_dominance_with_tolerance():
    nmi = pd.DataFrame({"a": [0.9, 0.9, 0.5, 0.9], "b": [0.8, 0.9, 0.9, 0.905]})
    bal = pd.DataFrame({"a": [0.9, 0.9, 0.9, 0.9], "b": [0.9, 0.5, 0.9, 0.9]})
    # seed 0: a better NMI; seed 1: a better Balance; seed 2: b dominates; seed 3: within tolerance
    assert pareto_counts(nmi, bal, "a", "b") == (2, 1)


def test_dependent_joint_margin_is_the_min_of_both_conditions():
    methods = base_methods(ours=(0.9, 0.95), resid=(0.92, 0.5))
    methods[TRUTH] = [(1.0, 0.6)] * 10
    m = dependent_measurements(frame_of(methods), OURS)
    # Balance over truth 0.35 − 0.1 = 0.25; NMI gap −0.02 + 0.05 = 0.03 → 0.03
    assert m["joint"].value == pytest.approx(0.03)
    assert m["balance_over_truth"].value == pytest.approx(0.35)
    assert m["nmi_gap_resid"].value == pytest.approx(-0.02)


def test_headline_passes_then_a_planted_negative_control_makes_it_not_earned():
    sp = specs("dep", "dep/joint_oracle", "dep/joint")
    good = {"joint_oracle": Measurement(0.3, interval=(0.25, 0.35)),
            "joint": Measurement(0.05, interval=(0.02, 0.08)), "joint_fairsc": -0.1}
    by_id = lambda ms: {c.id: c.verdict for c in evaluate(sp, ms)}  # noqa: E731
    assert by_id({**good, "joint_anchor": -0.3})["dep/joint"] == "PASS"
    assert by_id({**good, "joint_anchor": 0.01})["dep/joint"] == "NOT EARNED"
    # the positive control fails: nothing in this world is fairer than the truth → INCOMPLETE
    failed = {**good, "joint_anchor": -0.3, "joint_oracle": Measurement(-0.1, interval=(-0.15, -0.05))}
    assert by_id(failed)["dep/joint"] == "INCOMPLETE"
    # an interval that straddles the bar cannot pass
    straddle = {**good, "joint_anchor": -0.3, "joint": Measurement(0.05, interval=(-0.02, 0.12))}
    assert by_id(straddle)["dep/joint"] == "INCONCLUSIVE"


def test_dual_anchor_ablation_requires_the_anchor_premise():
    sp = specs("B", "B/balance_anchor", "B/balance_dual")
    ms = {"balance_dual": 0.9, "balance_kmeans": 0.0}
    verdicts = lambda anchor: {c.id: c.verdict for c in evaluate(sp, {**ms, "balance_anchor": anchor})}  # noqa: E731
    assert verdicts(0.0)["B/balance_dual"] == "PASS"
    assert verdicts(0.5)["B/balance_dual"] == "INCOMPLETE"   # premise fails: groups not split without anchors
    assert verdicts(0.85)["B/balance_dual"] == "INCOMPLETE"


def test_scaling_slope_not_earned_when_the_quadratic_peer_is_linear_too():
    sp = specs("scaling", "scaling/slope")
    assert evaluate(sp, {"slope": 1.0, "slope_spectral": 2.0})[0].verdict == "PASS"
    assert evaluate(sp, {"slope": 1.0, "slope_spectral": 1.0})[0].verdict == "NOT EARNED"


def test_every_paper_claim_that_can_pass_names_a_negative_control():
    for part in get_experiment("cdal").parts:
        for spec in part.claim_specs:
            if spec.kind == "paper":
                assert spec.negative_control, spec.id


def test_dominant_anchor_change_is_a_share_and_zero_after_one_iteration():
    from icml26.cdal import CDAL, make_preset
    data = make_preset("rotated", seed=0, n=300)
    one = CDAL(4, lam=100.0, max_iter=1, random_state=0).fit(data.views, sensitive=data.groups)
    assert one.dominant_anchor_change_ == 0.0
    free = CDAL(4, lam=0.0, max_iter=30, tol=0.0, random_state=0).fit(data.views, sensitive=data.groups)
    assert 0.0 <= free.dominant_anchor_change_ <= 1.0


def test_fair_oracle_balances_every_cluster_and_keeps_sizes():
    from icml26.cdal import make_preset
    from icml26.cdal.experiment import fair_oracle_labels
    from icml26.cdal.metrics import balance, nmi
    data = make_preset("rotated", seed=0, n=1200, rho=0.6)
    out = fair_oracle_labels(data.labels, data.groups, 0)
    assert np.array_equal(np.bincount(out), np.bincount(data.labels))
    assert balance(out, data.groups) > balance(data.labels, data.groups) + 0.3
    assert balance(out, data.groups) > 0.9 and 0.3 < nmi(data.labels, out) < 1.0
    assert np.array_equal(out, fair_oracle_labels(data.labels, data.groups, 0))


def test_fair_oracle_with_a_target_moves_only_as_far_as_needed():
    from icml26.cdal import make_preset
    from icml26.cdal.experiment import fair_oracle_labels
    from icml26.cdal.metrics import balance, nmi
    data = make_preset("rotated", seed=0, n=1200, rho=0.3)
    truth = balance(data.labels, data.groups)
    partial = fair_oracle_labels(data.labels, data.groups, 0, truth + 0.11)
    full = fair_oracle_labels(data.labels, data.groups, 0)
    assert truth + 0.11 <= balance(partial, data.groups) < balance(full, data.groups)
    assert nmi(data.labels, full) < nmi(data.labels, partial) < 1.0
