"""The per-call perturbation of timed inputs: deterministic for both sides, a permutation within
rows, k distinct rows per call, every row equally likely."""

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


def test_each_call_swaps_one_pair_in_k_distinct_rows():
    rows, cols = 5000, 64  # k = ceil(320000 / 4096) = 79 rows of 5000
    x = _distinct(rows, cols)
    wire.perturb({"x": x}, ["x"], seed=2, call=0)
    changed_rows = (x != _distinct(rows, cols)).sum(-1)
    assert int((changed_rows > 0).sum()) == 79
    assert set(changed_rows[changed_rows > 0].tolist()) == {2}


def test_every_row_is_equally_likely_to_be_touched():
    rows, cols = 10, 2560  # k = 7 of 10 rows: the spacing is 1, the start is random
    hits = np.zeros(rows)
    for call in range(1500):
        x = _distinct(rows, cols)
        wire.perturb({"x": x}, ["x"], seed=3, call=call)
        hits += (x != _distinct(rows, cols)).any(-1).numpy()
    assert np.all(np.abs(hits / 1500 - 0.7) < 0.06), hits / 1500
