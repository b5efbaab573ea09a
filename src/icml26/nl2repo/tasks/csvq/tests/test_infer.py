import pytest

from csvq.infer import convert, infer_type, typed
from csvq.io import loads


@pytest.mark.parametrize("values,expected", [
    (["1", "2", ""], "int"), (["1", "2.5"], "float"), (["true", "No"], "bool"),
    (["a", "1"], "str"), (["", ""], "str"), (["-3", "1e3"], "float")])
def test_infer_type(values, expected):
    assert infer_type(values) == expected


@pytest.mark.parametrize("value,type_name,expected", [
    ("7", "int", 7), ("2.5", "float", 2.5), ("Yes", "bool", True), ("no", "bool", False),
    ("x", "str", "x"), ("", "int", None)])
def test_convert(value, type_name, expected):
    assert convert(value, type_name) == expected


def test_convert_unknown_type():
    with pytest.raises(ValueError):
        convert("1", "date")


def test_typed_table():
    t = typed(loads("n,x,f\n1,a,true\n,b,false\n"))
    assert t.rows == [{"n": 1, "x": "a", "f": True}, {"n": None, "x": "b", "f": False}]
