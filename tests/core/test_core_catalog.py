"""The method catalogue read by ``icml26 list`` from the claim tables, without importing methods."""

import sys

from icml26.core import catalog
from icml26.core.claims import TABLE_FILE

TABLE = '''title = "Alpha"
headline = "main/gain"
summary = ["alpha beats beta"]

[parts.main]
description = "a toy"

[parts.extra]
default = false

[[claim]]
id = "main/gain"
name = "gain"
bar = [">=", 0.1]
'''


def _fake_package(tmp_path, name="catpkg"):
    pkg = tmp_path / name
    for slug in ("alpha", "beta", "notyet"):
        (pkg / slug).mkdir(parents=True)
        (pkg / slug / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "alpha" / "experiment.py").write_text("raise ImportError('never imported')\n")
    (pkg / "alpha" / TABLE_FILE).write_text(TABLE)
    (pkg / "beta" / "experiment.py").write_text("")   # a method folder without a table
    return pkg                                         # notyet: no experiment.py, not a method


def test_every_method_folder_has_a_table_and_an_entry():
    entries = catalog.catalogue()
    assert set(entries) == set(catalog.method_folders()) == set(catalog.PAPERS)
    for slug, entry in entries.items():
        assert "error" not in entry, f"{slug}: {entry.get('error')}"
        assert entry["source"] == "table" and entry["parts"] and entry["title"]
        assert entry["ledger"]["current"] is not False, f"{slug}: {entry['ledger']['reasons']}"


def test_entries_are_read_from_the_tables_without_importing(tmp_path):
    pkg = _fake_package(tmp_path)
    before = set(sys.modules)
    got = catalog.catalogue(pkg, package=pkg.name)
    assert not {m for m in set(sys.modules) - before if m.startswith(pkg.name)}
    assert list(got) == ["alpha", "beta"]
    alpha = got["alpha"]
    assert (alpha["title"], alpha["headline"], alpha["claims"]) == ("Alpha", "main/gain", ["alpha beats beta"])
    assert alpha["parts"] == [{"name": "main", "default": True, "description": "a toy"},
                              {"name": "extra", "default": False, "description": ""}]
    assert "no claims.toml" in got["beta"]["error"]


def test_a_broken_table_is_listed_with_its_error(tmp_path):
    pkg = _fake_package(tmp_path)
    (pkg / "alpha" / TABLE_FILE).write_text(TABLE.replace('[">=", 0.1]', '["~", 0.1]'))
    assert "bar must be" in catalog.catalogue(pkg, package=pkg.name)["alpha"]["error"]
