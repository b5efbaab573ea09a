"""Durations."""
import datetime as _dt


def _seconds(value):
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected seconds or a timedelta, got {value!r}")
    return float(value)


def _plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def naturaldelta(value):
    s = abs(_seconds(value))
    if s < 1:
        return "a moment"
    if s < 60:
        return _plural(int(s), "second")
    if s < 120:
        return "a minute"
    if s < 3600:
        return _plural(int(s // 60), "minute")
    if s < 7200:
        return "an hour"
    if s < 86400:
        return _plural(int(s // 3600), "hour")
    days = int(s // 86400)
    if days == 1:
        return "a day"
    if days < 30:
        return _plural(days, "day")
    if days < 365:
        months = days // 30
        return "a month" if months == 1 else _plural(months, "month")
    years = days // 365
    return "a year" if years == 1 else _plural(years, "year")


def naturaltime(value, future=False):
    delta = naturaldelta(value)
    if delta == "a moment":
        return "now"
    return f"in {delta}" if future else f"{delta} ago"


def format_duration(value):
    total = int(abs(_seconds(value)))
    hours, rem = divmod(total, 3600)
    minutes, seconds = divmod(rem, 60)
    sign = "-" if _seconds(value) < 0 and total else ""
    if hours:
        return f"{sign}{hours}h {minutes:02d}m {seconds:02d}s"
    if minutes:
        return f"{sign}{minutes}m {seconds:02d}s"
    return f"{sign}{seconds}s"
