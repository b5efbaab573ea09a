"""kvlog: a JSON-lines key-value store with compaction and transactions."""
from .storage import LogFile, CorruptLogError
from .store import KVStore
from .txn import Transaction, transaction, TransactionError
