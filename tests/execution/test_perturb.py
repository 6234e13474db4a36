"""The per-call perturbation of timed inputs: deterministic for both sides, a permutation within
rows that changes nearly every element (a rotation), plus one swapped pair in k distinct rows per
call, every row equally likely; and what a solution that patches its cached output would pay."""

import numpy as np
import torch

from d2k.execution import wire


def _distinct(rows: int, cols: int) -> torch.Tensor:
    return torch.arange(rows * cols, dtype=torch.float32).reshape(rows, cols)


def test_the_same_seed_and_call_give_the_same_bytes_and_rows_keep_their_values():
    a, b = _distinct(64, 300), _distinct(64, 300)
    wire.perturb({"x": a}, ["x"], seed=11, call=5)
    wire.perturb({"x": b}, ["x"], seed=11, call=5)
    assert torch.equal(a, b)
    assert not torch.equal(a, _distinct(64, 300))
    assert torch.equal(a.sort(-1).values, _distinct(64, 300))  # a permutation within each row


def _rotation(x: torch.Tensor, before: torch.Tensor) -> torch.Tensor:
    """``before`` rotated along its rows by the amount that matches ``x`` best: what ``x`` is
    without its swaps."""
    cols = x.shape[-1]
    head, first = before.reshape(-1, cols)[:3], x.reshape(-1, cols)[:3]  # a swap touches few of them
    matches = torch.stack([(torch.roll(head, s, dims=-1) == first).sum() for s in range(cols)])
    return torch.roll(before, int(matches.argmax()), dims=-1)


def _rotation_of_distinct(x: torch.Tensor) -> torch.Tensor:
    """``_rotation(x, _distinct(...))`` read off the values: element ``c`` of a row held column ``c - s``."""
    rows, cols = x.shape
    offsets = (torch.arange(cols) - (x - torch.arange(rows)[:, None] * cols).long()) % cols
    return torch.roll(_distinct(rows, cols), int(offsets.flatten().mode().values), dims=-1)


def test_each_call_rotates_every_row_and_swaps_one_pair_in_k_distinct_rows():
    rows, cols = 5000, 64  # k = ceil(320000 / 4096) = 79 rows of 5000
    x = _distinct(rows, cols)
    wire.perturb({"x": x}, ["x"], seed=2, call=0)
    # distinct values: every element moved (a swap may put one back where it started)
    assert float((x != _distinct(rows, cols)).float().mean()) > 0.99
    changed_rows = (x != _rotation(x, _distinct(rows, cols))).sum(-1)
    assert int((changed_rows > 0).sum()) == 79
    assert set(changed_rows[changed_rows > 0].tolist()) == {2}


def test_every_row_is_equally_likely_to_be_swapped():
    rows, cols = 10, 2560  # k = 7 of 10 rows: the spacing is 1, the start is random
    hits = np.zeros(rows)
    for call in range(1500):
        x = _distinct(rows, cols)
        wire.perturb({"x": x}, ["x"], seed=3, call=call)
        hits += (x != _rotation_of_distinct(x)).any(-1).numpy()
    assert np.all(np.abs(hits / 1500 - 0.7) < 0.06), hits / 1500


def test_patching_a_cached_gemm_costs_at_least_the_gemm():
    # A solution that keeps the last call's inputs and output can diff the new inputs against them
    # and patch C = A @ B.T: each changed element of A costs a row update of N multiply-adds, each
    # of B a column update of M. With swaps alone about two elements per row changed, so the patch
    # cost about 2(M + N)K... 4MN against the product's MNK: K/4 times cheaper. The rotation
    # changes nearly every element, so the patch costs at least the product.
    gen = torch.Generator().manual_seed(0)
    M, N, K = 64, 96, 4096
    A0, B0 = torch.randn(M, K, generator=gen), torch.randn(N, K, generator=gen)
    A, B = A0.clone(), B0.clone()
    wire.perturb({"A": A, "B": B}, ["A", "B"], seed=7, call=1)
    patch_cost = int((A != A0).sum()) * N + int((B != B0).sum()) * M
    assert patch_cost >= M * N * K
    # the patch is exact where it is cheap: on the swaps alone (the rotation undone), two changes a row
    A_swapped, B_swapped = _rotation(A, A0), _rotation(B, B0)
    assert int((A != A_swapped).sum()) == 2 * M and int((B != B_swapped).sum()) == 2 * N
