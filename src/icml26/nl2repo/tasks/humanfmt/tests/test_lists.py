import pytest

from humanfmt.lists import natural_list


@pytest.mark.parametrize("items,expected", [
    ([], ""), (["a"], "a"), (["a", "b"], "a and b"), (["a", "b", "c"], "a, b, and c"),
    ([1, 2, 3, 4], "1, 2, 3, and 4")])
def test_natural_list(items, expected):
    assert natural_list(items) == expected


def test_natural_list_without_oxford_comma():
    assert natural_list(["a", "b", "c"], oxford=False) == "a, b and c"


def test_natural_list_or():
    assert natural_list(["tea", "coffee"], conjunction="or") == "tea or coffee"


def test_natural_list_limit():
    assert natural_list(list("abcde"), limit=2) == "a, b, and 3 more"


def test_natural_list_bad_limit():
    with pytest.raises(ValueError):
        natural_list(["a"], limit=0)
