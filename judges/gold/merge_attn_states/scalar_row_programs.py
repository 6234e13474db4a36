"""Merge two partial attention outputs by their LSEs (vLLM merge_attn_states), one Triton kernel,
with the 16-byte vector accesses ablated.

Gold-set ablation `scalar_row_programs`: identical in arithmetic to
tasks/merge_attn_states/expert.py (log2-domain weights normalised once per row, one FMA per
element, the same inf guard), but each program handles a single (token, head) row as a 1-D block
of the head dim spread over 4 warps: with D = 128 every thread moves one 2-byte element per
tensor instead of 16-byte packs, and no contiguity or alignment hints are given.

For every token t and head h, with a = lse_a[h, t], b = lse_b[h, t] (+inf read as -inf):

    m = max(a, b);  w_a = exp(a - m);  w_b = exp(b - m)
    o[t, h]   = (w_a / (w_a + w_b)) * o_a[t, h] + (w_b / (w_a + w_b)) * o_b[t, h]
    lse[h, t] = m + ln(w_a + w_b)             (-inf, and o = o_a, when both sides are empty)
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _merge_attn_states_row(OA, LSEA, OB, LSEB, O, LSE, T, H, D, BLOCK_D: tl.constexpr):
    """o[t, h], lse[h, t] for token t = program_id(0), head h = program_id(1)."""
    t = tl.program_id(0)
    h = tl.program_id(1)
    la = tl.load(LSEA + h * T + t) * 1.4426950408889634
    lb = tl.load(LSEB + h * T + t) * 1.4426950408889634
    la = tl.where(la == float("inf"), float("-inf"), la)
    lb = tl.where(lb == float("inf"), float("-inf"), lb)
    m = tl.maximum(la, lb)
    empty = m == float("-inf")
    m = tl.where(empty, 0.0, m)
    wa = tl.math.exp2(la - m)
    wb = tl.math.exp2(lb - m)
    s = tl.where(empty, 1.0, wa + wb)
    inv = 1.0 / s
    ca = tl.where(empty, 1.0, wa * inv)
    cb = wb * inv
    tl.store(LSE + h * T + t, tl.where(empty, float("-inf"), (m + tl.math.log2(s)) * 0.6931471805599453))
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    base = (t * H + h).to(tl.int64) * D
    oa = tl.load(OA + base + cols, mask=mask, other=0.0)
    ob = tl.load(OB + base + cols, mask=mask, other=0.0)
    o = oa.to(tl.float32) * ca + ob.to(tl.float32) * cb
    tl.store(O + base + cols, o.to(O.dtype.element_ty), mask=mask)


def run(o_a, lse_a, o_b, lse_b):
    T, H, D = o_a.shape
    o_a, o_b = o_a.contiguous(), o_b.contiguous()
    lse_a, lse_b = lse_a.contiguous(), lse_b.contiguous()
    o = torch.empty_like(o_a)
    lse = torch.empty((H, T), dtype=torch.float32, device=o_a.device)
    if T * H == 0:
        return o, lse
    _merge_attn_states_row[(T, H)](o_a, lse_a, o_b, lse_b, o, lse, T, H, D,
                                   BLOCK_D=triton.next_power_of_2(D), num_warps=4)
    return o, lse
