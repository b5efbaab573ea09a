"""The key-value store."""
import json

from .storage import LogFile


def _check_key(key):
    if not isinstance(key, str) or not key:
        raise TypeError(f"keys must be non-empty str, got {key!r}")


def _check_value(value):
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise TypeError(f"value is not JSON-serialisable: {value!r}") from None


class KVStore:
    def __init__(self, path):
        self.log = LogFile(path)
        self._data = {}
        for rec in self.log.records():
            self._apply(rec)

    def _apply(self, rec):
        op = rec.get("op")
        if op == "set":
            self._data[rec["key"]] = rec["value"]
        elif op == "del":
            self._data.pop(rec["key"], None)
        elif op == "batch":
            for sub in rec["ops"]:
                self._apply(sub)

    def write(self, rec):
        self.log.append(rec)
        self._apply(rec)

    def set(self, key, value):
        _check_key(key)
        _check_value(value)
        self.write({"op": "set", "key": key, "value": value})

    def get(self, key, default=None):
        return self._data.get(key, default)

    def delete(self, key):
        if key not in self._data:
            raise KeyError(key)
        self.write({"op": "del", "key": key})

    def keys(self):
        return sorted(self._data)

    def items(self):
        return [(k, self._data[k]) for k in self.keys()]

    def __contains__(self, key):
        return key in self._data

    def __len__(self):
        return len(self._data)

    def compact(self):
        before = len(self.log.records())
        live = [{"op": "set", "key": k, "value": v} for k, v in self.items()]
        self.log.rewrite(live)
        return before - len(live)
