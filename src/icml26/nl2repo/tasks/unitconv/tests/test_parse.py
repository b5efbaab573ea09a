import pytest

from unitconv.parse import ParseError, parse_many, parse_quantity, total


@pytest.mark.parametrize("text,value,unit", [
    ("3.5km", 3.5, "km"), ("  12 m ", 12.0, "m"), ("1,200 m", 1200.0, "m"),
    ("-4e3 g", -4000.0, "g"), ("20 °C", 20.0, "C"), ("3 kilometers", 3.0, "km"),
    ("2 Hours", 2.0, "h")])
def test_parse_quantity(text, value, unit):
    q = parse_quantity(text)
    assert (q.value, q.unit) == (value, unit)


@pytest.mark.parametrize("text", ["", "km", "3..5 m", "12 parsecs"])
def test_parse_quantity_rejects(text):
    with pytest.raises(ParseError):
        parse_quantity(text)


def test_parse_error_is_value_error():
    with pytest.raises(ValueError):
        parse_quantity("nonsense")


def test_parse_many_semicolons():
    qs = parse_many("1 km; 200 m;")
    assert [(q.value, q.unit) for q in qs] == [(1.0, "km"), (200.0, "m")]


def test_total_in_unit():
    q = total("1 km + 200 m + 30 m", unit="m")
    assert (q.value, q.unit) == (pytest.approx(1230.0), "m")


def test_total_keeps_first_unit():
    assert total("1 h + 30 min").value == pytest.approx(1.5)


def test_total_rejects_dangling_plus():
    with pytest.raises(ParseError):
        total("1 m +")
