"""Column type inference."""
from .io import Table

_TRUE, _FALSE = {"true", "yes"}, {"false", "no"}


def _is_int(v):
    try:
        int(v)
        return True
    except ValueError:
        return False


def _is_float(v):
    try:
        float(v)
        return True
    except ValueError:
        return False


def infer_type(values):
    present = [v for v in values if v != ""]
    if not present:
        return "str"
    if all(_is_int(v) for v in present):
        return "int"
    if all(_is_float(v) for v in present):
        return "float"
    if all(v.lower() in _TRUE | _FALSE for v in present):
        return "bool"
    return "str"


def convert(value, type_name):
    if value == "" or value is None:
        return None
    if type_name == "int":
        return int(value)
    if type_name == "float":
        return float(value)
    if type_name == "bool":
        return value.lower() in _TRUE
    if type_name == "str":
        return value
    raise ValueError(f"unknown type {type_name!r}")


def typed(table):
    types = {c: infer_type(table.column(c)) for c in table.columns}
    rows = [{c: convert(r[c], types[c]) for c in table.columns} for r in table.rows]
    return Table(table.columns, rows)
