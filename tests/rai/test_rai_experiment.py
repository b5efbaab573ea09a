"""Quick runs of both parts through the runner: structure, the premise print, figures, claims."""

import math

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part

GLYPHSAFE_CLAIMS = {
    "premise_share", "oracle_ratio", "selection_auroc", "rai_asr_ratio", "literal_asr_ratio",
    "dev_selected_asr_ratio", "colour_drop_points", "over_refusal", "random_reduction",
    "alltoken_over_refusal_gap", "dilution_gap", "attack_move", "benign_move", "glyph_overlap",
    "risk_auroc", "oracle_colour_drop", "oracle_over_refusal", "oracle_benign_move"}
UTILITY_CONTROLS = {"oracle_colour_drop", "oracle_over_refusal", "oracle_benign_move"}
GATED = GLYPHSAFE_CLAIMS - {"premise_share", "oracle_ratio", "selection_auroc", "dilution_gap"} - UTILITY_CONTROLS


def _by_key(claims):
    return {c.id.split("/", 1)[1]: c for c in claims}


@pytest.fixture(scope="module")
def experiment():
    return get_experiment("rai")


def test_glyphsafe_quick_run(experiment, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    outcome = run_part(experiment, "glyphsafe", quick=True)
    claims = _by_key(outcome.result.claims)
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
    assert not claims["premise_share"].passed
    assert 0.0 <= claims["glyph_overlap"].measured <= 1.0
    assert 0.0 <= claims["risk_auroc"].measured <= 1.0 and 0.0 <= claims["selection_auroc"].measured <= 1.0
    # every claim that needs a pathway or a selection is INCOMPLETE exactly when a control fails
    controls_pass = claims["oracle_ratio"].passed and claims["selection_auroc"].passed
    assert all((claims[k].verdict == "INCOMPLETE") == (not controls_pass) for k in GATED)
    assert {claims[k].kind for k in ("premise_share", "oracle_ratio", "selection_auroc")} == {"control"}


def test_overhead_quick_run(experiment):
    outcome = run_part(experiment, "overhead", quick=True)
    claims = _by_key(outcome.result.claims)
    assert set(claims) == {"slope_d128", "slope_d1024", "time_vs_prefill"}
    assert claims["slope_d1024"].verdict == "INCOMPLETE"          # quick mode measures d = 128 only
    # wall-clock timings on a shared machine: the verdict is reported, the structure tested
    assert all(math.isfinite(claims[k].measured) for k in ("slope_d128", "time_vs_prefill"))
    assert claims["slope_d128"].bar == "≤ 1.15" and claims["slope_d128"].kind == "check"


def test_strength_rule_and_auroc():
    import numpy as np

    from icml26.rai.experiment import auroc, select_strength

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


def _planted(**over):
    m = {"premise_share": 1.0, "oracle_ratio": 0.2, "selection_auroc": 0.95, "rai_asr_ratio": 0.1,
         "random_asr_ratio": 1.0, "best_baseline_asr_ratio": 0.8, "literal_asr_ratio": 0.3,
         "dev_selected_asr_ratio": 0.2, "colour_drop_points": 0.0, "over_refusal": 0.01,
         "random_reduction": 0.0, "alltoken_over_refusal_gap": 0.5, "dilution_gap": 0.3,
         "attack_move": 0.7, "benign_move": 0.01, "glyph_overlap": 0.9, "risk_auroc": 0.95,
         "oracle_colour_drop": 1.0, "oracle_over_refusal": 0.0, "oracle_benign_move": 0.02}
    return {**m, **over}


def test_controls_gate_every_claim_that_needs_them(experiment):
    """A planted world where both controls pass lets the claims pass; a failing oracle or
    selection control makes each of them INCOMPLETE (not FAIL); random prototypes that halve
    the ASR too make claim 1 NOT EARNED."""
    from icml26.core.claims import evaluate

    specs = experiment.part("glyphsafe").claim_specs
    good = _by_key(evaluate(specs, _planted()))
    assert all(c.verdict == "PASS" for c in good.values()), {k: c.verdict for k, c in good.items()}
    for bad in ({"oracle_ratio": 0.9}, {"selection_auroc": 0.6}):
        c = _by_key(evaluate(specs, _planted(**bad)))
        assert all(c[k].verdict == "INCOMPLETE" and "precondition not met" in c[k].note for k in GATED)
        assert c["dilution_gap"].verdict == "PASS"
    c = _by_key(evaluate(specs, _planted(random_asr_ratio=0.4)))
    assert c["rai_asr_ratio"].verdict == "NOT EARNED"
    # the utility controls gate their own claim only: 2a on the oracle's colour drop, 2b on its over-refusal
    c = _by_key(evaluate(specs, _planted(oracle_colour_drop=4.4, colour_drop_points=29.0, over_refusal=0.5)))
    assert c["colour_drop_points"].verdict == "INCOMPLETE" and c["over_refusal"].verdict == "FAIL"
    c = _by_key(evaluate(specs, _planted(oracle_over_refusal=0.2, colour_drop_points=29.0, over_refusal=0.5)))
    assert c["over_refusal"].verdict == "INCOMPLETE" and c["colour_drop_points"].verdict == "FAIL"
    assert c["rai_asr_ratio"].verdict == "PASS"
    c = _by_key(evaluate(specs, _planted(oracle_benign_move=0.3, benign_move=0.8)))
    assert c["benign_move"].verdict == "INCOMPLETE" and c["over_refusal"].verdict == "PASS"
    # claim 4 has no positive control: a value under its bar reads INCOMPLETE, not FAIL
    c = _by_key(evaluate(specs, _planted(alltoken_over_refusal_gap=-0.06)))
    assert c["alltoken_over_refusal_gap"].verdict == "INCOMPLETE" and "positive control" in c["alltoken_over_refusal_gap"].note


def test_alignment_rule():
    from icml26.rai.experiment import select_alignment

    grid = ({"align_weight": 0.0}, {"align_weight": 1.0}, {"align_weight": 1.0, "align_stages": ("s2", "s3")})

    def row(i, auroc, premise=True, oracle=True, seed=None):
        seed = row.count % 2 if seed is None else seed
        row.count += 1
        return {"seed": seed, "setting": i, "selection_auroc": auroc, "premise_passed": premise,
                "oracle_passed": oracle}

    row.count = 0
    rows = [row(0, 0.6), row(0, 0.5), row(1, 0.9), row(1, 0.86), row(2, 0.99), row(2, 0.99)]
    select = lambda rows, grid: select_alignment(rows, grid, seeds=(0, 1))  # noqa: E731
    assert select(rows, grid) == grid[1]                         # first entry passing on every dev seed
    assert select(rows[:3] + rows[4:], grid) == grid[2]          # an entry measured on one seed only is not eligible
    rows[3] = row(1, 0.8, seed=1)
    assert select(rows, grid) == grid[2]
    rows[4] = row(2, 0.99, premise=False, seed=0)                # the premise must hold on every dev seed
    assert select(rows, grid) == grid[1]                         # best worst-seed AUROC among those keeping it
    rows[2] = row(1, 0.95, oracle=False, seed=0)
    assert select(rows, grid) == grid[1]                         # none passes: 0.8 > 0.5
    assert select([row(1, 0.9, premise=False, seed=0), row(1, 0.9, seed=1)], grid) == grid[0]


def test_the_shipped_alignment_is_what_the_rule_picks_from_the_shipped_dev_rows():
    """The world's alignment setting (GlyphSafeConfig defaults) is select_alignment applied to
    every dev row in ledger/rai/align_dev.jsonl: a new dev row that changes the pick fails here."""
    import json
    from pathlib import Path

    from icml26.rai.experiment import ALIGN_BASE, GlyphSafeExpConfig, select_alignment, world_config

    path = Path(__file__).resolve().parents[2] / "ledger" / "rai" / "align_dev.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
    chosen = select_alignment(rows)
    config = world_config(GlyphSafeExpConfig())
    for key, value in {**ALIGN_BASE, **chosen}.items():   # every knob, not only those the entry names
        assert getattr(config, key) == value, key


def test_align_world_does_not_depend_on_the_shipped_defaults():
    """An ALIGN_GRID entry builds the same world whatever the base's alignment knobs are (they are
    reset to ALIGN_BASE first); a bad index is refused."""
    import dataclasses

    from icml26.rai.experiment import ALIGN_BASE, ALIGN_GRID, align_world
    from icml26.rai.glyphsafe import GlyphSafeConfig

    other = dataclasses.replace(GlyphSafeConfig(), align_weight=9.0, align_stages=("s3",), align_target=0.1,
                                align_center=not GlyphSafeConfig().align_center, s3_projector=False,
                                hybrid_partial_share=0.3, s3_lr_schedule="cosine", s3_grid=(5,))
    for i, entry in enumerate(ALIGN_GRID):
        world = align_world(i, other)
        for key, value in {**ALIGN_BASE, **entry}.items():
            assert getattr(world, key) == value, (i, key)
    for bad in (-1, len(ALIGN_GRID), 1.0):
        with pytest.raises(ValueError, match="index"):
            align_world(bad)


def test_dev_rows_name_the_world_their_entry_builds():
    """Each dev row that records its world (round 5 on) matches align_world(entry) on every
    ALIGN_BASE knob: a grid entry edited after it ran fails here."""
    import json
    from pathlib import Path

    from icml26.rai.experiment import ALIGN_BASE, align_world

    path = Path(__file__).resolve().parents[2] / "ledger" / "rai" / "align_dev.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
    for row in (r for r in rows if "world" in r):
        world = align_world(int(row["setting"]))
        assert set(row["world"]) == set(ALIGN_BASE)
        for key, value in row["world"].items():
            expected = getattr(world, key)
            assert (list(expected) if isinstance(expected, tuple) else expected) == value, (row["setting"], key)
