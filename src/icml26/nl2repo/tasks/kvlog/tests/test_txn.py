import pytest

from kvlog.store import KVStore
from kvlog.txn import Transaction, TransactionError, transaction


@pytest.fixture
def store(tmp_path):
    s = KVStore(tmp_path / "db.jsonl")
    s.set("a", 1)
    return s


def test_commit_applies_all(store):
    with transaction(store) as t:
        t.set("b", 2)
        t.delete("a")
    assert store.items() == [("b", 2)]


def test_reads_own_writes(store):
    t = Transaction(store)
    t.set("a", 10)
    assert (t.get("a"), store.get("a")) == (10, 1)
    t.delete("a")
    assert t.get("a", "gone") == "gone"


def test_exception_rolls_back(store):
    with pytest.raises(ZeroDivisionError):
        with transaction(store) as t:
            t.set("b", 2)
            1 / 0
    assert store.items() == [("a", 1)]
    assert t.state == "rolled back"


def test_explicit_rollback_writes_nothing(store):
    size = store.log.size()
    t = transaction(store)
    t.set("z", 1)
    t.rollback()
    assert store.log.size() == size


def test_commit_is_one_record(store):
    before = len(store.log.records())
    with transaction(store) as t:
        t.set("x", 1)
        t.set("y", 2)
    assert len(store.log.records()) == before + 1


def test_commit_returns_op_count(store):
    t = transaction(store)
    t.set("x", 1)
    t.set("y", 2)
    assert t.commit() == 2


def test_batch_survives_reopen(store, tmp_path):
    with transaction(store) as t:
        t.set("b", 2)
    assert KVStore(tmp_path / "db.jsonl").items() == [("a", 1), ("b", 2)]


def test_torn_batch_is_dropped_atomically(store, tmp_path):
    path = tmp_path / "db.jsonl"
    with open(path, "a") as fh:
        fh.write('{"op":"batch","ops":[{"op":"set","key":"b","value":2},{"op":"se')
    assert KVStore(path).items() == [("a", 1)]


def test_finished_transaction_refuses(store):
    t = transaction(store)
    t.commit()
    with pytest.raises(TransactionError):
        t.set("b", 1)


def test_delete_missing_in_txn(store):
    with pytest.raises(KeyError):
        transaction(store).delete("nope")


def test_requires_store():
    with pytest.raises(TypeError):
        Transaction({"a": 1})
