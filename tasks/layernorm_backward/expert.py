"""LayerNorm backward (dx, dw, db), expert Triton implementation.

For x, dy: [M, N], w: [N] (one dtype, e.g. bfloat16) and the saved fp32 mean, rstd: [M]:

    xhat = (x - mean) * rstd,  g = w * dy
    dx   = rstd * (g - xhat * mean_n(xhat * g) - mean_n(g))          (per row, fp32, rounded once)
    dw   = sum_m dy * xhat,    db = sum_m dy                          (fp32, rounded once)

Design (memory-bound: x and dy are read once, dx written once; everything else is small):
  * closed-form dx from the saved statistics: one pass per row, two row sums taken from registers
    in one two-operand tl.reduce (one set of shuffles and barriers for both), no recomputation of
    mean or variance. The sums are taken on xm * g and g (xm = x - mean) and rstd is folded into
    two per-row scalars: dx = rstd * g - (xm * rstd^3 * mean(xm * g) + rstd * mean(g));
  * persistent row loop: about #SM * k programs, each owning a contiguous range of
    ceil(M / programs) rows; the whole row of x and dy is one masked block of next_pow2(N)
    columns, loaded once per row;
  * the row loop is software-pipelined by Triton (tl.range(..., num_stages=S)): the loads of the
    next S - 1 rows are issued as asynchronous copies (cp.async) into shared memory while the
    current one is reduced, so the bytes in flight sit in shared memory, not in registers (the
    registers hold the dw/db accumulators, which at N = 15872 take half the register file);
  * for the widest rows (next_pow2(N) = 16384) w is reloaded every row through the same pipeline
    (an L2 hit) instead of being held in registers, and after the row sums the fp32 values are
    recomputed from the 16-bit operands (for bf16 a shift, written as an integer bit-cast so the
    compiler cannot merge it with the first conversion): only the 16-bit row and the accumulators
    stay live across the reduction barriers, which cuts ptxas's spills of the accumulators
    (sm_90, Triton 3.9, 16 warps: ~100 bytes);
  * dw and db are accumulated per program in fp32 registers and written once as fp32 partial rows
    of a [programs, N] buffer (<= ~17 MB, so it stays in the 60 MB L2); a second small kernel
    sums the partials over the programs with tl.sum(axis=0) (its loads pipelined the same way),
    column tiles sized so its grid covers the SMs about twice, and casts once to w's dtype. On
    sm_90+ it is launched with programmatic dependent launch (griddepcontrol.wait before its
    first load), so its launch overlaps the first kernel's tail. No atomics, no locks,
    deterministic;
  * launch configuration (_config), num_warps from the row width:
      next_pow2(N) <= 4096: k = 2 programs per SM of 8 warps (16 elements per thread), S = 4
      (three rows in flight per program, ~60 KB per SM at N = 2560);
      8192: 1 program per SM, 16 warps (16 elements per thread), S = 4 (three rows in flight);
      16384 (N = 15872): 1 program per SM, 16 warps (32 elements per thread, 128 registers:
      half the warps, so about half the per-warp address, shuffle and barrier work per row,
      measured 212 us against 225 us for 32 warps in round 1's pipe_w16), S = 3 with w reloaded
      and the bf16 recompute (S = 4 would not fit in shared memory);
      > 16384: 32 warps, otherwise as 16384.
    Where k = 2 programs per SM, the launch caps registers (maxnreg) so that two really fit, and
    in every case the grid is capped by the occupancy of the compiled kernel (registers and
    shared memory read back from it), so a persistent grid never runs in two waves;
  * contiguous column offsets with alignment hints for 16-byte vectors.
Dtypes come from the pointers, so the same code runs bf16 on the GPU and fp16 under
TRITON_INTERPRET=1 (where the bf16 bit-cast path is replaced by a plain conversion).
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


@triton.jit
def _add2(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@triton.jit
def _to_f32(v, BF16_BITS: tl.constexpr):
    """16-bit -> fp32. For bf16 the bits shifted into the high half, as an integer op."""
    if BF16_BITS:
        return (v.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    else:
        return v.to(tl.float32)


@triton.jit
def _ln_bwd_dx_partials_kernel(
    X, W, DY, MEAN, RSTD, DX, DW_PART, DB_PART,
    stride_x, stride_dy, stride_dx,
    n_rows, n_cols, rows_per_prog,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,          # rows per loop iteration (a [ROWS, BLOCK_N] tile)
    STAGES: tl.constexpr,        # software-pipelining depth of the row loop (cp.async)
    W_RELOAD: tl.constexpr,      # load w inside the loop instead of holding it in registers
    BF16_BITS: tl.constexpr,     # inputs are bf16: recompute fp32 by a shift after the reduction
    WIDE_INDEX: tl.constexpr,    # 64-bit row offsets
):
    dx_dtype = DX.dtype.element_ty
    pid = tl.program_id(0)
    cols = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK_N), BLOCK_N), BLOCK_N)
    cmask = cols < n_cols
    row_start = pid * rows_per_prog
    row_end = tl.minimum(row_start + rows_per_prog, n_rows)
    if WIDE_INDEX:
        row_start = row_start.to(tl.int64)
        row_end = row_end.to(tl.int64)
    inv_n = 1.0 / n_cols

    if not W_RELOAD:
        w_keep = tl.load(W + cols, mask=cmask, other=0.0)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK_N], dtype=tl.float32)

    for row0 in tl.range(row_start, row_end, ROWS, num_stages=STAGES):
        rows = row0 + tl.arange(0, ROWS)
        rmask = rows < row_end
        mask = rmask[:, None] & cmask[None, :]
        xb = tl.load(X + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
        dyb = tl.load(DY + rows[:, None] * stride_dy + cols[None, :], mask=mask, other=0.0)
        mean = tl.load(MEAN + rows, mask=rmask, other=0.0)[:, None]
        rstd = tl.load(RSTD + rows, mask=rmask, other=0.0)[:, None]
        if W_RELOAD:
            wb = tl.load(W + cols, mask=cmask, other=0.0)
        else:
            wb = w_keep
        # the two row sums: c1' = mean(xm * g), c2' = mean(g), xm = x - mean, g = w * dy
        # (masked columns: x = dy = w = 0, so g = 0 and they add nothing)
        xm = xb.to(tl.float32) - mean
        g = wb.to(tl.float32)[None, :] * dyb.to(tl.float32)
        s1, s2 = tl.reduce((xm * g, g), 1, _add2)
        k1 = (s1 * inv_n)[:, None] * (rstd * rstd * rstd)  # rstd^2 * c1, c1 = mean(xhat * g)
        k2 = (s2 * inv_n)[:, None] * rstd                  # rstd * c2
        # dx and the dw/db updates from the 16-bit operands again (see the docstring)
        xm2 = _to_f32(xb, BF16_BITS) - mean
        dy2 = _to_f32(dyb, BF16_BITS)
        g2 = _to_f32(wb, BF16_BITS)[None, :] * dy2
        dx = rstd * g2 - (xm2 * k1 + k2)
        tl.store(DX + rows[:, None] * stride_dx + cols[None, :], dx.to(dx_dtype), mask=mask)
        dw_acc += tl.sum((dy2 * rstd) * xm2, axis=0)       # dy * xhat
        db_acc += tl.sum(dy2, axis=0)

    part = pid.to(tl.int64) * n_cols
    tl.store(DW_PART + part + cols, dw_acc, mask=cmask)
    tl.store(DB_PART + part + cols, db_acc, mask=cmask)


@triton.jit
def _ln_bwd_sum_partials_kernel(
    DW_PART, DB_PART, DW, DB,
    n_parts, n_cols,
    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr, STAGES: tl.constexpr,
    USE_PDL: tl.constexpr,
):
    """dw[c] = sum_p DW_PART[p, c] and db[c] = sum_p DB_PART[p, c], fp32, cast once."""
    pid = tl.program_id(0)
    cols = pid * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < n_cols
    if USE_PDL:
        tl.extra.cuda.gdc_wait()          # the partials of the previous kernel are complete
    acc_w = tl.zeros([BLOCK_P, BLOCK_C], dtype=tl.float32)
    acc_b = tl.zeros([BLOCK_P, BLOCK_C], dtype=tl.float32)
    for p0 in tl.range(0, n_parts, BLOCK_P, num_stages=STAGES):
        parts = p0 + tl.arange(0, BLOCK_P)
        m = (parts < n_parts)[:, None] & cmask[None, :]
        offs = parts.to(tl.int64)[:, None] * n_cols + cols[None, :]
        acc_w += tl.load(DW_PART + offs, mask=m, other=0.0)
        acc_b += tl.load(DB_PART + offs, mask=m, other=0.0)
    tl.store(DW + cols, tl.sum(acc_w, axis=0).to(DW.dtype.element_ty), mask=cmask)
    tl.store(DB + cols, tl.sum(acc_b, axis=0).to(DB.dtype.element_ty), mask=cmask)


def _config(M, N):
    """Launch configuration of the dx kernel for a row width N."""
    block_n = triton.next_power_of_2(N)
    if block_n <= 4096:
        return dict(BLOCK_N=block_n, ROWS=1, STAGES=4, W_RELOAD=False, per_sm=2,
                    num_warps=max(4, min(8, block_n // 512)), RECOMPUTE_BITS=False)
    if block_n <= 8192:
        return dict(BLOCK_N=block_n, ROWS=1, STAGES=4, W_RELOAD=False, per_sm=1,
                    num_warps=16, RECOMPUTE_BITS=False)
    if block_n <= 16384:
        return dict(BLOCK_N=block_n, ROWS=1, STAGES=3, W_RELOAD=True, per_sm=1,
                    num_warps=16, RECOMPUTE_BITS=True)
    return dict(BLOCK_N=block_n, ROWS=1, STAGES=3, W_RELOAD=True, per_sm=1,
                num_warps=32, RECOMPUTE_BITS=True)


_dev_info = {}
_resident = {}
_pdl_ok = {}


def _device_info(device):
    """(SM count, registers per SM, shared memory per SM) of a CUDA device."""
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _dev_info:
        p = torch.cuda.get_device_properties(idx)
        _dev_info[idx] = (p.multi_processor_count,
                          int(getattr(p, "regs_per_multiprocessor", 65536) or 65536),
                          int(getattr(p, "shared_memory_per_multiprocessor", 233472) or 233472))
    return _dev_info[idx]


def _programs_per_sm(kernel, args, meta, launch, want, device):
    """min(want, the number of programs of this compiled kernel that fit on one SM)."""
    num_warps = launch["num_warps"]
    key = (device.index, tuple(sorted(meta.items())), tuple(sorted(launch.items())), want,
           args[0].dtype)
    if key not in _resident:
        fit = want
        try:
            ck = kernel.warmup(*args, grid=(1,), **launch, **meta)
            ck._init_handles()
            _, regs_sm, smem_sm = _device_info(device)
            regs = max(int(ck.n_regs), 1)
            per_warp = -(-regs * 32 // 256) * 256                  # allocation unit: 256 / warp
            by_regs = regs_sm // (per_warp * num_warps)
            smem = int(ck.metadata.shared)
            by_smem = smem_sm // (smem + 1024) if smem else want
            by_threads = 2048 // (32 * num_warps)
            fit = max(1, min(want, by_regs, by_smem, by_threads))
        except Exception:
            fit = want
        _resident[key] = fit
    return _resident[key]


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

    cfg = _config(M, N)
    num_warps = cfg["num_warps"]
    launch = dict(num_warps=num_warps)
    wide = M * max(x2.stride(0), dy2.stride(0), N) >= 2**31
    bf16_bits = (cfg["RECOMPUTE_BITS"] and not _INTERPRET and x.dtype == torch.bfloat16
                 and w.dtype == torch.bfloat16 and dy.dtype == torch.bfloat16)
    meta = dict(BLOCK_N=cfg["BLOCK_N"], ROWS=cfg["ROWS"], STAGES=cfg["STAGES"],
                W_RELOAD=cfg["W_RELOAD"], BF16_BITS=bf16_bits, WIDE_INDEX=wide)
    gpu = x.is_cuda and not _INTERPRET
    if gpu:
        if cfg["per_sm"] > 1:
            # cap the registers so that per_sm programs really fit on one SM
            launch["maxnreg"] = min(255, 65536 // (cfg["per_sm"] * 32 * num_warps)) // 8 * 8
        sms = _device_info(x.device)[0]
        f32 = torch.empty((1,), dtype=torch.float32, device=x.device)
        probe = (x2, w, dy2, mean, rstd, dx, f32, f32, x2.stride(0), dy2.stride(0), dx.stride(0),
                 M, N, triton.cdiv(M, min(M, sms * cfg["per_sm"])))
        per_sm = _programs_per_sm(_ln_bwd_dx_partials_kernel, probe, meta, launch,
                                  cfg["per_sm"], x.device)
    else:
        sms, per_sm = 4, 1           # CPU interpreter: a few programs, so the row loop is exercised
    n_progs = min(M, sms * per_sm)
    rows_per_prog = triton.cdiv(M, n_progs)
    n_progs = triton.cdiv(M, rows_per_prog)

    dw_part = torch.empty((n_progs, N), dtype=torch.float32, device=x.device)
    db_part = torch.empty((n_progs, N), dtype=torch.float32, device=x.device)
    _ln_bwd_dx_partials_kernel[(n_progs,)](
        x2, w, dy2, mean, rstd, dx, dw_part, db_part,
        x2.stride(0), dy2.stride(0), dx.stride(0),
        M, N, rows_per_prog, **launch, **meta)

    # second stage: about two programs per SM, a [BLOCK_P, BLOCK_C] step of 2048 partials
    # (16 fp32 per thread per accumulator at 4 warps), loads pipelined
    block_c = max(16, min(64, triton.next_power_of_2(triton.cdiv(N, 2 * sms))))
    block_p = max(8, min(128, 2048 // block_c))
    grid2 = (triton.cdiv(N, block_c),)
    args2 = (dw_part, db_part, dw, db, n_progs, N)
    meta2 = dict(BLOCK_P=block_p, BLOCK_C=block_c, STAGES=3, num_warps=4)
    if not gpu:
        _ln_bwd_sum_partials_kernel[grid2](*args2, USE_PDL=False, **meta2)
        return dx.view(x.shape), dw, db
    dev = x.device.index
    pdl = _pdl_ok.get(dev)
    if pdl is None:
        pdl = torch.cuda.get_device_capability(x.device)[0] >= 9
        if pdl:
            try:
                _ln_bwd_sum_partials_kernel[grid2](*args2, USE_PDL=True, launch_pdl=True, **meta2)
                _pdl_ok[dev] = True
                return dx.view(x.shape), dw, db
            except Exception:
                pdl = False
        _pdl_ok[dev] = pdl
    if pdl:
        _ln_bwd_sum_partials_kernel[grid2](*args2, USE_PDL=True, launch_pdl=True, **meta2)
    else:
        _ln_bwd_sum_partials_kernel[grid2](*args2, USE_PDL=False, **meta2)
    return dx.view(x.shape), dw, db
