"""File sizes."""
import re

_DECIMAL = ["kB", "MB", "GB", "TB", "PB"]
_BINARY = ["KiB", "MiB", "GiB", "TiB", "PiB"]
_GNU = "KMGTP"
_PARSE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")
_MULT = {"": 1, "b": 1, "byte": 1, "bytes": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3,
         "tb": 1000**4, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
         "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def naturalsize(value, binary=False, gnu=False, format="%.1f"):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"value must be a number of bytes, got {value!r}")
    base = 1024 if (binary or gnu) else 1000
    size = float(value)
    if abs(size) == 1 and not gnu:
        return f"{int(size)} Byte"
    if abs(size) < base:
        return f"{int(size)}B" if gnu else f"{int(size)} Bytes"
    for i, _ in enumerate(_DECIMAL):
        unit = base ** (i + 2)
        if abs(size) < unit or i == len(_DECIMAL) - 1:
            scaled = base * size / unit
            if gnu:
                return (format % scaled) + _GNU[i]
            return f"{format % scaled} {(_BINARY if binary else _DECIMAL)[i]}"


def parse_size(text):
    m = _PARSE.match(text) if isinstance(text, str) else None
    if not m or m.group(2).lower() not in _MULT:
        raise ValueError(f"not a file size: {text!r}")
    return int(round(float(m.group(1)) * _MULT[m.group(2).lower()]))
