import pytest

from d2k import exprs


def test_arithmetic_and_functions():
    ns = {"T": 8192, "H": 4096}
    assert exprs.evaluate("4 * T * H", ns) == 4 * 8192 * 4096
    assert exprs.evaluate("cdiv(T, 128) + next_pow2(100) - max(1, 2)", ns) == 64 + 128 - 2
    assert exprs.evaluate(3, ns) == 3
    assert exprs.names("2 * M * N * K + cdiv(M, 16)") == {"M", "N", "K"}


@pytest.mark.parametrize("bad", ["__import__('os')", "x.y", "[1, 2]", "a if b else c", "f(1)", "1 +"])
def test_rejects_anything_but_arithmetic(bad):
    with pytest.raises(exprs.ExpressionError):
        exprs.evaluate(bad, {"x": 1, "a": 1, "b": 1, "c": 1})


def test_unknown_name_is_named():
    with pytest.raises(exprs.ExpressionError, match="unknown name 'Q'"):
        exprs.evaluate("Q * 2", {"T": 1})
