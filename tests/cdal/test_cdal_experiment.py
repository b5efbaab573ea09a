"""Quick configs of every part through the runner: structure, and the claims that hold at quick size."""

import math

import numpy as np
import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("cdal")


def by_id(outcome):
    return {c.id: c for c in outcome.result.claims}


def test_part_a_quick_claims(experiment):
    outcome = run_part(experiment, "A", quick=True)
    claims = by_id(outcome)
    assert set(claims) == {s.id for s in experiment.part("A").claim_specs}
    assert claims["A/monotone"].passed, claims["A/monotone"].measured
    gap = claims["A/nmi_gap_resid_fair"]
    assert gap.interval is not None or gap.verdict == "INCOMPLETE"
    assert any("old rule" in note for note in outcome.result.notes)
    assert any(name.startswith("per seed:") for name in outcome.result.tables)
    table = outcome.result.tables["dominant-anchor change between iteration 1 and the last, per lam"]
    assert list(table["lam"]) == [0.0, 1.0, 10.0, 100.0, 1000.0]
    assert ((table["min"] >= 0) & (table["max"] <= 1)).all()
    assert outcome.result.figures


def test_part_dep_quick_measures_the_headline_and_its_controls(experiment):
    outcome = run_part(experiment, "dep", quick=True)
    claims = by_id(outcome)
    assert {"dep/joint", "dep/balance_over_truth", "dep/nmi_gap_resid", "dep/pareto_resid",
            "dep/joint_oracle"} == set(claims)
    measurements = outcome.result.measurements
    assert {"joint_anchor", "joint_fairsc", "joint_oracle", "truth_balance"} <= set(measurements)
    # rho = 0.3 makes the truth unbalanced: its Balance is well below the rho = 0 value (~0.9)
    assert measurements["truth_balance"].value < 0.7


def test_part_b_quick_claims(experiment):
    outcome = run_part(experiment, "B", quick=True)
    claims = by_id(outcome)
    assert set(claims) == {"B/balance_anchor", "B/balance_dual", "B/nmi", "B/monotone"}
    for cid in ("B/balance_anchor", "B/monotone"):
        assert claims[cid].passed, (cid, claims[cid].measured)


def test_scaling_quick_reports_finite_slope_and_memory(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = by_id(outcome)
    slope = claims["scaling/slope"]
    # CPU timing on a shared machine: the verdict is reported, the structure is tested
    assert math.isfinite(slope.measured) and slope.bar == "≤ 1.15"
    assert 0 < claims["scaling/peak_gb"].measured < 2.0


def test_tradeoff_quick_is_resumable_from_its_cache(experiment, tmp_path):
    overrides = {"cache_dir": str(tmp_path)}
    first = run_part(experiment, "C", quick=True, overrides=overrides)
    stored = sorted(p.name for p in tmp_path.iterdir())
    assert len(stored) == 2 and all(name.endswith(".json") for name in stored)
    second = run_part(experiment, "C", quick=True, overrides=overrides)
    assert [j.metrics for j in second.jobs] == [j.metrics for j in first.jobs]
    assert second.result.figures and any("CDAL Balance by lam" in n for n in second.result.notes)


def test_reverse_digits_quick_runs(experiment):
    outcome = run_part(experiment, "D", quick=True)
    (table,) = outcome.result.tables.values()
    assert {"k-means (concat)", "k-means (gradient view only)", "CDAL(lam=10)"} <= set(table["method"])
    assert np.isfinite([float(v.split(" ")[0]) for v in table["nmi"]]).all()


def test_groups_part_quick_reports_each_group_count(experiment, tmp_path):
    outcome = run_part(experiment, "groups", quick=True, overrides={"cache_dir": str(tmp_path)})
    assert by_id(outcome) == {}                    # report-only
    notes = outcome.result.notes
    for G in (3, 4):
        assert any(n.startswith(f"{G} groups, CDAL(lam=10) + fair SC output") for n in notes)
        assert any(n.startswith(f"{G} groups, residualise + k-means") for n in notes)
    assert len(list(tmp_path.iterdir())) == 4     # 2 seeds × 2 group counts, resumable
