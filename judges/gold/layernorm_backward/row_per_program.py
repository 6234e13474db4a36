"""LayerNorm backward (dx, dw, db): the expert Triton implementation, persistent row loop ablated.

Gold-set ablation `row_per_program`: the expert (tasks/layernorm_backward/expert.py) except that
the dx kernel is launched with one program per row instead of ~#SM programs that each loop over
a range of rows. Each program writes its row's dw/db contributions (dy * xhat and dy, fp32) as
one row of an [M, N] fp32 partial buffer, which the second kernel sums over the M rows.

For x, dy: [M, N], w: [N] (one dtype, e.g. bfloat16) and the saved fp32 mean, rstd: [M]:

    xhat = (x - mean) * rstd,  g = w * dy
    dx   = rstd * (g - xhat * mean_n(xhat * g) - mean_n(g))          (per row, fp32, rounded once)
    dw   = sum_m dy * xhat,    db = sum_m dy                          (fp32, rounded once)

Design:
  * closed-form dx from the saved statistics: one pass per row, two row sums (c1, c2) taken from
    registers, no recomputation of mean or variance;
  * grid = (M,): program m loads the whole row m of x and dy as one masked block of
    next_pow2(N) columns held in registers, writes dx[m] and the fp32 rows
    dw_part[m] = dy * xhat, db_part[m] = dy of two [M, N] partial buffers;
  * a second small kernel sums the M partial rows per column with tl.sum(axis=0) in fp32 (column
    tiles sized so its grid still covers the SMs) and casts once to w's dtype. No atomics,
    deterministic;
  * num_warps from the row width (8 elements of a row per thread up to 8192 columns, 32 warps
    beyond), contiguous column offsets with alignment hints for 16-byte vectors.
Dtypes come from the pointers, so the same code runs bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


@triton.jit
def _ln_bwd_dx_partials_kernel(
    X, W, DY, MEAN, RSTD, DX, DW_PART, DB_PART,
    stride_x, stride_dy, stride_dx,
    n_cols,
    BLOCK_N: tl.constexpr,
    WIDE_INDEX: tl.constexpr,    # 64-bit row offsets
):
    dx_dtype = DX.dtype.element_ty
    row = tl.program_id(0)
    if WIDE_INDEX:
        row = row.to(tl.int64)
    cols = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK_N), BLOCK_N), BLOCK_N)
    mask = cols < n_cols

    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0,
                eviction_policy="evict_first").to(tl.float32)
    dy = tl.load(DY + row * stride_dy + cols, mask=mask, other=0.0,
                 eviction_policy="evict_first").to(tl.float32)
    mean = tl.load(MEAN + row)
    rstd = tl.load(RSTD + row)
    xhat = (x - mean) * rstd            # junk in masked columns, but g and dy are 0 there
    g = w * dy
    c1 = tl.sum(xhat * g, axis=0) / n_cols
    c2 = tl.sum(g, axis=0) / n_cols
    dx = (g - (xhat * c1 + c2)) * rstd
    tl.store(DX + row * stride_dx + cols, dx.to(dx_dtype), mask=mask)

    part = row.to(tl.int64) * n_cols
    tl.store(DW_PART + part + cols, dy * xhat, mask=mask)
    tl.store(DB_PART + part + cols, dy, mask=mask)


@triton.jit
def _ln_bwd_sum_partials_kernel(
    DW_PART, DB_PART, DW, DB,
    n_parts, n_cols,
    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """dw[c] = sum_p DW_PART[p, c] and db[c] = sum_p DB_PART[p, c], fp32, cast once."""
    pid = tl.program_id(0)
    cols = pid * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < n_cols
    acc_w = tl.zeros([BLOCK_P, BLOCK_C], dtype=tl.float32)
    acc_b = tl.zeros([BLOCK_P, BLOCK_C], dtype=tl.float32)
    for p0 in range(0, n_parts, BLOCK_P):
        parts = p0 + tl.arange(0, BLOCK_P)
        m = (parts < n_parts)[:, None] & cmask[None, :]
        offs = parts.to(tl.int64)[:, None] * n_cols + cols[None, :]
        acc_w += tl.load(DW_PART + offs, mask=m, other=0.0)
        acc_b += tl.load(DB_PART + offs, mask=m, other=0.0)
    tl.store(DW + cols, tl.sum(acc_w, axis=0).to(DW.dtype.element_ty), mask=cmask)
    tl.store(DB + cols, tl.sum(acc_b, axis=0).to(DB.dtype.element_ty), mask=cmask)


_sm_count = {}


def _num_sms(device):
    if _INTERPRET or device.type != "cuda":
        return 4
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sm_count:
        _sm_count[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sm_count[idx]


def run(x, w, dy, mean, rstd):
    N = x.shape[-1]
    x2 = x.reshape(-1, N)
    dy2 = dy.reshape(-1, N)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    if dy2.stride(-1) != 1:
        dy2 = dy2.contiguous()
    w = w.contiguous()
    mean = mean.reshape(-1).contiguous()
    rstd = rstd.reshape(-1).contiguous()
    M = x2.shape[0]
    dx = torch.empty((M, N), dtype=x.dtype, device=x.device)
    dw = torch.empty((N,), dtype=w.dtype, device=w.device)
    db = torch.empty((N,), dtype=w.dtype, device=w.device)
    if M == 0 or N == 0:
        dw.zero_()
        db.zero_()
        return dx.view(x.shape), dw, db

    block_n = triton.next_power_of_2(N)
    num_warps = max(4, min(32, block_n // 256))       # 8 elements per thread up to 8192 columns
    wide = M * max(x2.stride(0), dy2.stride(0), N) >= 2**31

    # one fp32 partial row per input row
    dw_part = torch.empty((M, N), dtype=torch.float32, device=x.device)
    db_part = torch.empty((M, N), dtype=torch.float32, device=x.device)
    _ln_bwd_dx_partials_kernel[(M,)](
        x2, w, dy2, mean, rstd, dx, dw_part, db_part,
        x2.stride(0), dy2.stride(0), dx.stride(0),
        N,
        BLOCK_N=block_n, WIDE_INDEX=wide, num_warps=num_warps)

    # second stage: enough column tiles to cover the SMs
    sms = _num_sms(x.device)
    block_c = max(16, min(128, triton.next_power_of_2(triton.cdiv(N, sms))))
    block_p = max(8, min(64, 2048 // block_c))
    _ln_bwd_sum_partials_kernel[(triton.cdiv(N, block_c),)](
        dw_part, db_part, dw, db, M, N,
        BLOCK_P=block_p, BLOCK_C=block_c, num_warps=4)
    return dx.view(x.shape), dw, db
