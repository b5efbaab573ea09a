"""unitconv: physical quantities with unit conversion."""
from .units import Unit, get_unit, convert_value, units_of, UnknownUnitError, IncompatibleUnitsError
from .quantity import Quantity
from .parse import parse_quantity, parse_many, total, ParseError
