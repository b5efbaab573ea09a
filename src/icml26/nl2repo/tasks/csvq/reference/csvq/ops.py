"""Table operations."""
from .expr import parse_expr
from .infer import typed
from .io import CsvqError, Table

_AGGS = ("count", "sum", "min", "max", "mean")


def where(table, expression):
    expr = parse_expr(expression)
    return Table(table.columns, [r for r in table.rows if expr.evaluate(r) is True])


def select(table, columns):
    for c in columns:
        if c not in table.columns:
            raise CsvqError(f"unknown column {c!r}")
    return Table(columns, [{c: r[c] for c in columns} for r in table.rows])


def sort_by(table, column, descending=False):
    if column not in table.columns:
        raise CsvqError(f"unknown column {column!r}")
    present = [r for r in table.rows if r[column] is not None]
    missing = [r for r in table.rows if r[column] is None]
    return Table(table.columns, sorted(present, key=lambda r: r[column], reverse=descending) + missing)


def limit(table, n):
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise CsvqError(f"limit must be a non-negative integer, got {n!r}")
    return Table(table.columns, table.rows[:n])


def _parse_agg(spec):
    spec = spec.strip()
    if "(" not in spec or not spec.endswith(")"):
        raise CsvqError(f"bad aggregate {spec!r}; expected fn(column)")
    fn, col = spec[:-1].split("(", 1)
    fn, col = fn.strip().lower(), col.strip()
    if fn not in _AGGS:
        raise CsvqError(f"unknown aggregate {fn!r}; known: {', '.join(_AGGS)}")
    return fn, col


def _aggregate(fn, values):
    if fn == "count":
        return len(values)
    values = [v for v in values if v is not None]
    if not values:
        return None
    if fn == "sum":
        return sum(values)
    if fn == "min":
        return min(values)
    if fn == "max":
        return max(values)
    return sum(values) / len(values)


def group_by(table, keys, aggregates):
    keys = [keys] if isinstance(keys, str) else list(keys)
    for k in keys:
        if k not in table.columns:
            raise CsvqError(f"unknown column {k!r}")
    specs = {name: _parse_agg(spec) for name, spec in aggregates.items()}
    for fn, col in specs.values():
        if col != "*" and col not in table.columns:
            raise CsvqError(f"unknown column {col!r}")
        if col == "*" and fn != "count":
            raise CsvqError(f"{fn}(*) is not allowed; only count(*)")
    groups = {}
    for row in table.rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    out = []
    for key, rows in groups.items():
        rec = dict(zip(keys, key))
        for name, (fn, col) in specs.items():
            rec[name] = _aggregate(fn, [1 if col == "*" else r[col] for r in rows])
        out.append(rec)
    return Table(keys + list(specs), out)


_unused = typed
