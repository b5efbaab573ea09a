"""Quick runs of every part through the runner: structure, finiteness, and the quick-meaningful claims."""

import math

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("pointchr")


def test_part_a_quick_produces_all_claims_tables_and_figures(experiment):
    outcome = run_part(experiment, "A", quick=True)
    claims = outcome.claims_by_name()
    assert len(claims) == 5
    assert any(name.startswith("FineDetail-8 (i)") for name in claims)
    assert all(math.isfinite(c.measured) for c in claims.values())
    # the mechanism holds from the first epochs: the gate is monotone in κ at initialisation
    spearman = next(c for n, c in claims.items() if "Spearman" in n)
    assert spearman.passed, spearman.measured
    assert set(outcome.result.figures) == {"FineDetail-8 OA per variant", "test cloud: κ and rectified radius"}
    assert "test OA (%) per seed" in outcome.result.tables


def test_part_b_quick_all_properties_pass(experiment):
    outcome = run_part(experiment, "B", quick=True)
    for claim in outcome.claims_by_name().values():
        assert claim.passed, (claim.name, claim.measured)


def test_scaling_quick_reports_finite_slopes(experiment):
    outcome = run_part(experiment, "scaling", quick=True)
    claims = outcome.claims_by_name()
    assert len(claims) == 4 and all(math.isfinite(c.measured) for c in claims.values())
    assert {c.bar for c in claims.values()} == {"≤ 1.15", "≤ 2.15", "≤ 1.3"}


def test_coarse_and_full_quick_run(experiment):
    coarse = run_part(experiment, "coarse", quick=True).claims_by_name()
    assert [n for n in coarse if "Coarse-4 (iv)" in n]
    full = run_part(experiment, "full", quick=True)
    names = full.claims_by_name()
    assert len(names) == 6
    assert any("DGCNN-lite + CHR" in note for note in full.result.notes)


def test_backbones_quick_reports_dgcnn_and_hycore(experiment):
    outcome = run_part(experiment, "backbones", quick=True)
    assert len(outcome.claims_by_name()) == 5
    notes = " ".join(outcome.result.notes)
    assert "DGCNN-lite + CHR − DGCNN-lite" in notes and "HyCoRe-lite" in notes


def test_defaults_and_opt_in_parts(experiment):
    assert [p.name for p in experiment.select()] == ["A", "B", "scaling"]
    assert not any(experiment.part(p).default for p in ("full", "coarse", "backbones"))
    assert experiment.part("full").full.cache_dir and len(experiment.part("full").seeds) == 5
