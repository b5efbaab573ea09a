"""Wire format between the trusted test process and the package's worker process.

Standard library only: copied next to both processes (as ``_nl2repo_wire``). One message is
one line of JSON; every value is a tagged list, so that nothing but plain data (numbers,
strings, bytes, containers of them, a few standard value types) is ever rebuilt from what
the other side sent. Anything else crosses as a side-specific tag (a handle to an object that
stays where it lives), handed to the caller's ``other`` function. Decoding never imports,
evaluates or calls anything named by the data.
"""

import base64
import collections
import datetime
import decimal
import fractions
import json
import os
import pathlib

MAX_MESSAGE = 64 << 20          # bytes of one message
MAX_DEPTH = 40                  # deeper containers cross as handles
INT_BITS = 4000                 # larger ints cross as handles (decimal text stays short)


class WireError(Exception):
    """A message that is not a well-formed value of this format."""


def send(fd: int, message) -> None:
    data = (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Reader:
    """Reads one message at a time from a descriptor; ``None`` at end of file."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()

    def read(self):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 1]
                try:
                    message = json.loads(line)
                except (ValueError, RecursionError) as exc:
                    raise WireError(f"malformed message: {exc}") from None
                if not isinstance(message, dict):
                    raise WireError("a message must be an object")
                return message
            if len(self.buf) > MAX_MESSAGE:
                raise WireError("message too large")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buf += chunk


def _b64(data) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _tz_ok(value) -> bool:
    tz = getattr(value, "tzinfo", None)
    return tz is None or type(tz) is datetime.timezone


def encode(value, other, depth: int = 0):
    """The tagged form of ``value``; ``other(value, depth)`` for anything not plain data."""
    t = type(value)
    if value is None:
        return ["n"]
    if t is bool:
        return ["b", value]
    if t is int:
        return ["i", value] if value.bit_length() <= INT_BITS else other(value, depth)
    if t is float:
        return ["f", repr(value)]
    if t is str:
        return ["s", value]
    if t is bytes:
        return ["y", _b64(value)]
    if t is bytearray:
        return ["Y", _b64(value)]
    if t is complex:
        return ["c", [repr(value.real), repr(value.imag)]]
    if depth >= MAX_DEPTH:
        return other(value, depth)
    sub = depth + 1
    if t is list:
        return ["l", [encode(v, other, sub) for v in value]]
    if t is tuple:
        return ["t", [encode(v, other, sub) for v in value]]
    if t is set:
        return ["S", [encode(v, other, sub) for v in value]]
    if t is frozenset:
        return ["F", [encode(v, other, sub) for v in value]]
    if t is dict:
        return ["d", [[encode(k, other, sub), encode(v, other, sub)] for k, v in value.items()]]
    if t is collections.OrderedDict:
        return ["od", [[encode(k, other, sub), encode(v, other, sub)] for k, v in value.items()]]
    if t is collections.Counter:
        return ["ct", [[encode(k, other, sub), encode(v, other, sub)] for k, v in value.items()]]
    if t is collections.deque:
        return ["dq", [encode(v, other, sub) for v in value]]
    if t is range:
        return ["r", [value.start, value.stop, value.step]]
    if t in (pathlib.PosixPath, pathlib.PurePosixPath):
        return ["p", str(value), t is pathlib.PosixPath]
    if t is decimal.Decimal:
        return ["D", str(value)]
    if t is fractions.Fraction:
        return ["Q", [value.numerator, value.denominator]]
    if t is datetime.datetime and _tz_ok(value):
        return ["dt", value.isoformat()]
    if t is datetime.date:
        return ["da", value.isoformat()]
    if t is datetime.time and _tz_ok(value):
        return ["tm", value.isoformat()]
    if t is datetime.timedelta:
        return ["td", [value.days, value.seconds, value.microseconds]]
    return other(value, depth)


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise WireError(f"bad value: {what}")


def _items(payload, decode_one):
    _need(isinstance(payload, list), "container payload")
    return [decode_one(v) for v in payload]


def _pairs(payload, decode_one):
    _need(isinstance(payload, list) and all(isinstance(p, list) and len(p) == 2 for p in payload), "pairs")
    return [(decode_one(k), decode_one(v)) for k, v in payload]


def decode(data, other, depth: int = 0):
    """The value of a tagged form; ``other(data, depth)`` for the side-specific tags."""
    _need(isinstance(data, list) and data and isinstance(data[0], str), "tagged list")
    _need(depth <= MAX_DEPTH + 2, "nesting")
    tag, payload = data[0], data[1] if len(data) > 1 else None

    def one(v):
        return decode(v, other, depth + 1)

    try:
        if tag == "n":
            return None
        if tag == "b":
            _need(type(payload) is bool, "bool")
            return payload
        if tag == "i":
            _need(type(payload) is int, "int")
            return payload
        if tag == "f":
            _need(isinstance(payload, str) and len(payload) < 40, "float")
            return float(payload)
        if tag == "s":
            _need(isinstance(payload, str), "str")
            return payload
        if tag in ("y", "Y"):
            _need(isinstance(payload, str), "bytes")
            raw = base64.b64decode(payload.encode("ascii"), validate=True)
            return raw if tag == "y" else bytearray(raw)
        if tag == "c":
            _need(isinstance(payload, list) and len(payload) == 2, "complex")
            return complex(float(payload[0]), float(payload[1]))
        if tag == "l":
            return _items(payload, one)
        if tag == "t":
            return tuple(_items(payload, one))
        if tag == "S":
            return set(_items(payload, one))
        if tag == "F":
            return frozenset(_items(payload, one))
        if tag == "d":
            return dict(_pairs(payload, one))
        if tag == "od":
            return collections.OrderedDict(_pairs(payload, one))
        if tag == "ct":
            return collections.Counter(dict(_pairs(payload, one)))
        if tag == "dq":
            return collections.deque(_items(payload, one))
        if tag == "r":
            _need(isinstance(payload, list) and len(payload) == 3 and all(type(v) is int for v in payload), "range")
            return range(*payload)
        if tag == "p":
            _need(isinstance(payload, str) and len(data) == 3, "path")
            return (pathlib.PosixPath if data[2] else pathlib.PurePosixPath)(payload)
        if tag == "D":
            _need(isinstance(payload, str) and len(payload) < 200, "decimal")
            return decimal.Decimal(payload)
        if tag == "Q":
            _need(isinstance(payload, list) and len(payload) == 2 and all(type(v) is int for v in payload), "fraction")
            return fractions.Fraction(*payload)
        if tag in ("dt", "da", "tm"):
            _need(isinstance(payload, str) and len(payload) < 64, "date/time")
            kind = {"dt": datetime.datetime, "da": datetime.date, "tm": datetime.time}[tag]
            return kind.fromisoformat(payload)
        if tag == "td":
            _need(isinstance(payload, list) and len(payload) == 3 and all(type(v) is int for v in payload), "timedelta")
            return datetime.timedelta(days=payload[0], seconds=payload[1], microseconds=payload[2])
    except (ValueError, TypeError, OverflowError, ArithmeticError, decimal.DecimalException) as exc:
        raise WireError(f"bad {tag!r} value: {exc}") from None
    return other(data, depth)
