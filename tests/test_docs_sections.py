"""Every class a method package exports has numpydoc ``Examples`` and ``References`` sections.

``Examples`` holds a short doctest of the typical use (run by ``--doctest-modules``);
``References`` names the paper the class implements or comes from (the package's ICML 2026
paper, a baseline's original paper, or the convention a container/exception follows).

A method package is a folder of ``src/icml26`` with an ``experiment.py`` (as
``icml26.core.experiment`` discovers them). ``PENDING`` lists the classes that lacked a
section when this test was written; it may only shrink.
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

# Classes of packages whose documentation was being rewritten by other engineers when this test
# was added; each lacked the section(s) named in its comment. Remove an entry once its class has
# both sections (test_pending_is_not_stale fails until you do); never add one.
PENDING = {
    # pointchr
    "pointchr.CurvatureHyperbolicRectifier",  # References
    "pointchr.CHR",                  # References
    "pointchr.PoincareOps",          # References
    "pointchr.PointNetLite",         # References
    "pointchr.DGCNNLite",            # References
    "pointchr.PointNet2Lite",        # References
    "pointchr.HyCoReLite",           # References
    "pointchr.EdgeConv",             # Examples, References
    "pointchr.PointCloudSet",        # Examples, References
}


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
    lacking = {key: missing_sections(cls) for key, cls in exported_classes(slug).items()
               if key not in PENDING}
    lacking = {key: miss for key, miss in lacking.items() if miss}
    assert not lacking, (f"exported classes of icml26.{slug} without a numpydoc section "
                         f"(add it to the class docstring): {lacking}")


@pytest.mark.parametrize("slug", sorted({key.split(".")[0] for key in PENDING}))
def test_pending_is_not_stale(slug):
    classes = exported_classes(slug)
    pending = sorted(key for key in PENDING if key.startswith(f"{slug}."))
    gone = [key for key in pending if key not in classes]
    done = [key for key in pending if key in classes and not missing_sections(classes[key])]
    assert not gone and not done, (f"remove from PENDING in {Path(__file__).name}: "
                                   f"documented now {done}, no longer exported {gone}")


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
