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
