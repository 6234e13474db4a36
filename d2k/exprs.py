"""Safe evaluation of the arithmetic expressions used in shapes and flop/byte formulas.

Only numbers, names bound in the given namespace, ``+ - * / // % **``, unary minus, parentheses
and a fixed set of functions are accepted; anything else is rejected before evaluation.
Standard library only: the GPU worker uses it too.
"""

from __future__ import annotations

import ast
import math
import operator

from d2k import ast_parse

FUNCTIONS = {
    "min": min,
    "max": max,
    "ceil": math.ceil,
    "floor": math.floor,
    "sqrt": math.sqrt,
    "log2": math.log2,
    "cdiv": lambda a, b: -(-a // b),
    "next_pow2": lambda n: 1 if n <= 1 else 1 << (int(n) - 1).bit_length(),
}

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


MAX_LENGTH = 1000      # characters of one expression
MAX_EXPONENT = 256     # |b| of a ** b: sizes never need more, and 10 ** 10 ** 10 would not finish


class ExpressionError(ValueError):
    """An expression is malformed or names something that is not bound."""


def parse(expr: str) -> ast.Expression:
    """Parse ``expr`` and check that it only uses the allowed constructs."""
    if len(str(expr)) > MAX_LENGTH:
        raise ExpressionError(f"{str(expr)[:40]!r}...: longer than {MAX_LENGTH} characters")
    try:
        tree = ast_parse.parse(str(expr), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {expr!r}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, nesting too deep
        raise ExpressionError(f"cannot parse {expr!r}: {type(exc).__name__}") from None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.unaryop)):
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            continue
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            continue
        if isinstance(node, ast.Name):
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in FUNCTIONS
            and not node.keywords
        ):
            continue
        raise ExpressionError(f"{expr!r}: {type(node).__name__} is not allowed in an expression")
    return tree


def names(expr: str) -> set[str]:
    """The free variable names an expression uses (functions excluded)."""
    tree = parse(expr)
    called = {
        n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def namespace(axes: dict, params: dict | None = None) -> dict:
    """The names an expression may use for one workload: its numeric params (booleans count as
    0/1), then its axes (an axis wins over a param of the same name). Every caller (inputs, work
    and traffic formulas, validation) builds it here, so they agree."""
    ns = {k: v for k, v in (params or {}).items() if isinstance(v, (int, float))}
    ns.update(axes)
    return ns


def evaluate(expr: str | int | float, namespace: dict) -> int | float:
    """Evaluate ``expr`` with the variables of ``namespace``."""
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        return expr
    tree = parse(expr)

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in namespace:
                raise ExpressionError(f"{expr!r}: unknown name {node.id!r}")
            return namespace[node.id]
        if isinstance(node, ast.BinOp):
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
                raise ExpressionError(f"{expr!r}: exponent {right} is larger than {MAX_EXPONENT}")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            value = ev(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Call):
            return FUNCTIONS[node.func.id](*[ev(a) for a in node.args])
        raise ExpressionError(f"{expr!r}: cannot evaluate {type(node).__name__}")

    try:
        value = ev(tree)
    except ExpressionError:
        raise
    except ZeroDivisionError:
        raise ExpressionError(f"{expr!r}: division by zero") from None
    except (TypeError, ValueError, OverflowError) as exc:  # math domain (sqrt(-1), log2(0)), inf to int
        raise ExpressionError(f"{expr!r}: {exc}") from None
    except (RecursionError, MemoryError) as exc:
        raise ExpressionError(f"{expr!r}: {type(exc).__name__}") from None
    if isinstance(value, complex):  # (-1) ** 0.5
        raise ExpressionError(f"{expr!r}: the value is not a real number")
    return value
