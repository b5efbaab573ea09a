import dataclasses
import math

import pytest

from icml26.core.experiment import (Claim, ConfigError, Experiment, Part, Result,
                                    apply_overrides, discover, jsonable)
from icml26.core.example import RateConfig, run, summarize


def test_claim_at_least_passes_on_threshold_and_fails_below():
    assert Claim.at_least("x", 0.62, 0.62).passed
    assert not Claim.at_least("x", 0.61, 0.62).passed


def test_claim_never_passes_on_nan_or_missing():
    assert not Claim.at_least("x", float("nan"), 0.0).passed
    assert not Claim.at_most("x", None, 1.0).passed
    assert not Claim.between("x", float("inf"), 0.0, 1.0).passed


def test_claim_bar_text_names_the_threshold():
    assert Claim.at_most("x", 1.0, 1.15).bar == "≤ 1.15"
    assert Claim.between("x", 0.1, 0.08, 0.11).bar == "∈ [0.08, 0.11]"


def test_overrides_parse_types_from_the_dataclass():
    cfg = apply_overrides(RateConfig(), {"repetitions": "7", "sizes": "5,6",
                                         "include_failing_claim": "true"})
    assert cfg.repetitions == 7 and cfg.sizes == (5, 6) and cfg.include_failing_claim is True


def test_overrides_reject_unknown_key_naming_it():
    with pytest.raises(ConfigError, match="nope"):
        apply_overrides(RateConfig(), {"nope": "1"})


def test_overrides_reject_bad_value_naming_key():
    with pytest.raises(ConfigError, match="repetitions"):
        apply_overrides(RateConfig(), {"repetitions": "many"})


def test_part_requires_dataclass_configs():
    with pytest.raises(TypeError, match="quick"):
        Part(name="p", run=run, summarize=summarize, quick={"a": 1}, full=RateConfig())


def test_experiment_rejects_duplicate_part_names():
    part = Part(name="p", run=run, summarize=summarize, quick=RateConfig(), full=RateConfig())
    with pytest.raises(ValueError, match="duplicate"):
        Experiment(slug="s", title="t", parts=[part, part])


def test_unknown_part_is_a_config_error(example):
    with pytest.raises(ConfigError, match="no part"):
        example.part("E9")


def test_discovery_finds_no_example_but_returns_dict():
    found = discover()
    assert isinstance(found, dict)
    assert all(isinstance(e, Experiment) for e in found.values())


def test_jsonable_converts_numpy_and_non_finite():
    import numpy as np

    out = jsonable({"a": np.float32(1.5), "b": np.arange(2), "c": float("nan"),
                    "d": RateConfig()})
    assert out["a"] == 1.5 and out["b"] == [0, 1] and out["c"] == "nan"
    assert out["d"]["repetitions"] == 200


def test_discovery_imports_every_method_folder_with_an_experiment(tmp_path, monkeypatch):
    pkg = tmp_path / "fakepkg"
    (pkg / "alpha").mkdir(parents=True)
    (pkg / "beta").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "alpha" / "__init__.py").write_text("")
    (pkg / "beta" / "__init__.py").write_text("")  # no experiment.py: not a method yet
    (pkg / "alpha" / "experiment.py").write_text(
        "from icml26.core.example import EXPERIMENT\n"
        "from icml26.core.experiment import Experiment, register\n"
        "register(Experiment(slug='alpha', title='A', parts=EXPERIMENT.parts))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from icml26.core import experiment as registry_module

    try:
        found = discover("fakepkg")
        assert "alpha" in found and "beta" not in found
    finally:
        registry_module._REGISTRY.pop("alpha", None)


def test_discovery_isolates_a_broken_method(tmp_path, monkeypatch):
    from icml26.core.experiment import discovery_errors

    pkg = tmp_path / "brokenpkg"
    (pkg / "gamma").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "gamma" / "__init__.py").write_text("")
    (pkg / "gamma" / "experiment.py").write_text("raise ImportError('missing dependency')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    discover("brokenpkg")
    assert "missing dependency" in discovery_errors()["gamma"]


def test_set_parses_optional_fields_of_both_spellings():
    """``X | None`` (PEP 604) and ``Optional[X]`` fields take a value or none from --set."""
    import dataclasses
    from typing import Optional

    from icml26.core.experiment import apply_overrides

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        a: float | None = None
        b: Optional[int] = 3  # noqa: UP007 - the old spelling on purpose

    c = apply_overrides(Cfg(), {"a": "0.01", "b": "none"})
    assert c.a == 0.01 and c.b is None
    assert apply_overrides(c, {"a": "None"}).a is None
