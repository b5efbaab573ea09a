import pytest

from icml26.core.cache import cache_root


def test_cache_root_honours_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    assert cache_root() == tmp_path
    assert cache_root("rai", "models") == tmp_path / "rai" / "models"


def test_cache_root_defaults_to_user_cache(monkeypatch):
    import platformdirs

    monkeypatch.delenv("ICML26_CACHE", raising=False)
    assert str(cache_root()) == platformdirs.user_cache_dir("icml26")


@pytest.mark.parametrize("bad", ["", "..", "a/b", 3])
def test_cache_root_rejects_paths(bad):
    with pytest.raises(ValueError, match="cache_root parts"):
        cache_root(bad)


def test_cached_json_stores_once_and_keys_on_everything(tmp_path):
    from icml26.core.cache import cached_json

    calls = []

    def compute(value):
        def run():
            calls.append(value)
            return {"value": value}
        return run

    assert cached_json(tmp_path, "job", {"seed": 0}, compute(1)) == {"value": 1}
    assert cached_json(tmp_path, "job", {"seed": 0}, compute(2)) == {"value": 1}   # read back
    assert cached_json(tmp_path, "job", {"seed": 1}, compute(3)) == {"value": 3}   # another key
    assert cached_json("", "job", {"seed": 0}, compute(4)) == {"value": 4}         # no folder: no cache
    assert calls == [1, 3, 4]
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".json"]       # no temporary left
