"""Quantity: a value with a unit."""
from .units import IncompatibleUnitsError, convert_value, get_unit


class Quantity:
    def __init__(self, value, unit=None):
        if isinstance(value, str) and unit is None:
            parts = value.split()
            if len(parts) != 2:
                raise ValueError(f"expected 'NUMBER UNIT', got {value!r}")
            value, unit = float(parts[0]), parts[1]
        if unit is None:
            raise ValueError("unit is required")
        get_unit(unit)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"value must be a number, got {value!r}")
        self.value = float(value)
        self.unit = unit

    @property
    def dimension(self):
        return get_unit(self.unit).dimension

    def to(self, unit):
        return Quantity(convert_value(self.value, self.unit, unit), unit)

    def _other_value(self, other):
        if not isinstance(other, Quantity):
            return NotImplemented
        if other.dimension != self.dimension:
            raise IncompatibleUnitsError(f"{self.unit} and {other.unit} are incompatible")
        return convert_value(other.value, other.unit, self.unit)

    def __add__(self, other):
        v = self._other_value(other)
        return NotImplemented if v is NotImplemented else Quantity(self.value + v, self.unit)

    def __sub__(self, other):
        v = self._other_value(other)
        return NotImplemented if v is NotImplemented else Quantity(self.value - v, self.unit)

    def __mul__(self, k):
        if isinstance(k, bool) or not isinstance(k, (int, float)):
            return NotImplemented
        return Quantity(self.value * k, self.unit)

    __rmul__ = __mul__

    def __eq__(self, other):
        if not isinstance(other, Quantity):
            return NotImplemented
        if other.dimension != self.dimension:
            return False
        return abs(self._other_value(other) - self.value) <= 1e-9 * max(1.0, abs(self.value))

    def __lt__(self, other):
        v = self._other_value(other)
        return NotImplemented if v is NotImplemented else self.value < v

    def __hash__(self):
        return hash((self.dimension, round(get_unit(self.unit).to_si(self.value), 9)))

    def __repr__(self):
        return f"Quantity({self.value!r}, {self.unit!r})"

    def __str__(self):
        return f"{self.value:g} {self.unit}"
