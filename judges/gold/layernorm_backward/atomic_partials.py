"""LayerNorm backward (dx, dw, db): the expert Triton implementation, two-stage dw/db reduction ablated.

Gold-set ablation `atomic_partials`: the expert (tasks/layernorm_backward/expert.py) except for
the reduction of dw and db over the programs: instead of writing one fp32 partial row per program
to a [programs, N] buffer and summing those in a second kernel, each program atomically adds its
fp32 register accumulators into two fp32 [N] accumulators (one tl.atomic_add per program and
column), which run converts to w's dtype at the end. The summation order, hence the fp32 result,
is not deterministic.

For x, dy: [M, N], w: [N] (one dtype, e.g. bfloat16) and the saved fp32 mean, rstd: [M]:

    xhat = (x - mean) * rstd,  g = w * dy
    dx   = rstd * (g - xhat * mean_n(xhat * g) - mean_n(g))          (per row, fp32, rounded once)
    dw   = sum_m dy * xhat,    db = sum_m dy                          (fp32, rounded once)

Design:
  * closed-form dx from the saved statistics: one pass per row, two row sums (c1, c2) taken from
    registers, no recomputation of mean or variance;
  * persistent row loop: about #SM * k programs (k = 2 for rows up to 4096 wide, else 1), each
    owning a contiguous range of ceil(M / programs) rows; the whole row of x and dy is one masked
    block of next_pow2(N) columns held in registers, w is loaded once per program;
  * the next row's x and dy are loaded before the current row is reduced (a register double
    buffer), where registers allow it (next_pow2(N) <= 8192);
  * dw and db are accumulated per program in fp32 registers, then added with tl.atomic_add into
    zero-initialised fp32 [N] tensors; one torch conversion to w's dtype rounds them once;
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
def _ln_bwd_dx_dwdb_kernel(
    X, W, DY, MEAN, RSTD, DX, DW_ACC, DB_ACC,
    stride_x, stride_dy, stride_dx,
    n_rows, n_cols, rows_per_prog,
    BLOCK_N: tl.constexpr,
    PREFETCH: tl.constexpr,      # double-buffer the next row in registers
    WIDE_INDEX: tl.constexpr,    # 64-bit row offsets
):
    dx_dtype = DX.dtype.element_ty
    pid = tl.program_id(0)
    cols = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK_N), BLOCK_N), BLOCK_N)
    mask = cols < n_cols
    row_start = pid * rows_per_prog
    row_end = tl.minimum(row_start + rows_per_prog, n_rows)
    if WIDE_INDEX:
        row_start = row_start.to(tl.int64)
        row_end = row_end.to(tl.int64)

    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK_N], dtype=tl.float32)

    if PREFETCH:
        # every program owns at least one row (the grid is cdiv(M, rows_per_prog))
        x_nxt = tl.load(X + row_start * stride_x + cols, mask=mask, other=0.0,
                        eviction_policy="evict_first")
        dy_nxt = tl.load(DY + row_start * stride_dy + cols, mask=mask, other=0.0,
                         eviction_policy="evict_first")
        mean_nxt = tl.load(MEAN + row_start)
        rstd_nxt = tl.load(RSTD + row_start)
    for row in range(row_start, row_end):
        if PREFETCH:
            x = x_nxt.to(tl.float32)
            dy = dy_nxt.to(tl.float32)
            mean = mean_nxt
            rstd = rstd_nxt
            # issue the next row's loads now; on the last row this re-reads the current row
            # (an L1/L2 hit) instead of branching
            nxt = tl.minimum(row + 1, row_end - 1)
            x_nxt = tl.load(X + nxt * stride_x + cols, mask=mask, other=0.0,
                            eviction_policy="evict_first")
            dy_nxt = tl.load(DY + nxt * stride_dy + cols, mask=mask, other=0.0,
                             eviction_policy="evict_first")
            mean_nxt = tl.load(MEAN + nxt)
            rstd_nxt = tl.load(RSTD + nxt)
        else:
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
        dw_acc += dy * xhat
        db_acc += dy

    tl.atomic_add(DW_ACC + cols, dw_acc, mask=mask)
    tl.atomic_add(DB_ACC + cols, db_acc, mask=mask)


_sm_count = {}


def _num_sms(device):
    if _INTERPRET or device.type != "cuda":
        return 4                     # CPU interpreter: a few programs, so the row loop is exercised
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
    sms = _num_sms(x.device)
    # 2 programs per SM while two fit in the register file (row <= 4096 wide), else 1
    per_sm = 2 if block_n <= 4096 else 1
    n_progs = min(M, sms * per_sm)
    rows_per_prog = triton.cdiv(M, n_progs)
    n_progs = triton.cdiv(M, rows_per_prog)
    num_warps = max(4, min(32, block_n // 256))       # 8 elements per thread up to 8192 columns
    prefetch = block_n <= 8192
    wide = M * max(x2.stride(0), dy2.stride(0), N) >= 2**31

    dw32 = torch.zeros((N,), dtype=torch.float32, device=x.device)
    db32 = torch.zeros((N,), dtype=torch.float32, device=x.device)
    _ln_bwd_dx_dwdb_kernel[(n_progs,)](
        x2, w, dy2, mean, rstd, dx, dw32, db32,
        x2.stride(0), dy2.stride(0), dx.stride(0),
        M, N, rows_per_prog,
        BLOCK_N=block_n, PREFETCH=prefetch, WIDE_INDEX=wide, num_warps=num_warps)
    dw.copy_(dw32)          # the one rounding to w's dtype
    db.copy_(db32)
    return dx.view(x.shape), dw, db
