"""Safe arithmetic for the demo's ``calculate`` tool: numbers and operators, nothing else.

The expression is parsed with :mod:`ast` and evaluated by walking the tree, so no name, call,
attribute or subscript can ever run. Sizes are bounded before they are computed: a model (or a
user) must not be able to freeze the process with ``9 ** 9 ** 9``.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

__all__ = ["MAX_EXPRESSION_LENGTH", "MAX_RESULT_BITS", "CalculationError", "calculate"]

Number = int | float

MAX_EXPRESSION_LENGTH = 500
"""Longer expressions are refused; with bounded operands this bounds the work too."""
MAX_RESULT_BITS = 4096
"""Integers above 2**4096 (about 1233 digits) are refused, before and after each operation."""

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


class CalculationError(ValueError):
    """The expression is not plain arithmetic, or its value is out of bounds."""


def calculate(expression: str) -> Number:
    """Evaluate ``expression``: numbers, ``+ - * / // % **``, unary ``+``/``-``, parentheses.

    Raises:
        CalculationError: anything else (names, calls, strings …), division by zero, a result
            that is too large, not finite or not real.
    """
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CalculationError(f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise CalculationError(f"not an arithmetic expression: {exc.msg}") from None
    return _evaluate(tree.body)


def _evaluate(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        return _number(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _checked(_UNARY[type(node.op)](_evaluate(node.operand)))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        try:
            return _checked(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise CalculationError("division by zero") from None
        except OverflowError:
            raise CalculationError("result too large") from None
    raise CalculationError(f"not allowed in a calculation: {_describe(node)}")


def _number(value: object) -> Number:
    # bool is an int subclass, and True + True is not arithmetic anyone meant.
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _checked(value)
    raise CalculationError(f"not a number: {value!r}")


def _check_power(base: Number, exponent: Number) -> None:
    """Refuse a power whose integer result would exceed the bound, before computing it."""
    if not (isinstance(base, int) and isinstance(exponent, int)) or exponent <= 0:
        return  # float powers overflow with OverflowError instead of growing
    # bit_length() - 1 is a lower bound of log2(base), so this refuses only results that are
    # surely too large; the rest are at most twice the bound and checked once computed.
    if (abs(base).bit_length() - 1) * exponent > MAX_RESULT_BITS:
        raise CalculationError("result too large")


def _checked(value: object) -> Number:
    if isinstance(value, int):
        if value.bit_length() > MAX_RESULT_BITS:
            raise CalculationError("result too large")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CalculationError("result is not a finite number")
        return value
    # (-8) ** 0.5 is complex in Python: not a result a calculator should give.
    raise CalculationError("result is not a real number")


def _describe(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return f"name {node.id!r}"
    if isinstance(node, ast.Call):
        return "function call"
    return type(node).__name__
