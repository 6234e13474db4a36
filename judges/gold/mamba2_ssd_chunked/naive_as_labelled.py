# Frozen copy of tasks/mamba2_ssd_chunked/naive.py as judges/gold/mamba2_ssd_chunked/labels.toml labels it (this task's gold set
# is frozen, judges/splits.toml). The shipped naive has since split its row tile across programs
# (the same sequential recurrence; one program per sequence timed out at the bench shapes).
"""Mamba-2 SSD scan as one plain Triton kernel that steps the recurrence token by token.

Computes, per sequence b and head h (group g = h // (H // G)), from a zero state:
    dt_t = softplus(dt[b, t, h] + dt_bias[h])
    h_t  = exp(dt_t A[h]) h_{t-1} + dt_t x_t^T B_t        (state [P, N], fp32 in registers)
    y_t  = h_t C_t + D[h] x_t
One program per sequence walks all L tokens with every head's state in one [H * P, N] tile;
no chunking, no tensor cores.
Returns y (x's dtype) and final_state [batch, H, P, N] float32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _ssd_sequential(X, DT, DT_BIAS, A, B, C, D, Y, FINAL, L, H, G, P, N,
                    BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    """Sequential selective scan of one sequence, all heads at once: rows r = h * P + p of the
    [H * P, N] state live in one register tile; writes y and the final state."""
    b = tl.program_id(0)
    offs_r = tl.arange(0, BLOCK_R)
    offs_n = tl.arange(0, BLOCK_N)
    mask_r = offs_r < H * P
    mask_n = offs_n < N
    h = offs_r // P
    g = h // (H // G)
    a = tl.load(A + h, mask=mask_r, other=0.0)
    bias = tl.load(DT_BIAS + h, mask=mask_r, other=0.0)
    d = tl.load(D + h, mask=mask_r, other=0.0)
    mask_rn = mask_r[:, None] & mask_n[None, :]
    state = tl.zeros([BLOCK_R, BLOCK_N], dtype=tl.float32)
    for t in range(0, L):
        row = (b * L + t).to(tl.int64)
        v = tl.load(DT + row * H + h, mask=mask_r, other=0.0) + bias
        dt = tl.where(v > 20.0, v, tl.log(1.0 + tl.exp(tl.minimum(v, 20.0))))
        x = tl.load(X + row * H * P + offs_r, mask=mask_r, other=0.0).to(tl.float32)
        bc = (row * G + g)[:, None] * N + offs_n[None, :]
        bv = tl.load(B + bc, mask=mask_rn, other=0.0).to(tl.float32)
        cv = tl.load(C + bc, mask=mask_rn, other=0.0).to(tl.float32)
        state = state * tl.exp(dt * a)[:, None] + (dt * x)[:, None] * bv
        y = tl.sum(state * cv, axis=1) + d * x
        tl.store(Y + row * H * P + offs_r, y.to(Y.dtype.element_ty), mask=mask_r)
    fin = FINAL + b.to(tl.int64) * H * P * N + offs_r[:, None] * N + offs_n[None, :]
    tl.store(fin, state, mask=mask_rn)


def run(x, dt, dt_bias, A, B, C, D):
    batch, L, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    y = torch.empty_like(x)
    final = torch.empty(batch, H, P, N, device=x.device, dtype=torch.float32)
    # the whole [H * P, N] state of a sequence in one program: fine for the smoke shapes; at the
    # bench shapes (H * P = 5120-8192 rows of N = 128) it is far past the register file and slow
    _ssd_sequential[(batch,)](x, dt, dt_bias, A, B, C, D, y, final, L, H, G, P, N,
                              BLOCK_R=triton.next_power_of_2(H * P), BLOCK_N=triton.next_power_of_2(N))
    return y, final
