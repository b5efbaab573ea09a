import pytest

from humanfmt.number import *  # noqa: F401,F403  (upstream style: star import)
from humanfmt.number import apnumber, intcomma, intword, ordinal


@pytest.mark.parametrize("value,expected", [
    (1234567, "1,234,567"), (-1234, "-1,234"), ("1234", "1,234"), (100, "100"),
    (1234.5, "1,234.5")])
def test_intcomma(value, expected):
    assert intcomma(value) == expected


def test_intcomma_ndigits():
    assert intcomma(1234.5678, 2) == "1,234.57"


def test_intcomma_rejects_text():
    with pytest.raises(TypeError):
        intcomma("abc")


@pytest.mark.parametrize("value,expected", [
    (999, "999"), (1_000_000, "1.0 million"), (1_200_000_000, "1.2 billion"),
    (3 * 10**12, "3.0 trillion"), (-1_500_000, "-1.5 million")])
def test_intword(value, expected):
    assert intword(value) == expected


def test_intword_format():
    assert intword(1_234_000, "%.2f") == "1.23 million"


@pytest.mark.parametrize("value,expected", [
    (1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
    (13, "13th"), (21, "21st"), (101, "101st"), (111, "111th"), (0, "0th")])
def test_ordinal(value, expected):
    assert ordinal(value) == expected


def test_ordinal_negative_raises():
    with pytest.raises(ValueError):
        ordinal(-1)


@pytest.mark.parametrize("value,expected", [(0, "zero"), (5, "five"), (9, "nine"), (10, "10")])
def test_apnumber(value, expected):
    assert apnumber(value) == expected
