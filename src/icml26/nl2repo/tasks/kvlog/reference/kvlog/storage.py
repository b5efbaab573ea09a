"""Append-only JSON-lines log file."""
import json
import os


class CorruptLogError(Exception):
    """A line before the last one is not a valid record."""


class LogFile:
    def __init__(self, path):
        self.path = os.fspath(path)

    def append(self, record):
        if not isinstance(record, dict):
            raise TypeError(f"record must be a dict, got {type(record).__name__}")
        line = json.dumps(record, sort_keys=True, separators=(",", ":"))
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()

    def records(self):
        if not os.path.exists(self.path):
            return []
        with open(self.path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        out = []
        for i, line in enumerate(lines):
            if not line:
                continue
            last = all(not rest for rest in lines[i + 1:])
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("not an object")
            except ValueError:
                if last:
                    break   # a torn final write: ignored
                raise CorruptLogError(f"{self.path}: line {i + 1} is corrupt") from None
            out.append(rec)
        return out

    def repair(self):
        recs = self.records()
        self.rewrite(recs)
        return len(recs)

    def rewrite(self, records):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
        os.replace(tmp, self.path)

    def size(self):
        return os.path.getsize(self.path) if os.path.exists(self.path) else 0
