"""Merge two partial attention outputs by their LSEs (vLLM merge_attn_states), one Triton kernel,
with the scale-first weighting ablated.

Gold-set ablation `no_scale_first`: identical to tasks/merge_attn_states/expert.py except that the
outputs are multiplied by the raw exponentials w_a, w_b and every element is then divided by
w_a + w_b, instead of normalising the two weights once per row and doing one FMA per element.

For every token t and head h, with a = lse_a[h, t], b = lse_b[h, t] (+inf read as -inf):

    m = max(a, b);  w_a = exp(a - m);  w_b = exp(b - m)
    o[t, h]   = (w_a / (w_a + w_b)) * o_a[t, h] + (w_b / (w_a + w_b)) * o_b[t, h]
    lse[h, t] = m + ln(w_a + w_b)             (-inf, and o = o_a, when both sides are empty)

Design:
- The [T, H, D] tensors are walked as T*H contiguous rows of D elements; each program owns
  ROWS consecutive (token, head) rows as one [ROWS, D] tile, so every load and store is one
  contiguous, 16-byte-vectorised stream (D is a compile-time constant, the row offsets are
  hinted as multiples of D), and the two LSEs of each row are loaded once (a [ROWS] gather from
  the head-major [H, T] arrays: row r is head r % H of token r // H).
- The per-row work is done in the log2 domain: the LSEs are scaled by log2(e), the max shift
  and exp2 give the raw weights w_a, w_b; each element is (o_a * w_a + o_b * w_b) / s with
  s = w_a + w_b (a per-element division). The output LSE is (m + log2 s) * ln 2.
- Empty partials: +inf is mapped to -inf; when both are -inf the shift uses 0 instead of m,
  s = 0 is replaced by 1 and c_a = 1, c_b = 0, so o = o_a and lse = -inf without any NaN.
"""

import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@triton.jit
def _merge_attn_states_kernel(OA, LSEA, OB, LSEB, O, LSE, n_rows, T, H,
                              HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                              ROWS: tl.constexpr, EVEN: tl.constexpr):
    """o, lse = LSE-weighted merge of (o_a, lse_a) and (o_b, lse_b) for ROWS (token, head) rows."""
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < n_rows
    tok = rows // H
    head = rows - tok * H
    lse_off = head * T + tok

    # per-row weights, computed once in the log2 domain
    la = tl.load(LSEA + lse_off, mask=row_ok, other=float("-inf")) * 1.4426950408889634
    lb = tl.load(LSEB + lse_off, mask=row_ok, other=float("-inf")) * 1.4426950408889634
    la = tl.where(la == float("inf"), float("-inf"), la)
    lb = tl.where(lb == float("inf"), float("-inf"), lb)
    m = tl.maximum(la, lb)
    empty = m == float("-inf")
    m = tl.where(empty, 0.0, m)
    wa = tl.math.exp2(la - m)
    wb = tl.math.exp2(lb - m)
    s = wa + wb
    s = tl.where(empty, 1.0, s)
    wa = tl.where(empty, 1.0, wa)
    lse = tl.where(empty, float("-inf"), (m + tl.math.log2(s)) * 0.6931471805599453)
    tl.store(LSE + lse_off, lse, mask=row_ok)

    # one [ROWS, D] contiguous tile per tensor; raw weights, then a divide per element
    cols = tl.arange(0, BLOCK_D)
    base = tl.multiple_of(rows * HEAD_DIM, HEAD_DIM)
    offs = base[:, None] + tl.max_contiguous(tl.multiple_of(cols, BLOCK_D), BLOCK_D)[None, :]
    if EVEN:
        oa = tl.load(OA + offs)
        ob = tl.load(OB + offs)
    else:
        msk = row_ok[:, None] & (cols < HEAD_DIM)[None, :]
        oa = tl.load(OA + offs, mask=msk, other=0.0)
        ob = tl.load(OB + offs, mask=msk, other=0.0)
    o = (oa.to(tl.float32) * wa[:, None] + ob.to(tl.float32) * wb[:, None]) / s[:, None]
    o = o.to(O.dtype.element_ty)
    if EVEN:
        tl.store(O + offs, o)
    else:
        tl.store(O + offs, o, mask=msk)


def _pick(n_rows, D):
    """(ROWS, num_warps): about 8-16 KB of each input per program, 8 elements per thread per row."""
    if _INTERPRET:
        return 16, 4
    block_d = triton.next_power_of_2(D)
    rows = max(1, min(64, 4096 // block_d))           # D = 128 -> 32 rows: 8 KB of bf16 per input
    # keep >= ~4 programs per SM on small inputs (T = 256, H = 64 -> 16384 rows)
    while rows > 4 and triton.cdiv(n_rows, rows) < 4 * 132:
        rows //= 2
    warps = 4 if rows * block_d <= 4096 else 8
    return rows, warps


def run(o_a, lse_a, o_b, lse_b):
    T, H, D = o_a.shape
    o_a, o_b = o_a.contiguous(), o_b.contiguous()
    lse_a, lse_b = lse_a.contiguous(), lse_b.contiguous()
    o = torch.empty_like(o_a)
    lse = torch.empty((H, T), dtype=torch.float32, device=o_a.device)
    n_rows = T * H
    if n_rows == 0:
        return o, lse
    rows, warps = _pick(n_rows, D)
    block_d = triton.next_power_of_2(D)
    even = (block_d == D) and (n_rows % rows == 0)
    grid = (triton.cdiv(n_rows, rows),)
    _merge_attn_states_kernel[grid](o_a, lse_a, o_b, lse_b, o, lse, n_rows, T, H,
                                    HEAD_DIM=D, BLOCK_D=block_d, ROWS=rows, EVEN=even,
                                    num_warps=warps)
    return o, lse
