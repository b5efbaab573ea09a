import datetime as dt

import pytest

from humanfmt.timefmt import format_duration, naturaldelta, naturaltime


@pytest.mark.parametrize("seconds,expected", [
    (0.5, "a moment"), (1, "1 second"), (30, "30 seconds"), (90, "a minute"),
    (300, "5 minutes"), (4000, "an hour"), (3 * 3600, "3 hours"), (86400, "a day"),
    (5 * 86400, "5 days"), (40 * 86400, "a month"), (100 * 86400, "3 months"),
    (400 * 86400, "a year"), (800 * 86400, "2 years"), (-300, "5 minutes")])
def test_naturaldelta(seconds, expected):
    assert naturaldelta(seconds) == expected


def test_naturaldelta_timedelta():
    assert naturaldelta(dt.timedelta(hours=2)) == "2 hours"


def test_naturaldelta_rejects_text():
    with pytest.raises(TypeError):
        naturaldelta("5 minutes")


@pytest.mark.parametrize("seconds,future,expected", [
    (300, False, "5 minutes ago"), (300, True, "in 5 minutes"), (0, False, "now")])
def test_naturaltime(seconds, future, expected):
    assert naturaltime(seconds, future=future) == expected


@pytest.mark.parametrize("seconds,expected", [
    (0, "0s"), (45, "45s"), (125, "2m 05s"), (3600, "1h 00m 00s"), (3723, "1h 02m 03s"),
    (-65, "-1m 05s")])
def test_format_duration(seconds, expected):
    assert format_duration(seconds) == expected
