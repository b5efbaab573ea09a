"""csvq: query CSV files with where-expressions and group-by aggregates."""
from .io import Table, CsvqError, loads, dumps, load
from .infer import infer_type, convert, typed
from .expr import parse_expr, ExprError
from .ops import where, select, sort_by, group_by, limit
from .cli import main
