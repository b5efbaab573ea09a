import pytest

from unitconv.quantity import Quantity
from unitconv.units import IncompatibleUnitsError, UnknownUnitError


def test_from_string_and_to():
    q = Quantity("3.5 km").to("m")
    assert (q.value, q.unit) == (3500.0, "m")


def test_affine_temperature():
    assert Quantity(25, "C").to("F").value == pytest.approx(77.0)


def test_add_converts_to_left_unit():
    q = Quantity(1, "km") + Quantity(250, "m")
    assert (q.unit, q.value) == ("km", pytest.approx(1.25))


def test_sub():
    q = Quantity(2, "h") - Quantity(30, "min")
    assert q.value == pytest.approx(1.5)


def test_add_incompatible_raises():
    with pytest.raises(IncompatibleUnitsError):
        Quantity(1, "kg") + Quantity(1, "m")


def test_scalar_multiplication_both_sides():
    assert (Quantity(2, "m") * 3).value == 6.0
    assert (3 * Quantity(2, "m")).value == 6.0


def test_equality_across_units():
    assert Quantity(1, "km") == Quantity(1000, "m")
    assert Quantity(1, "km") != Quantity(1, "m")


def test_ordering():
    assert Quantity(59, "min") < Quantity(1, "h")
    assert sorted([Quantity(2, "m"), Quantity(1, "km"), Quantity(3, "cm")])[0] == Quantity(3, "cm")


def test_repr_and_str():
    q = Quantity(3.5, "km")
    assert repr(q) == "Quantity(3.5, 'km')"
    assert str(q) == "3.5 km"


def test_dimension_property():
    assert Quantity(1, "lb").dimension == "mass"


def test_unknown_unit_raises():
    with pytest.raises(UnknownUnitError):
        Quantity(1, "furlong")


def test_bad_string_raises_value_error():
    with pytest.raises(ValueError):
        Quantity("three km")


def test_non_number_value_raises_type_error():
    with pytest.raises(TypeError):
        Quantity([1], "m")
