import pytest

from csvq.io import *  # noqa: F401,F403  (upstream style: star import)
from csvq.io import CsvqError, Table, dumps, load, loads

CSV = "name,city,age\nann,paris,31\nbob,oslo,\n"


def test_loads_columns_and_rows():
    t = loads(CSV)
    assert t.columns == ["name", "city", "age"]
    assert t.rows[1] == {"name": "bob", "city": "oslo", "age": ""}
    assert len(t) == 2


def test_loads_quoted_field():
    t = loads('a,b\n"x, y",2\n')
    assert t.column("a") == ["x, y"]


def test_loads_delimiter():
    assert loads("a;b\n1;2\n", delimiter=";").rows == [{"a": "1", "b": "2"}]


def test_loads_skips_blank_lines():
    assert len(loads("a\n1\n\n2\n")) == 2


@pytest.mark.parametrize("text", ["", "a,b\n1,2,3\n", "a,a\n1,2\n"])
def test_loads_rejects(text):
    with pytest.raises(CsvqError):
        loads(text)


def test_dumps_roundtrip_and_none():
    t = Table(["a", "b"], [{"a": "1", "b": None}])
    assert dumps(t) == "a,b\n1,\n"
    assert loads(dumps(loads(CSV))) == loads(CSV)


def test_column_unknown_raises():
    with pytest.raises(CsvqError):
        loads(CSV).column("zip")


def test_load_file(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text(CSV)
    assert load(path).column("name") == ["ann", "bob"]


def test_table_rejects_mismatched_rows():
    with pytest.raises(CsvqError):
        Table(["a"], [{"b": 1}])
