"""The method catalogue read by ``icml26 list`` without importing methods."""

import json

import pytest

from icml26.core import catalog


def _fake_package(tmp_path, name="catpkg"):
    pkg = tmp_path / name
    (pkg / "alpha").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "alpha" / "__init__.py").write_text("")
    (pkg / "alpha" / "experiment.py").write_text(
        "from icml26.core.example import EXPERIMENT\n"
        "from icml26.core.experiment import Experiment, register\n"
        f"register(Experiment(slug='alpha', title='Alpha {name}', parts=EXPERIMENT.parts,\n"
        "                    claims=['one', 'two']))\n")
    (pkg / "notyet").mkdir()
    (pkg / "notyet" / "__init__.py").write_text("")  # no experiment.py: not a method
    return pkg


@pytest.fixture
def fake(tmp_path, monkeypatch, request):
    from icml26.core import experiment as registry_module

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))
    pkg = _fake_package(tmp_path, f"catpkg_{request.node.name[-12:]}")
    yield pkg
    registry_module._REGISTRY.pop("alpha", None)


def test_shipped_catalogue_is_current():
    """Fails when a method changed or landed since `python -m icml26.core.catalog` ran."""
    stale = catalog.stale_folders()
    assert not stale, (f"catalogue.json is stale for {stale}; "
                       "regenerate it with: python -m icml26.core.catalog")


def test_stale_folder_is_imported_once_then_served_from_the_cache(fake, tmp_path):
    shipped = tmp_path / "catalogue.json"
    shipped.write_text(json.dumps({"methods": []}))
    first = catalog.catalogue(fake, path=shipped, package=fake.name)
    assert list(first) == ["alpha"] and first["alpha"]["source"] == "import"
    assert first["alpha"]["claims"] == ["one", "two"]
    assert first["alpha"]["parts"][0]["name"] == "rate"
    second = catalog.catalogue(fake, path=shipped, package=fake.name)
    assert second["alpha"]["source"] == "cache"


def test_current_entry_is_read_without_import_and_an_edit_makes_it_stale(fake, tmp_path):
    shipped = tmp_path / "catalogue.json"
    entry = {"slug": "alpha", "title": "from the file", "parts": [], "claims": [],
             "hash": catalog.folder_hash(fake / "alpha")}
    shipped.write_text(json.dumps({"methods": [entry]}))
    got = catalog.catalogue(fake, path=shipped, package=fake.name, use_cache=False)
    assert got["alpha"]["title"] == "from the file" and got["alpha"]["source"] == "catalogue"
    assert catalog.stale_folders(fake, shipped) == []
    with open(fake / "alpha" / "experiment.py", "a") as fh:
        fh.write("# edited\n")
    assert catalog.stale_folders(fake, shipped) == ["alpha"]
    again = catalog.catalogue(fake, path=shipped, package=fake.name, use_cache=False)
    assert again["alpha"]["title"] == f"Alpha {fake.name}" and again["alpha"]["source"] == "import"


def test_broken_method_is_listed_with_its_error(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))
    pkg = tmp_path / "brokencat"
    (pkg / "gamma").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "gamma" / "__init__.py").write_text("")
    (pkg / "gamma" / "experiment.py").write_text("raise ImportError('missing dependency')\n")
    got = catalog.catalogue(pkg, path=tmp_path / "none.json", package="brokencat")
    assert "missing dependency" in got["gamma"]["error"]
