"""Number formatting."""
_WORDS = [(10**12, "trillion"), (10**9, "billion"), (10**6, "million")]
_AP = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def _number(value):
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                raise TypeError(f"not a number: {value!r}") from None
    if isinstance(value, (int, float)):
        return value
    raise TypeError(f"not a number: {value!r}")


def intcomma(value, ndigits=None):
    number = _number(value)
    if ndigits is not None:
        return f"{number:,.{ndigits}f}"
    if isinstance(number, float):
        return f"{number:,}"
    return f"{number:,d}"


def intword(value, format="%.1f"):
    number = _number(value)
    for size, word in _WORDS:
        if abs(number) >= size:
            return f"{format % (number / size)} {word}"
    return str(number)


def ordinal(value):
    number = _number(value)
    if not isinstance(number, int) or number < 0:
        raise ValueError(f"ordinal needs a non-negative integer, got {value!r}")
    if 10 <= number % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def apnumber(value):
    number = _number(value)
    if isinstance(number, int) and 0 <= number <= 9:
        return _AP[number]
    return str(number)
