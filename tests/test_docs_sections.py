"""Every class a method package exports has numpydoc ``Examples`` and ``References`` sections.

``Examples`` holds a short doctest of the typical use (run by ``--doctest-modules``);
``References`` names the paper the class implements or comes from (the package's ICML 2026
paper, a baseline's original paper, or the convention a container/exception follows).

A method package is a folder of ``src/icml26`` with an ``experiment.py`` (as
``icml26.core.experiment`` discovers them). Every exported class of all nineteen has both.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

SECTIONS = ("Examples", "References")
PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "src" / "icml26"
METHODS = sorted(p.name for p in PACKAGE_ROOT.iterdir()
                 if p.is_dir() and p.name not in {"core", "zoo"} and (p / "experiment.py").is_file())

def missing_sections(obj) -> list[str]:
    """The numpydoc sections (as headers underlined with dashes) the docstring lacks."""
    lines = [line.strip() for line in (inspect.getdoc(obj) or "").splitlines()]
    present = {lines[i] for i in range(len(lines) - 1)
               if lines[i] in SECTIONS and set(lines[i + 1]) == {"-"}}
    return [s for s in SECTIONS if s not in present]


def exported_classes(slug: str) -> dict[str, type]:
    module = importlib.import_module(f"icml26.{slug}")
    return {f"{slug}.{name}": getattr(module, name) for name in getattr(module, "__all__", ())
            if inspect.isclass(getattr(module, name))}


def test_method_packages_found():
    assert {"fsba", "pem", "rai"} <= set(METHODS)


@pytest.mark.parametrize("slug", METHODS)
def test_exported_classes_have_examples_and_references(slug):
    lacking = {key: missing_sections(cls) for key, cls in exported_classes(slug).items()}
    lacking = {key: miss for key, miss in lacking.items() if miss}
    assert not lacking, (f"exported classes of icml26.{slug} without a numpydoc section "
                         f"(add it to the class docstring): {lacking}")


def test_missing_sections_reads_headers_only():
    class Documented:
        """Summary.

        References
        ----------
        A paper.

        Examples
        --------
        >>> 1
        1
        """

    class Mentions:
        """See the Examples and References of another class."""

    assert missing_sections(Documented) == []
    assert missing_sections(Mentions) == ["Examples", "References"]
