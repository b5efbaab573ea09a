import pytest

from csvq.infer import typed
from csvq.io import CsvqError, loads
from csvq.ops import group_by, limit, select, sort_by, where

T = typed(loads("name,city,age\nann,paris,31\nbob,oslo,25\ncid,paris,\ndee,oslo,40\neve,rome,19\n"))


def test_where():
    assert where(T, "age >= 25 and city = 'oslo'").column("name") == ["bob", "dee"]


def test_where_null_never_matches():
    assert "cid" not in where(T, "age < 100").column("name")


def test_select_order():
    s = select(T, ["age", "name"])
    assert s.columns == ["age", "name"] and s.rows[0] == {"age": 31, "name": "ann"}


def test_select_unknown():
    with pytest.raises(CsvqError):
        select(T, ["zip"])


def test_sort_by_none_last():
    assert sort_by(T, "age").column("name") == ["eve", "bob", "ann", "dee", "cid"]


def test_sort_by_descending():
    assert sort_by(T, "age", descending=True).column("age") == [40, 31, 25, 19, None]


def test_limit():
    assert limit(T, 2).column("name") == ["ann", "bob"]
    with pytest.raises(CsvqError):
        limit(T, -1)


def test_group_by_aggregates():
    g = group_by(T, "city", {"n": "count(*)", "total": "sum(age)", "avg": "mean(age)",
                             "oldest": "max(age)", "youngest": "min(age)"})
    assert g.columns == ["city", "n", "total", "avg", "oldest", "youngest"]
    assert g.rows[0] == {"city": "paris", "n": 2, "total": 31, "avg": 31.0, "oldest": 31, "youngest": 31}
    assert g.rows[1]["avg"] == pytest.approx(32.5)
    assert [r["city"] for r in g.rows] == ["paris", "oslo", "rome"]


@pytest.mark.parametrize("aggs", [{"x": "median(age)"}, {"x": "sum(*)"}, {"x": "sum(zip)"}, {"x": "age"}])
def test_group_by_rejects(aggs):
    with pytest.raises(CsvqError):
        group_by(T, "city", aggs)
