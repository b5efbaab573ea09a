import pytest

from kvlog.store import KVStore


@pytest.fixture
def path(tmp_path):
    return tmp_path / "db.jsonl"


def test_set_get(path):
    s = KVStore(path)
    s.set("a", {"x": [1, 2]})
    assert s.get("a") == {"x": [1, 2]}
    assert s.get("missing", 7) == 7


def test_overwrite_and_len(path):
    s = KVStore(path)
    s.set("a", 1)
    s.set("a", 2)
    s.set("b", 3)
    assert (s.get("a"), len(s)) == (2, 2)


def test_delete(path):
    s = KVStore(path)
    s.set("a", 1)
    s.delete("a")
    assert "a" not in s


def test_delete_missing_raises(path):
    with pytest.raises(KeyError):
        KVStore(path).delete("nope")


def test_persistence_across_reopen(path):
    s = KVStore(path)
    s.set("b", 2)
    s.set("a", 1)
    s.delete("b")
    assert KVStore(path).items() == [("a", 1)]


def test_keys_sorted(path):
    s = KVStore(path)
    for k in ["c", "a", "b"]:
        s.set(k, k)
    assert s.keys() == ["a", "b", "c"]


def test_compact_removes_dead_records(path):
    s = KVStore(path)
    s.set("a", 1)
    s.set("a", 2)
    s.set("b", 1)
    s.delete("b")
    assert s.compact() == 3
    assert path.read_text() == '{"key":"a","op":"set","value":2}\n'
    assert KVStore(path).items() == [("a", 2)]


def test_recovers_from_truncated_last_line(path):
    s = KVStore(path)
    s.set("a", 1)
    with open(path, "a") as fh:
        fh.write('{"op":"set","key":"b"')
    assert KVStore(path).items() == [("a", 1)]


@pytest.mark.parametrize("key,value,exc", [(1, 1, TypeError), ("", 1, TypeError), ("k", {1, 2}, TypeError)])
def test_set_validation(path, key, value, exc):
    with pytest.raises(exc):
        KVStore(path).set(key, value)
