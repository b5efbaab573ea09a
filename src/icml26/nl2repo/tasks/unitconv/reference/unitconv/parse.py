"""Lenient parsing of quantities from text."""
import re

from .quantity import Quantity
from .units import UnknownUnitError

_ALIASES = {"meter": "m", "meters": "m", "metre": "m", "metres": "m", "kilometer": "km",
            "kilometers": "km", "gram": "g", "grams": "g", "kilogram": "kg", "kilograms": "kg",
            "second": "s", "seconds": "s", "sec": "s", "minute": "min", "minutes": "min",
            "hour": "h", "hours": "h", "day": "d", "days": "d", "°C": "C", "°F": "F",
            "inch": "in", "inches": "in", "foot": "ft", "feet": "ft", "mile": "mi", "miles": "mi",
            "pound": "lb", "pounds": "lb"}
_PATTERN = re.compile(r"^\s*([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(\S+)\s*$")


class ParseError(ValueError):
    """Text that is not a quantity."""


def parse_quantity(text):
    if not isinstance(text, str):
        raise ParseError(f"expected a string, got {type(text).__name__}")
    m = _PATTERN.match(text)
    if not m:
        raise ParseError(f"cannot parse {text!r} as a quantity")
    number, unit = m.group(1).replace(",", ""), m.group(2)
    unit = _ALIASES.get(unit, _ALIASES.get(unit.lower(), unit))
    try:
        return Quantity(float(number), unit)
    except UnknownUnitError as exc:
        raise ParseError(f"unknown unit in {text!r}") from exc


def parse_many(text, sep=";"):
    return [parse_quantity(part) for part in text.split(sep) if part.strip()]


def total(text, unit=None):
    items = [parse_quantity(p) for p in text.split("+")]
    if not items or any(not p.strip() for p in text.split("+")):
        raise ParseError(f"cannot parse {text!r} as a sum")
    acc = items[0]
    for q in items[1:]:
        acc = acc + q
    return acc.to(unit) if unit is not None else acc
