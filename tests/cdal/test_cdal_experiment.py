"""Quick configs of every part through the runner: structure, and the claims that hold at quick size."""

import math

import numpy as np
import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("cdal")


def test_part_a_quick_claims(experiment):
    outcome = run_part(experiment, "A", quick=True)
    claims = outcome.claims_by_name()
    # #39 rules: Balance, NMI, a paired NMI gap per unfair baseline (3), a Balance margin per
    # baseline unfair on some seed (k-means and anchor MVC always are), residualise NMI / Balance,
    # HSIC, monotone
    assert 11 <= len(claims) <= 12
    for name in ("A HSIC_lin(Z_c, s): lam=100 / lam=0", "A objective non-increasing in every run"):
        assert claims[name].passed, (name, claims[name].measured)
    assert any("bootstrap 90% interval" in name for name in claims)
    assert any("pre-#39 rules" in note for note in outcome.result.notes)
    table = outcome.result.tables["dominant-anchor change between iteration 1 and the last, per lam"]
    assert list(table["lam"]) == [0.0, 1.0, 10.0, 100.0, 1000.0]
    assert ((table["min"] >= 0) & (table["max"] <= 1)).all()
    assert outcome.result.figures


def test_part_a_old_rules_reachable_by_set(experiment):
    outcome = run_part(experiment, "A", quick=True, overrides={"claim_rule": "mean"})
    claims = outcome.claims_by_name()
    assert len(claims) == 8
    assert {"A CDAL(lam=100) NMI − best unfair baseline", "A CDAL(lam=100) Balance − best unfair baseline",
            "A CDAL(lam=100) NMI − residualise+k-means"} <= set(claims)
    assert any("#39 per-seed rules" in note for note in outcome.result.notes)


def test_part_b_quick_claims(experiment):
    outcome = run_part(experiment, "B", quick=True)
    claims = outcome.claims_by_name()
    assert len(claims) == 4
    for name in ("B anchor MVC (no sensitive anchors) Balance", "B objective non-increasing in every run"):
        assert claims[name].passed, (name, claims[name].measured)


def test_scaling_quick_reports_finite_slope_and_memory(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = outcome.claims_by_name()
    slope = claims["scaling: CDAL fit time log-log slope in n"]
    # wall-clock timing on a shared machine: the verdict is reported, the structure is tested
    assert math.isfinite(slope.measured) and slope.bar == "≤ 1.15"
    memory = next(c for name, c in claims.items() if "peak memory" in name)
    assert 0 < memory.measured < 2.0


def test_tradeoff_quick_is_resumable_from_its_cache(experiment, tmp_path):
    overrides = {"cache_dir": str(tmp_path)}
    first = run_part(experiment, "C", quick=True, overrides=overrides)
    first.claims_by_name()
    stored = sorted(p.name for p in tmp_path.iterdir())
    assert len(stored) == 2 and all(name.endswith(".json") for name in stored)
    second = run_part(experiment, "C", quick=True, overrides=overrides)
    assert [j.metrics for j in second.jobs] == [j.metrics for j in first.jobs]
    assert second.result.figures and any("CDAL Balance by lam" in n for n in second.result.notes)


def test_reverse_digits_quick_runs(experiment):
    outcome = run_part(experiment, "D", quick=True)
    outcome.claims_by_name()
    (table,) = outcome.result.tables.values()
    assert {"k-means (concat)", "k-means (gradient view only)", "CDAL(lam=10)"} <= set(table["method"])
    assert np.isfinite([float(v.split(" ")[0]) for v in table["nmi"]]).all()


def test_groups_part_quick_reports_each_group_count(experiment, tmp_path):
    outcome = run_part(experiment, "groups", quick=True, overrides={"cache_dir": str(tmp_path)})
    assert outcome.claims_by_name() == {}          # report-only
    notes = outcome.result.notes
    for G in (3, 4):
        assert any(n.startswith(f"{G} groups, CDAL(lam=10) + fair SC output") for n in notes)
        assert any(n.startswith(f"{G} groups, residualise + k-means") for n in notes)
    assert len(list(tmp_path.iterdir())) == 4     # 2 seeds × 2 group counts, resumable
