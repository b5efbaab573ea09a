"""Transactions: buffered writes committed as one atomic batch record."""
from .store import KVStore, _check_key, _check_value

_MISSING = object()


class TransactionError(Exception):
    """Use of a finished transaction."""


class Transaction:
    def __init__(self, store):
        if not isinstance(store, KVStore):
            raise TypeError("store must be a KVStore")
        self.store = store
        self._ops = []
        self._view = {}
        self.state = "open"

    def _check_open(self):
        if self.state != "open":
            raise TransactionError(f"transaction already {self.state}")

    def set(self, key, value):
        self._check_open()
        _check_key(key)
        _check_value(value)
        self._ops.append({"op": "set", "key": key, "value": value})
        self._view[key] = value

    def delete(self, key):
        self._check_open()
        if self.get(key, _MISSING) is _MISSING:
            raise KeyError(key)
        self._ops.append({"op": "del", "key": key})
        self._view[key] = _MISSING

    def get(self, key, default=None):
        if key in self._view:
            value = self._view[key]
            return default if value is _MISSING else value
        return self.store.get(key, default)

    def commit(self):
        self._check_open()
        if self._ops:
            self.store.write({"op": "batch", "ops": self._ops})
        self.state = "committed"
        return len(self._ops)

    def rollback(self):
        self._check_open()
        self._ops, self._view = [], {}
        self.state = "rolled back"

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.state != "open":
            return False
        if exc_type is None:
            self.commit()
        else:
            self.rollback()
        return False


def transaction(store):
    return Transaction(store)
