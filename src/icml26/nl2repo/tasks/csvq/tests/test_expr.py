import pytest

from csvq.expr import ExprError, parse_expr
from csvq.io import CsvqError

ROW = {"age": 31, "city": "paris", "score": 2.5, "missing": None}


@pytest.mark.parametrize("text,expected", [
    ("age > 30", True), ("age >= 32", False), ("city = 'paris'", True), ("city != 'paris'", False),
    ("age > 30 and city = 'oslo'", False), ("age > 30 or city = 'oslo'", True),
    ("not age < 18", True), ("(age + 9) / 4 = 10", True), ("score * 2 = 5", True),
    ("-age < 0", True), ("missing > 1", False), ("missing = null", False),
    ("true and not false", True), ("age - 1 = 30 and (city = 'x' or score < 3)", True)])
def test_evaluate(text, expected):
    assert parse_expr(text).evaluate(ROW) is expected


def test_arithmetic_value():
    assert parse_expr("age * 2 + 1").evaluate(ROW) == 63


def test_precedence_and_over_or():
    assert parse_expr("true or false and false").evaluate({}) is True


@pytest.mark.parametrize("text", ["", "age >", "(age > 1", "age > 1)", "age $ 3", "and"])
def test_syntax_errors(text):
    with pytest.raises(ExprError):
        parse_expr(text)


def test_unknown_column_at_evaluation():
    with pytest.raises(ExprError):
        parse_expr("zip = 1").evaluate(ROW)


def test_division_by_zero():
    with pytest.raises(ExprError):
        parse_expr("age / 0").evaluate(ROW)


def test_expr_error_is_csvq_error():
    with pytest.raises(CsvqError):
        parse_expr("((")
