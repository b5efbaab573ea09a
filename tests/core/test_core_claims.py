"""Claims as data: the table parser, the verdict rules, and the core building claims."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from icml26.core.claims import Bar, Measurement, TableError, evaluate, parse_table
from icml26.core.experiment import Claim, Experiment, Part, Result
from icml26.core.runner import run_experiment


def _table(claims, parts=None, **top):
    data = {"title": "Toy", "parts": parts or {"main": {"description": "a toy part"}},
            "claim": claims, **top}
    return parse_table(data, slug="toy", source="toy/claims.toml")


def _one(**entry):
    base = {"id": "main/gain", "name": "gain", "paper": "> 0", "bar": [">=", 0.1]}
    return _table([{**base, **entry}])


def _verdict(table, measurements):
    return [c.verdict for c in evaluate(table.for_part("main"), measurements)]


# -- bars ---------------------------------------------------------------------------

@pytest.mark.parametrize("bar, value, ok", [
    ([">=", 0.5], 0.5, True), ([">=", 0.5], 0.49, False), (["<=", 0.5], 0.5, True),
    (["<=", 0.5], 0.51, False), (["between", 0, 1], 1.0, True), (["between", 0, 1], -0.01, False),
    ([">=", 0.5], float("nan"), False), ([">=", 0.5], None, False), ([">=", 0.5], "text", False)])
def test_bar_holds_matches_direct_comparison(bar, value, ok):
    assert Bar.parse(bar, "t").holds(value) is ok


def test_true_bar_passes_only_on_true_and_needs_text():
    bar = Bar.parse(["true"], "t", text="both arms agree")
    assert bar.holds(True) and not bar.holds(1) and not bar.holds("True")
    assert str(bar) == "both arms agree"
    with pytest.raises(TableError, match="bar_text"):
        Bar.parse(["true"], "t")


@pytest.mark.parametrize("interval, verdict", [
    ((0.2, 0.4), "PASS"), ((0.05, 0.4), "INCONCLUSIVE"), ((-0.3, 0.05), "FAIL"),
    ((0.1, 0.1), "PASS")])
def test_interval_verdict_at_least(interval, verdict):
    assert Bar.parse([">=", 0.1], "t").interval_verdict(*interval) == verdict


@pytest.mark.parametrize("interval, verdict", [
    ((-0.4, -0.2), "PASS"), ((-0.4, 0.2), "INCONCLUSIVE"), ((0.01, 0.3), "FAIL")])
def test_interval_verdict_at_most(interval, verdict):
    assert Bar.parse(["<=", 0.0], "t").interval_verdict(*interval) == verdict


def test_interval_verdict_between():
    bar = Bar.parse(["between", 0.9, 1.1], "t")
    assert bar.interval_verdict(0.95, 1.05) == "PASS"
    assert bar.interval_verdict(0.8, 1.0) == "INCONCLUSIVE"
    assert bar.interval_verdict(1.2, 1.3) == "FAIL"


def test_bar_text_matches_the_legacy_constructors():
    assert str(Bar.parse([">=", 0.62], "t")) == Claim.at_least("x", 1, 0.62).bar
    assert str(Bar.parse(["<=", 1e-6], "t")) == Claim.at_most("x", 1, 1e-6).bar
    assert str(Bar.parse(["between", 0.98, 1.02], "t")) == Claim.between("x", 1, 0.98, 1.02).bar


# -- parsing --------------------------------------------------------------------------

@pytest.mark.parametrize("entry, message", [
    ({"bar": [">", 1]}, "bar must be"), ({"bar": [">=", "a"]}, "finite number"),
    ({"bar": ["between", 2, 1]}, "low > high"), ({"kind": "vibe"}, "kind must be"),
    ({"id": "nopart"}, "id must be"), ({"id": "other/gain"}, "id must be"),
    ({"colour": "red"}, "unknown key"), ({"requires": ["main/later"]}, "not an earlier claim"),
    ({"negative_control": "main/x"}, "no '/'"), ({"quick": "yes"}, "quick must be"),
    ({"alt": {"spec": [">=", "x"]}}, "alt.spec"),
    ({"kind": "check", "known_negative": "why"}, "known_negative is for paper claims")])
def test_bad_tables_are_refused_naming_the_entry(entry, message):
    with pytest.raises(TableError, match=message) as info:
        _one(**entry)
    assert "toy/claims.toml" in str(info.value)


def test_repeated_ids_names_and_bad_headline_are_refused():
    c = {"id": "main/gain", "name": "gain", "paper": "", "bar": [">=", 0]}
    with pytest.raises(TableError, match="repeated id"):
        _table([c, c])
    with pytest.raises(TableError, match="used twice"):
        _table([c, {**c, "id": "main/other"}])
    with pytest.raises(TableError, match="not a claim id"):
        _table([c], headline="main/nothing")
    with pytest.raises(TableError, match="must be a paper claim"):
        _table([{**c, "kind": "check"}], headline="main/gain")


def test_parts_must_be_declared():
    with pytest.raises(TableError, match="parts"):
        parse_table({"title": "t", "claim": []}, slug="toy")


# -- verdicts --------------------------------------------------------------------------

def test_point_verdicts_and_measured_value_kept():
    claims = evaluate(_one().for_part("main"), {"gain": 0.3})
    assert claims[0].verdict == "PASS" and claims[0].measured == 0.3
    assert claims[0].id == "main/gain" and claims[0].kind == "paper"
    assert _verdict(_one(), {"gain": 0.05}) == ["FAIL"]
    assert _verdict(_one(), {"gain": float("inf")}) == ["FAIL"]  # not finite: never passes
    assert _verdict(_one(), {"gain": float("nan")}) == ["FAIL"]


def test_missing_measurement_is_incomplete_not_fail():
    claims = evaluate(_one().for_part("main"), {})
    assert claims[0].verdict == "INCOMPLETE" and "not measured" in claims[0].note


def test_negative_control_that_meets_the_bar_makes_a_pass_not_earned():
    table = _one(negative_control="gain_random")
    assert _verdict(table, {"gain": 0.3, "gain_random": 0.0}) == ["PASS"]
    claim = evaluate(table.for_part("main"), {"gain": 0.3, "gain_random": 0.2})[0]
    assert claim.verdict == "NOT EARNED" and not claim.passed
    assert claim.control == {"key": "gain_random", "measured": 0.2, "interval": None,
                             "meets_bar": True, "verdict": "PASS"}
    assert "negative control" in claim.note
    # a failing method stays FAIL whatever the control does
    assert _verdict(table, {"gain": 0.0, "gain_random": 0.2}) == ["FAIL"]
    # a control that was not measured cannot certify a pass
    assert _verdict(table, {"gain": 0.3}) == ["INCOMPLETE"]


def test_negative_control_with_an_interval_is_judged_by_the_interval():
    table = _one(negative_control="gain_random")  # bar: gain >= 0.1
    def run(lo, hi, point):
        ctrl = Measurement(point, interval=(lo, hi))
        return evaluate(table.for_part("main"), {"gain": 0.3, "gain_random": ctrl})[0]
    # the whole interval on the wrong side: the stand-in fails the bar, the pass stands
    assert run(-0.1, 0.05, 0.0).verdict == "PASS"
    # straddling: a point below the bar no longer certifies the pass ...
    claim = run(-0.05, 0.15, 0.05)
    assert claim.verdict == "INCONCLUSIVE" and "straddles" in claim.note
    assert claim.control["verdict"] == "INCONCLUSIVE" and claim.control["interval"] == (-0.05, 0.15)
    # ... and a point above it no longer proves the claim unearned
    assert run(0.0, 0.3, 0.12).verdict == "INCONCLUSIVE"
    # the whole interval meets the bar: not earned
    assert run(0.12, 0.3, 0.2).verdict == "NOT EARNED"
    # a failing method stays FAIL whatever the control's interval
    claim = evaluate(table.for_part("main"), {"gain": 0.0,
                                              "gain_random": Measurement(0.05, interval=(0.0, 0.2))})[0]
    assert claim.verdict == "FAIL"


def test_interval_measurement_gives_three_way_verdicts():
    table = _one()
    assert _verdict(table, {"gain": Measurement(0.3, interval=(0.2, 0.4))}) == ["PASS"]
    assert _verdict(table, {"gain": Measurement(0.3, interval=(0.0, 0.6))}) == ["INCONCLUSIVE"]
    assert _verdict(table, {"gain": Measurement(0.0, interval=(-0.1, 0.05))}) == ["FAIL"]
    claim = evaluate(table.for_part("main"), {"gain": Measurement(0.3, interval=(0.2, 0.4))})[0]
    assert claim.half_width == pytest.approx(0.1)
    assert claim.measured_text == "0.3 [0.2, 0.4]"


def test_non_finite_interval_is_incomplete():
    claim = evaluate(_one().for_part("main"),
                     {"gain": Measurement(0.3, interval=(float("nan"), 0.4))})[0]
    assert claim.verdict == "INCOMPLETE"


def test_requires_gates_on_an_earlier_claim_of_the_part():
    table = _table([
        {"id": "main/control", "name": "planted effect detected", "bar": [">=", 0.9],
         "kind": "control"},
        {"id": "main/gain", "name": "gain", "bar": [">=", 0.1], "requires": ["main/control"]}])
    assert _verdict(table, {"control": 0.95, "gain": 0.0}) == ["PASS", "FAIL"]
    out = evaluate(table.for_part("main"), {"control": 0.5, "gain": 0.0})
    assert [c.verdict for c in out] == ["FAIL", "INCOMPLETE"]
    assert "precondition not met" in out[1].note and out[1].kind == "paper"
    assert out[0].kind == "control" and not out[0].counts


def test_incomplete_measurement_carries_its_reason():
    claim = evaluate(_one().for_part("main"),
                     {"gain": Measurement(0.5, incomplete="1 of 3 seeds ran")})[0]
    assert claim.verdict == "INCOMPLETE" and "1 of 3 seeds" in claim.note


def test_alternative_bars_are_reported_beside_without_changing_the_verdict():
    table = _one(alt={"spec": [">=", 0.5], "old": [">=", 0.05]})
    claim = evaluate(table.for_part("main"), {"gain": 0.3})[0]
    assert claim.verdict == "PASS"
    assert claim.alt == [{"label": "spec", "bar": "≥ 0.5", "verdict": "FAIL"},
                         {"label": "old", "bar": "≥ 0.05", "verdict": "PASS"}]
    # an alternative bar cannot be judged on a measurement that is missing or incomplete
    for m in ({}, {"gain": Measurement(0.3, incomplete="one seed")}):
        claim = evaluate(table.for_part("main"), m)[0]
        assert [a["verdict"] for a in claim.alt] == ["INCOMPLETE", "INCOMPLETE"]


def test_known_negative_keeps_its_verdict_and_reason():
    claim = evaluate(_one(known_negative="the world lacks X").for_part("main"), {"gain": 0.0})[0]
    assert claim.verdict == "FAIL" and claim.known_negative == "the world lacks X"


def test_no_positive_control_turns_only_a_fail_into_incomplete():
    """Before a FAIL, a positive control: a claim whose table says none can exist reads
    INCOMPLETE with the reason where it would fail; PASS, NOT EARNED and INCONCLUSIVE stand."""
    table = _one(no_positive_control="no model trained here shows it", negative_control="ctrl")
    def claim(gain, ctrl=0.0, interval=None):
        return evaluate(table.for_part("main"), {"gain": Measurement(gain, interval=interval), "ctrl": ctrl})[0]
    fail = claim(0.05)
    assert fail.verdict == "INCOMPLETE" and "no model trained here shows it" in fail.note
    assert fail.measured == 0.05
    assert claim(0.2).verdict == "PASS"
    assert claim(0.2, ctrl=0.3).verdict == "NOT EARNED"
    assert claim(0.1, interval=(0.05, 0.2)).verdict == "INCONCLUSIVE"
    assert claim(0.05, interval=(0.0, 0.08)).verdict == "INCOMPLETE"
    assert _verdict(_one(), {"gain": 0.05}) == ["FAIL"]       # without the field: FAIL


def test_competitor_is_reported():
    claim = evaluate(_one(competitor="gain_topk").for_part("main"),
                     {"gain": 0.3, "gain_topk": 0.35})[0]
    assert claim.verdict == "PASS" and claim.competitor["measured"] == 0.35


def test_legacy_constructors_take_an_interval():
    assert Claim.at_least("x", 0.3, 0.1, interval=(0.0, 0.5)).verdict == "INCONCLUSIVE"
    assert Claim.at_most("x", 0.3, 0.5, interval=(0.2, 0.4)).verdict == "PASS"
    assert Claim.between("x", 2.0, 0, 1, interval=(1.5, 2.5)).verdict == "FAIL"


# -- the runner builds claims from a table ---------------------------------------------

@dataclass(frozen=True)
class _Config:
    effect: float = 0.3


def _run(config, seed):
    return {"gain": config.effect + 0.01 * seed}


def _summarize(jobs, config):
    gains = [j.metrics["gain"] for j in jobs]
    return Result(measurements={"gain": sum(gains) / len(gains), "gain_random": 0.0})


def _experiment(**part_kwargs):
    table = _table([{"id": "main/gain", "name": "mean gain", "paper": "gain > 0",
                     "bar": [">=", 0.1], "negative_control": "gain_random", "quick": True}],
                   parts={"main": {"default": True, "description": "from the table"}},
                   headline="main/gain", summary=["A gain exists."])
    part = Part(name="main", run=_run, summarize=_summarize, quick=_Config(), full=_Config(),
                **part_kwargs)
    return Experiment(slug="toy-table", parts=[part], table=table)


def test_experiment_takes_title_parts_and_headline_from_its_table():
    exp = _experiment()
    assert exp.title == "Toy" and exp.headline == "main/gain" and exp.claims == ["A gain exists."]
    assert exp.parts[0].description == "from the table" and exp.parts[0].default is True


def test_experiment_refuses_a_table_that_disagrees_with_its_parts():
    with pytest.raises(ValueError, match="default/description"):
        _experiment(default=False)
    table = _table([], parts={"other": {}})
    part = Part(name="main", run=_run, summarize=_summarize, quick=_Config(), full=_Config())
    with pytest.raises(ValueError, match="do not match"):
        Experiment(slug="toy-table", parts=[part], table=table)


def test_runner_builds_the_claims_from_the_measurements():
    outcome = run_experiment(_experiment(), quick=True)
    (claim,) = outcome.parts[0].result.claims
    assert claim.name == "mean gain" and claim.verdict == "PASS"
    assert claim.control["measured"] == 0.0 and outcome.passed


def test_every_shipped_claim_table_parses():
    from icml26.core.catalog import method_folders
    from icml26.core.claims import load_table

    for slug in method_folders():
        load_table(slug)  # raises TableError naming the file and entry
