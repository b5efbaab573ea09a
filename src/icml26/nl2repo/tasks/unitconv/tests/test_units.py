import pytest

from unitconv.units import *  # noqa: F401,F403  (upstream style: star import)
from unitconv.units import IncompatibleUnitsError, UnknownUnitError, convert_value, get_unit, units_of


@pytest.mark.parametrize("symbol,dimension,factor", [
    ("km", "length", 1000.0), ("mm", "length", 0.001), ("kg", "mass", 1.0),
    ("h", "time", 3600.0), ("lb", "mass", 0.45359237)])
def test_get_unit_fields(symbol, dimension, factor):
    unit = get_unit(symbol)
    assert (unit.symbol, unit.dimension) == (symbol, dimension)
    assert unit.factor == pytest.approx(factor)


def test_get_unit_unknown_raises():
    with pytest.raises(UnknownUnitError):
        get_unit("parsec")


@pytest.mark.parametrize("value,src,dst,expected", [
    (1, "km", "m", 1000.0), (2.5, "h", "min", 150.0), (12, "in", "ft", 1.0),
    (1, "mi", "km", 1.609344), (100, "C", "F", 212.0), (0, "C", "K", 273.15),
    (32, "F", "C", 0.0), (-40, "F", "C", -40.0)])
def test_convert_value(value, src, dst, expected):
    assert convert_value(value, src, dst) == pytest.approx(expected)


def test_convert_value_incompatible():
    with pytest.raises(IncompatibleUnitsError):
        convert_value(1, "kg", "m")


def test_units_of_time_sorted():
    assert units_of("time") == ["d", "h", "min", "ms", "s"]


def test_units_of_unknown_dimension_is_empty():
    assert units_of("luminosity") == []
