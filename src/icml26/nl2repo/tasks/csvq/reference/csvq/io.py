"""Tables and CSV reading/writing."""
import csv
import io as _io


class CsvqError(Exception):
    """Base error of csvq."""


class Table:
    def __init__(self, columns, rows):
        self.columns = list(columns)
        self.rows = [dict(r) for r in rows]
        for i, row in enumerate(self.rows):
            if list(row) != self.columns:
                raise CsvqError(f"row {i} keys {list(row)} do not match columns {self.columns}")

    def __len__(self):
        return len(self.rows)

    def column(self, name):
        if name not in self.columns:
            raise CsvqError(f"unknown column {name!r}")
        return [r[name] for r in self.rows]

    def __eq__(self, other):
        return isinstance(other, Table) and (self.columns, self.rows) == (other.columns, other.rows)

    def __repr__(self):
        return f"Table(columns={self.columns!r}, rows={len(self.rows)})"


def loads(text, delimiter=","):
    reader = csv.reader(_io.StringIO(text), delimiter=delimiter)
    lines = [r for r in reader if r]
    if not lines:
        raise CsvqError("empty CSV: a header row is required")
    header = lines[0]
    if len(set(header)) != len(header):
        raise CsvqError(f"duplicate column names in header {header}")
    rows = []
    for n, fields in enumerate(lines[1:], start=2):
        if len(fields) != len(header):
            raise CsvqError(f"line {n} has {len(fields)} fields, expected {len(header)}")
        rows.append(dict(zip(header, fields)))
    return Table(header, rows)


def dumps(table):
    out = _io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.columns)
    for row in table.rows:
        writer.writerow(["" if row[c] is None else row[c] for c in table.columns])
    return out.getvalue()


def load(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as fh:
        return loads(fh.read(), delimiter=delimiter)
