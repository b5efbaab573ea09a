"""Unit table and scalar conversion."""
from dataclasses import dataclass


class UnknownUnitError(ValueError):
    """A unit symbol that is not in the table."""


class IncompatibleUnitsError(ValueError):
    """Two units of different dimensions."""


@dataclass(frozen=True)
class Unit:
    symbol: str
    dimension: str
    factor: float
    offset: float = 0.0

    def to_si(self, value):
        return (value + self.offset) * self.factor

    def from_si(self, value):
        return value / self.factor - self.offset


_TABLE = [
    Unit("mm", "length", 0.001), Unit("cm", "length", 0.01), Unit("m", "length", 1.0),
    Unit("km", "length", 1000.0), Unit("in", "length", 0.0254), Unit("ft", "length", 0.3048),
    Unit("mi", "length", 1609.344),
    Unit("mg", "mass", 1e-6), Unit("g", "mass", 0.001), Unit("kg", "mass", 1.0),
    Unit("lb", "mass", 0.45359237),
    Unit("ms", "time", 0.001), Unit("s", "time", 1.0), Unit("min", "time", 60.0),
    Unit("h", "time", 3600.0), Unit("d", "time", 86400.0),
    Unit("K", "temperature", 1.0), Unit("C", "temperature", 1.0, 273.15),
    Unit("F", "temperature", 5.0 / 9.0, 459.67),
]
_BY_SYMBOL = {u.symbol: u for u in _TABLE}


def get_unit(symbol):
    try:
        return _BY_SYMBOL[symbol]
    except (KeyError, TypeError):
        raise UnknownUnitError(f"unknown unit {symbol!r}") from None


def convert_value(value, from_unit, to_unit):
    src, dst = get_unit(from_unit), get_unit(to_unit)
    if src.dimension != dst.dimension:
        raise IncompatibleUnitsError(f"cannot convert {src.dimension} ({from_unit}) to "
                                     f"{dst.dimension} ({to_unit})")
    return dst.from_si(src.to_si(value))


def units_of(dimension):
    return sorted(u.symbol for u in _TABLE if u.dimension == dimension)
