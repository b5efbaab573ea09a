"""Where-expressions: a tiny recursive-descent parser."""
import re

from .io import CsvqError


class ExprError(CsvqError):
    """Syntax error or unknown column in an expression."""


_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\d+)|('(?:[^']*)')|(<=|>=|!=|=|<|>|\(|\)|\+|-|\*|/)|([A-Za-z_]\w*))")
_KEYWORDS = {"and", "or", "not", "true", "false", "null"}


def _tokenize(text):
    pos, tokens = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ExprError(f"unexpected character at {pos}: {text[pos:pos + 10]!r}")
        num, string, op, name = m.groups()
        if num is not None:
            tokens.append(("num", float(num) if "." in num else int(num)))
        elif string is not None:
            tokens.append(("str", string[1:-1]))
        elif op is not None:
            tokens.append(("op", op))
        else:
            low = name.lower()
            tokens.append(("kw", low) if low in _KEYWORDS else ("name", name))
        pos = m.end()
    return tokens


class Expr:
    def __init__(self, fn, text):
        self._fn = fn
        self.text = text

    def evaluate(self, row):
        return self._fn(row)

    def __repr__(self):
        return f"Expr({self.text!r})"


def _compare(op, a, b):
    if a is None or b is None:
        return False if op != "!=" else (a is not b)
    try:
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    except TypeError:
        raise ExprError(f"cannot compare {a!r} {op} {b!r}") from None


class _Parser:
    def __init__(self, tokens):
        self.tokens, self.i = tokens, 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None)

    def take(self, kind=None, value=None):
        tok = self.peek()
        if tok[0] is None or (kind and tok[0] != kind) or (value is not None and tok[1] != value):
            raise ExprError(f"expected {value or kind}, got {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self):
        fn = self.or_()
        if self.i != len(self.tokens):
            raise ExprError(f"unexpected token {self.peek()[1]!r}")
        return fn

    def or_(self):
        left = self.and_()
        while self.peek() == ("kw", "or"):
            self.take()
            right = self.and_()
            left = (lambda l, r: lambda row: bool(l(row)) or bool(r(row)))(left, right)
        return left

    def and_(self):
        left = self.not_()
        while self.peek() == ("kw", "and"):
            self.take()
            right = self.not_()
            left = (lambda l, r: lambda row: bool(l(row)) and bool(r(row)))(left, right)
        return left

    def not_(self):
        if self.peek() == ("kw", "not"):
            self.take()
            inner = self.not_()
            return lambda row: not inner(row)
        return self.comparison()

    def comparison(self):
        left = self.sum_()
        kind, op = self.peek()
        if kind == "op" and op in ("=", "!=", "<", "<=", ">", ">="):
            self.take()
            right = self.sum_()
            return (lambda l, r, o: lambda row: _compare(o, l(row), r(row)))(left, right, op)
        return left

    def sum_(self):
        left = self.product()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            right = self.product()
            left = (lambda l, r, o: lambda row: _arith(o, l(row), r(row)))(left, right, op)
        return left

    def product(self):
        left = self.unary()
        while self.peek() in (("op", "*"), ("op", "/")):
            op = self.take()[1]
            right = self.unary()
            left = (lambda l, r, o: lambda row: _arith(o, l(row), r(row)))(left, right, op)
        return left

    def unary(self):
        if self.peek() == ("op", "-"):
            self.take()
            inner = self.unary()
            return lambda row: _arith("-", 0, inner(row))
        return self.atom()

    def atom(self):
        kind, value = self.peek()
        if kind in ("num", "str"):
            self.take()
            return lambda row: value
        if kind == "kw" and value in ("true", "false", "null"):
            self.take()
            const = {"true": True, "false": False, "null": None}[value]
            return lambda row: const
        if kind == "name":
            self.take()

            def lookup(row, name=value):
                if name not in row:
                    raise ExprError(f"unknown column {name!r}")
                return row[name]
            return lookup
        if (kind, value) == ("op", "("):
            self.take()
            inner = self.or_()
            self.take("op", ")")
            return inner
        raise ExprError(f"unexpected token {value!r}")


def _arith(op, a, b):
    if a is None or b is None:
        return None
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if b == 0:
            raise ExprError("division by zero")
        return a / b
    except TypeError:
        raise ExprError(f"cannot compute {a!r} {op} {b!r}") from None


def parse_expr(text):
    if not isinstance(text, str) or not text.strip():
        raise ExprError("empty expression")
    return Expr(_Parser(_tokenize(text)).parse(), text)
