import pytest
import torch

from d2k.execution.compare import Mismatch, compare_tensor

TOL = {"atol": 1e-2, "rtol": 1e-2, "matched_ratio": 1.0, "max_abs_error": None}


def ref():
    g = torch.Generator().manual_seed(0)
    return torch.randn(64, 32, generator=g).to(torch.float16)


def test_identical_passes_with_zero_error():
    r = ref()
    stats = compare_tensor("y", r.clone(), r, TOL)
    assert stats["mismatched"] == 0 and stats["max_abs_error"] == 0.0


def test_reports_which_output_how_many_how_much_and_where():
    r = ref()
    c = r.clone()
    c[3, 7] += 1.0
    c[10, 1] -= 0.5
    with pytest.raises(Mismatch) as info:
        compare_tensor("y", c, r, TOL)
    message = str(info.value)
    assert "output y" in message and "2 of 2048" in message and "(3, 7)" in message


def test_matched_ratio_allows_a_share_of_outliers():
    r = ref()
    c = r.clone()
    c[0, 0] += 1.0
    assert compare_tensor("y", c, r, {**TOL, "matched_ratio": 0.999})["mismatched"] == 1


def test_max_error_cap_applies_even_when_ratio_passes():
    r = ref()
    c = r.clone()
    c[0, 0] += 5.0
    with pytest.raises(Mismatch, match="exceeds the cap"):
        compare_tensor("y", c, r, {**TOL, "matched_ratio": 0.99, "max_abs_error": 1.0})


@pytest.mark.parametrize(
    "make, pattern",
    [
        (lambda r: torch.full_like(r, float("nan")), "NaN/Inf"),
        (lambda r: torch.zeros_like(r), "all .* zero"),
        (lambda r: r.float(), "dtype"),
        (lambda r: r[:-1], "shape"),
        (lambda r: r.tolist(), "expected a tensor"),
    ],
)
def test_degenerate_outputs_are_rejected(make, pattern):
    r = ref()
    with pytest.raises(Mismatch, match=pattern):
        compare_tensor("y", make(r), r, TOL)


def test_integer_outputs_compare_exactly():
    r = torch.arange(10)
    c = r.clone()
    c[4] += 1
    with pytest.raises(Mismatch, match="1 of 10"):
        compare_tensor("ids", c, r, TOL)
