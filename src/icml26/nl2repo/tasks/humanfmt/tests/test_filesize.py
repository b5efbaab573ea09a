import pytest

from humanfmt.filesize import naturalsize, parse_size


@pytest.mark.parametrize("value,kwargs,expected", [
    (1, {}, "1 Byte"), (300, {}, "300 Bytes"), (3000, {}, "3.0 kB"), (3_000_000, {}, "3.0 MB"),
    (10**12, {}, "1.0 TB"), (3000, {"binary": True}, "2.9 KiB"), (3000, {"gnu": True}, "2.9K"),
    (1, {"gnu": True}, "1B"), (-3000, {}, "-3.0 kB"), (10**9, {"format": "%.3f"}, "1.000 GB")])
def test_naturalsize(value, kwargs, expected):
    assert naturalsize(value, **kwargs) == expected


def test_naturalsize_rejects_text():
    with pytest.raises(TypeError):
        naturalsize("3000")


@pytest.mark.parametrize("text,expected", [
    ("3 kB", 3000), ("2 KiB", 2048), ("1.5 MB", 1_500_000), ("512", 512), ("1M", 1024**2)])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "big", "3 XB"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        parse_size(text)
