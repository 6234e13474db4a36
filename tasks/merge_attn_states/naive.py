"""Merge two partial attention outputs by their LSEs: a plain Triton kernel.

For every token t and head h, with a = lse_a[h, t], b = lse_b[h, t] (+inf read as -inf):

    m = max(a, b);  w_a = exp(a - m);  w_b = exp(b - m)
    o[t, h]   = (w_a * o_a[t, h] + w_b * o_b[t, h]) / (w_a + w_b)
    lse[h, t] = m + ln(w_a + w_b)             (-inf, and o = o_a, when both sides are empty)

One program per (token, head) row over a masked block of the head dim; natural exp and log.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _merge_row(OA, LSEA, OB, LSEB, O, LSE, T, H, D, BLOCK_D: tl.constexpr):
    """o[t, h], lse[h, t] for the row t = pid // H, h = pid % H."""
    pid = tl.program_id(0)
    t = pid // H
    h = pid % H
    a = tl.load(LSEA + h * T + t)
    b = tl.load(LSEB + h * T + t)
    a = tl.where(a == float("inf"), float("-inf"), a)
    b = tl.where(b == float("inf"), float("-inf"), b)
    m = tl.maximum(a, b)
    both_empty = m == float("-inf")
    m = tl.where(both_empty, 0.0, m)
    wa = tl.exp(a - m)
    wb = tl.where(both_empty, 0.0, tl.exp(b - m))
    wa = tl.where(both_empty, 1.0, wa)
    s = wa + wb
    offs = tl.arange(0, BLOCK_D)
    mask = offs < D
    base = (t * H + h).to(tl.int64) * D
    oa = tl.load(OA + base + offs, mask=mask, other=0.0).to(tl.float32)
    ob = tl.load(OB + base + offs, mask=mask, other=0.0).to(tl.float32)
    o = (oa * wa + ob * wb) / s
    tl.store(O + base + offs, o.to(O.dtype.element_ty), mask=mask)
    tl.store(LSE + h * T + t, tl.where(both_empty, float("-inf"), m + tl.log(s)))


def run(o_a, lse_a, o_b, lse_b):
    T, H, D = o_a.shape
    o_a, o_b = o_a.contiguous(), o_b.contiguous()
    lse_a, lse_b = lse_a.contiguous(), lse_b.contiguous()
    o = torch.empty_like(o_a)
    lse = torch.empty((H, T), dtype=torch.float32, device=o_a.device)
    if T * H == 0:
        return o, lse
    _merge_row[(T * H,)](o_a, lse_a, o_b, lse_b, o, lse, T, H, D,
                         BLOCK_D=triton.next_power_of_2(D), num_warps=4)
    return o, lse
