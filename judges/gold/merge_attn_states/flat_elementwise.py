"""Merge two partial attention outputs by their LSEs (vLLM merge_attn_states), one Triton kernel,
with the row-owning programs ablated.

Gold-set ablation `flat_elementwise`: identical in arithmetic to
tasks/merge_attn_states/expert.py (log2-domain weights, normalised before they touch the
outputs, one FMA per element, the same inf guard), but the grid is a flat element-wise one:
each program owns BLOCK consecutive elements of the [T, H, D] tensors, every element recovers
its (token, head) row from its offset (offset // D) and gathers the two LSEs itself, and
recomputes the weights; the element in column 0 of each row writes the merged LSE.

For every token t and head h, with a = lse_a[h, t], b = lse_b[h, t] (+inf read as -inf):

    m = max(a, b);  w_a = exp(a - m);  w_b = exp(b - m)
    o[t, h]   = (w_a / (w_a + w_b)) * o_a[t, h] + (w_b / (w_a + w_b)) * o_b[t, h]
    lse[h, t] = m + ln(w_a + w_b)             (-inf, and o = o_a, when both sides are empty)
"""

import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


@triton.jit
def _merge_attn_states_flat(OA, LSEA, OB, LSEB, O, LSE, n_elem, T, H,
                            HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr):
    """BLOCK consecutive elements of o; each gathers the LSEs of its own (token, head) row."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    ok = offs < n_elem
    row = offs // HEAD_DIM
    col = offs - row * HEAD_DIM
    tok = row // H
    head = row - tok * H
    lse_off = head * T + tok
    la = tl.load(LSEA + lse_off, mask=ok, other=float("-inf")) * 1.4426950408889634
    lb = tl.load(LSEB + lse_off, mask=ok, other=float("-inf")) * 1.4426950408889634
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
    oa = tl.load(OA + offs, mask=ok, other=0.0)
    ob = tl.load(OB + offs, mask=ok, other=0.0)
    o = oa.to(tl.float32) * ca + ob.to(tl.float32) * cb
    tl.store(O + offs, o.to(O.dtype.element_ty), mask=ok)
    lse = tl.where(empty, float("-inf"), (m + tl.math.log2(s)) * 0.6931471805599453)
    tl.store(LSE + lse_off, lse, mask=ok & (col == 0))


def run(o_a, lse_a, o_b, lse_b):
    T, H, D = o_a.shape
    o_a, o_b = o_a.contiguous(), o_b.contiguous()
    lse_a, lse_b = lse_a.contiguous(), lse_b.contiguous()
    o = torch.empty_like(o_a)
    lse = torch.empty((H, T), dtype=torch.float32, device=o_a.device)
    n = T * H * D
    if n == 0:
        return o, lse
    block = 256 if _INTERPRET else 2048
    _merge_attn_states_flat[(triton.cdiv(n, block),)](o_a, lse_a, o_b, lse_b, o, lse, n, T, H,
                                                      HEAD_DIM=D, BLOCK=block, num_warps=4)
    return o, lse
