import pytest

from kvlog.storage import *  # noqa: F401,F403  (upstream style: star import)
from kvlog.storage import CorruptLogError, LogFile


def test_append_and_read(tmp_path):
    log = LogFile(tmp_path / "db.jsonl")
    log.append({"op": "set", "key": "a", "value": 1})
    log.append({"b": [1, 2]})
    assert log.records() == [{"op": "set", "key": "a", "value": 1}, {"b": [1, 2]}]


def test_canonical_line_format(tmp_path):
    path = tmp_path / "db.jsonl"
    LogFile(path).append({"z": 1, "a": "x"})
    assert path.read_text() == '{"a":"x","z":1}\n'


def test_missing_file_has_no_records(tmp_path):
    assert LogFile(tmp_path / "none.jsonl").records() == []


def test_truncated_last_line_is_ignored(tmp_path):
    path = tmp_path / "db.jsonl"
    path.write_text('{"a":1}\n{"b":2}\n{"c":')
    assert LogFile(path).records() == [{"a": 1}, {"b": 2}]


def test_corrupt_middle_line_raises(tmp_path):
    path = tmp_path / "db.jsonl"
    path.write_text('{"a":1}\ngarbage\n{"b":2}\n')
    with pytest.raises(CorruptLogError):
        LogFile(path).records()


def test_repair_drops_torn_tail(tmp_path):
    path = tmp_path / "db.jsonl"
    path.write_text('{"a":1}\n{"b"')
    assert LogFile(path).repair() == 1
    assert path.read_text() == '{"a":1}\n'


def test_rewrite_replaces(tmp_path):
    log = LogFile(tmp_path / "db.jsonl")
    log.append({"a": 1})
    log.rewrite([{"b": 2}])
    assert log.records() == [{"b": 2}]


def test_append_rejects_non_dict(tmp_path):
    with pytest.raises(TypeError):
        LogFile(tmp_path / "db.jsonl").append([1])


def test_size(tmp_path):
    log = LogFile(tmp_path / "db.jsonl")
    log.append({"a": 1})
    assert log.size() == len('{"a":1}\n')
