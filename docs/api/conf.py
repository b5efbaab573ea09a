"""Sphinx configuration of the icml26 API reference (built offline: `make docs`).

The per-method pages are generated here from each method package's ``__all__``, so a new
public name appears in the reference without editing any page.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "src"))
os.environ.setdefault("ICML26_CACHE", str(HERE / "_build" / "cache"))

project = "icml26"
author = "the icml26 developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon",
              "sphinx.ext.mathjax", "sphinx.ext.viewcode"]
autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "description"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
html_theme = "alabaster"
exclude_patterns = ["_build"]
suppress_warnings = ["autosummary.import_cycle"]


def _method_pages() -> list[str]:
    from icml26.core.catalog import method_folders

    pages = []
    out = HERE / "methods"
    out.mkdir(exist_ok=True)
    for slug in [*method_folders(), "zoo"]:
        module = importlib.import_module(f"icml26.{slug}")
        names = sorted(getattr(module, "__all__", []))
        title = f"icml26.{slug}"
        lines = [title, "=" * len(title), "", f".. automodule:: icml26.{slug}", "   :no-members:",
                 "", ".. autosummary::", "   :toctree: generated", ""]
        lines += [f"   icml26.{slug}.{name}" for name in names]
        (out / f"{slug}.rst").write_text("\n".join(lines) + "\n", encoding="utf-8")
        pages.append(f"methods/{slug}")
    return pages


_PAGES = _method_pages()
(HERE / "methods.rst").write_text(
    "Methods\n=======\n\n.. toctree::\n   :maxdepth: 1\n\n"
    + "".join(f"   {p}\n" for p in _PAGES), encoding="utf-8")


def _skip_sklearn_plumbing(app, what, name, obj, skip, options):
    """scikit-learn's generated metadata-routing setters are not our API."""
    if name == "set_output" or (name.startswith("set_") and name.endswith("_request")):
        return True
    if str(getattr(obj, "__module__", "") or "").startswith("sklearn."):
        return True  # inherited mixin methods (score, get_params, ...) are sklearn's to document
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_sklearn_plumbing)
