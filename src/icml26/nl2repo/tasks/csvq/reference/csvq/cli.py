"""The csvq command line."""
import argparse
import sys

from .infer import typed
from .io import CsvqError, Table, dumps, load
from .ops import group_by, limit, select, sort_by, where


def _fmt(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(value)
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(prog="csvq", description="Query a CSV file.")
    parser.add_argument("file")
    parser.add_argument("--where")
    parser.add_argument("--select")
    parser.add_argument("--group-by")
    parser.add_argument("--agg", action="append", default=[])
    parser.add_argument("--sort")
    parser.add_argument("--desc", action="store_true")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args(argv)
    try:
        table = typed(load(args.file))
        if args.where:
            table = where(table, args.where)
        if args.group_by:
            aggs = {}
            for spec in args.agg or ["count=count(*)"]:
                name, sep, fn = spec.partition("=")
                if not sep:
                    raise CsvqError(f"--agg must look like name=fn(column), got {spec!r}")
                aggs[name.strip()] = fn
            table = group_by(table, [k.strip() for k in args.group_by.split(",")], aggs)
        if args.sort:
            table = sort_by(table, args.sort, descending=args.desc)
        if args.select:
            table = select(table, [c.strip() for c in args.select.split(",")])
        if args.limit is not None:
            table = limit(table, args.limit)
    except (CsvqError, OSError) as exc:
        print(f"csvq: error: {exc}", file=sys.stderr)
        return 2
    rows = [{c: _fmt(r[c]) for c in table.columns} for r in table.rows]
    sys.stdout.write(dumps(Table(table.columns, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
