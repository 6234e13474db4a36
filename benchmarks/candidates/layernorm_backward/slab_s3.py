"""LayerNorm backward (dx, dw, db), expert Triton implementation.

For x, dy: [M, N], w: [N] (one dtype, e.g. bfloat16) and the saved fp32 mean, rstd: [M]:

    xhat = (x - mean) * rstd,  g = w * dy
    dx   = rstd * (g - xhat * mean_n(xhat * g) - mean_n(g))          (per row, fp32, rounded once)
    dw   = sum_m dy * xhat,    db = sum_m dy                          (fp32, rounded once)

Design (memory-bound: x and dy are read once from HBM, dx written once; everything else is small):
  * closed-form dx from the saved statistics: one pass per row, two row sums taken from registers
    in one two-operand tl.reduce (one set of shuffles and barriers for both), no recomputation of
    mean or variance. The sums are taken on xm * g and g (xm = x - mean) and rstd is folded into
    two per-row scalars: dx = rstd * g - (xm * rstd^3 * mean(xm * g) + rstd * mean(g));
  * rows of next_pow2(N) = 16384 (N = 15872): "slab" kernel. dw/db do not need the row sums, so
    they are split off by columns instead of being accumulated by whole-row programs (which kept
    2 x 16384 fp32 accumulators, half the register file, live in every program and left the
    expert spilling and one row in flight). The grid is [groups, 16] programs, ~#SM in all (8 x 16
    = 128 on 132 SMs); group g owns a contiguous range of rows_per_group rows, cut into bands of
    16 rows. At step t program (g, s) does
      - dx of row t * 16 + s of the group: the whole row as one masked block of BLOCK_N columns,
        held in registers (no accumulators next to it); w is held in fp32 registers;
      - dw/db of band t + LEAD, columns [s * 1024, (s + 1) * 1024): a [RA=4, RB=4, 1024] tile
        whose axis 0 is inside a thread, summed into [4, 1024] fp32 register accumulators.
    The 16 programs of a group read the band's 16 rows (HBM) for dx and, one step later, the same
    band again by column slices for dw/db: the second read is an L2 hit (each element is read
    twice from L2, once from HBM; ~12 MB of rows per step GPU-wide, LEAD = 0 keeps the re-read
    within ~2 steps, well inside the 60 MB L2). The tile loads are evict_first (their last use).
    Should the slab kernel fail to launch on a GPU (say a compiler that also pipelines the tile
    loads and runs out of shared memory), the call falls back, once per device, to the whole-row
    kernel below;
  * the dx-row loads are software-pipelined by Triton (tl.range(..., num_stages=3)): cp.async
    copies into shared memory two rows ahead (2 x 64 KB, so the L2-hit tile loads find more of
    the L1/shared carve-out and the prologue is shorter); the tile loads sit inside an `if` so
    the pipeliner leaves them as plain loads (L2 latency) instead of taking shared memory;
  * dw and db are written once per program as its column slice of one fp32 partial row per group
    ([groups, N], 8 x N here, ~1 MB, L2-resident); a second small kernel sums the partials over
    the groups with tl.sum(axis=0) (its loads pipelined), column tiles sized so its grid covers the
    SMs about twice, and casts once to w's dtype. On sm_90+ it is launched with programmatic
    dependent launch (griddepcontrol.wait before its first load), so its launch overlaps the first
    kernel's tail. No atomics, no locks, no spin-waits, deterministic;
  * other widths keep the whole-row persistent kernel: about #SM * k programs, each owning a
    contiguous range of ceil(M / programs) rows; the whole row of x and dy is one masked block of
    next_pow2(N) columns, loaded once per row, dw/db accumulated per program in fp32 registers and
    written once as a [programs, N] fp32 partial row; the row loop is pipelined by Triton
    (tl.range(..., num_stages=S), cp.async into shared memory). For next_pow2(N) > 16384 w is
    reloaded every row and the fp32 values are recomputed from the 16-bit operands after the row
    sums (bf16: an integer shift), which cuts ptxas's spills of the accumulators;
  * launch configuration (num_warps from the row width):
      next_pow2(N) <= 4096: whole-row kernel, k = 2 programs per SM of 8 warps (16 elements per
      thread), S = 4 (three rows in flight per program), maxnreg so that two fit;
      8192: whole-row kernel, 1 program per SM, 16 warps (16 elements per thread), S = 4;
      16384 (N = 15872): slab kernel, 16 warps (32 row elements per thread, 128 registers),
      num_stages = 3 (131 KB of shared memory), LEAD = 0, 1 program per SM, 16 x (#SM // 16)
      programs (sm_90, local Triton 3.9 compile: 128 registers, 12 bytes of spill);
      > 16384: whole-row kernel, 32 warps, S = 3, w reloaded, bf16 recompute.
    For the whole-row kernel the grid is capped by the occupancy of the compiled kernel
    (registers and shared memory read back from it), so a persistent grid never runs in two
    waves;
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
def _ln_bwd_slab_kernel(
    X, W, DY, MEAN, RSTD, DX, DW_PART, DB_PART,
    stride_x, stride_dy, stride_dx,
    n_rows, n_cols, rows_per_group, n_steps,
    BLOCK_N: tl.constexpr,       # next_pow2(N): one whole row per program and step (dx)
    SLICES: tl.constexpr,        # programs per row group = rows per band = column slices
    SLICE_C: tl.constexpr,       # columns of one slice (BLOCK_N // SLICES)
    RA: tl.constexpr,            # band rows held inside a thread (RA * RB = SLICES)
    RB: tl.constexpr,            # band rows across warps
    LEAD: tl.constexpr,          # the dw/db tile is LEAD bands ahead of the dx row (<= STAGES - 2)
    STAGES: tl.constexpr,        # software-pipelining depth of the dx-row loads (cp.async)
    WIDE_INDEX: tl.constexpr,    # 64-bit row offsets
):
    """Program (group, slice) of a [groups, SLICES] grid. Step t (t = -LEAD .. n_steps - 1):
      * dx of row group_start + t * SLICES + slice: the whole row, closed form (t >= 0);
      * dw/db of the [SLICES rows, SLICE_C columns] tile of band t + LEAD of its group, in its
        own column slice. The rows of that band were requested STAGES - 1 - LEAD steps earlier
        by the cp.async prefetch of the group's 16 programs (one row each), so this read is an
        L2 hit. The per-slice dw/db sums stay in registers: [RB, SLICE_C] fp32.
    """
    dx_dtype = DX.dtype.element_ty
    pid = tl.program_id(0)
    grp = pid // SLICES
    sl = pid % SLICES
    inv_n = 1.0 / n_cols
    # the dx row: whole row, one masked block of BLOCK_N columns
    cols = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK_N), BLOCK_N), BLOCK_N)
    cmask = cols < n_cols
    w_row = tl.load(W + cols, mask=cmask, other=0.0).to(tl.float32)
    # the dw/db tile: [RA, RB, SLICE_C]; axis 0 lives inside a thread, so the per-step sum over
    # the band rows is register adds and the one cross-warp sum (over RB) is left to the end
    ta = tl.arange(0, RA)[:, None, None]
    tb = tl.arange(0, RB)[None, :, None]
    tcols = sl * SLICE_C + tl.max_contiguous(
        tl.multiple_of(tl.arange(0, SLICE_C), SLICE_C), SLICE_C)[None, None, :]
    tcmask = tcols < n_cols
    band_row = ta * RB + tb                                   # row inside a band, [RA, RB, 1]
    group_start = grp * rows_per_group
    group_end = tl.minimum(group_start + rows_per_group, n_rows)
    if WIDE_INDEX:
        group_start = group_start.to(tl.int64)
        group_end = group_end.to(tl.int64)
    dw_acc = tl.zeros([RB, SLICE_C], dtype=tl.float32)
    db_acc = tl.zeros([RB, SLICE_C], dtype=tl.float32)

    for step in tl.range(-LEAD, n_steps, num_stages=STAGES):
        # ---- dx of one whole row (closed form from the saved mean / rstd) ----
        r = group_start + tl.maximum(step, 0) * SLICES + sl
        r_ok = (step >= 0) & (r < group_end)
        m_r = cmask & r_ok
        xr = tl.load(X + r * stride_x + cols, mask=m_r, other=0.0)
        dyr = tl.load(DY + r * stride_dy + cols, mask=m_r, other=0.0)
        mean_r = tl.load(MEAN + r, mask=r_ok, other=0.0)
        rstd_r = tl.load(RSTD + r, mask=r_ok, other=0.0)
        xm = xr.to(tl.float32) - mean_r
        g = w_row * dyr.to(tl.float32)
        # the two row sums c1' = sum(xm * g), c2' = sum(g) in one two-operand reduction
        s1, s2 = tl.reduce((xm * g, g), 0, _add2)
        k1 = (s1 * inv_n) * (rstd_r * rstd_r * rstd_r)          # rstd^2 * c1
        k2 = (s2 * inv_n) * rstd_r                              # rstd * c2
        dx = rstd_r * g - (xm * k1 + k2)
        tl.store(DX + r * stride_dx + cols, dx.to(dx_dtype), mask=m_r)
        # ---- dw / db of this program's column slice of band step + LEAD ----
        # (inside an `if`: these loads are plain L2 reads, not part of the cp.async pipeline,
        # which keeps the shared memory for the dx rows)
        band = step + LEAD
        if band * SLICES < rows_per_group:     # band < n_steps, in a form no pass can fold
            tr = group_start + band * SLICES + band_row         # [RA, RB, 1]
            t_ok = tr < group_end
            m_t = t_ok & tcmask
            xt = tl.load(X + tr * stride_x + tcols, mask=m_t, other=0.0,
                         eviction_policy="evict_first")
            dyt = tl.load(DY + tr * stride_dy + tcols, mask=m_t, other=0.0,
                          eviction_policy="evict_first")
            mean_t = tl.load(MEAN + tr, mask=t_ok, other=0.0)
            rstd_t = tl.load(RSTD + tr, mask=t_ok, other=0.0)
            dyt32 = dyt.to(tl.float32)
            dw_acc += tl.sum(dyt32 * ((xt.to(tl.float32) - mean_t) * rstd_t), axis=0)
            db_acc += tl.sum(dyt32, axis=0)

    # one fp32 partial row per group: this program writes its column slice of it
    pcols = sl * SLICE_C + tl.arange(0, SLICE_C)
    pmask = pcols < n_cols
    part = grp.to(tl.int64) * n_cols
    tl.store(DW_PART + part + pcols, tl.sum(dw_acc, axis=0), mask=pmask)
    tl.store(DB_PART + part + pcols, tl.sum(db_acc, axis=0), mask=pmask)


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
    return dict(BLOCK_N=block_n, ROWS=1, STAGES=3, W_RELOAD=True, per_sm=1,
                num_warps=32, RECOMPUTE_BITS=True)


# The row-group / column-slice ("slab") kernel for next_pow2(N) = 16384: 16 slices of 1024
# columns, 16 warps (RB = 4 band rows across warps, RA = 4 inside a thread), 1 program per SM.
_SLAB = dict(SLICES=16, SLICE_C=1024, RA=4, RB=4, LEAD=0, STAGES=3, num_warps=16)


def _use_slab(N):
    return triton.next_power_of_2(N) == _SLAB["SLICES"] * _SLAB["SLICE_C"]


_dev_info = {}
_resident = {}
_pdl_ok = {}
_slab_ok = {}


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


def _launch_rows(x, x2, w, dy2, mean, rstd, dx, M, N, wide, gpu):
    """The persistent whole-row kernel (next_pow2(N) != 16384); returns its partial buffers."""
    cfg = _config(M, N)
    num_warps = cfg["num_warps"]
    launch = dict(num_warps=num_warps)
    bf16_bits = (cfg["RECOMPUTE_BITS"] and not _INTERPRET and x.dtype == torch.bfloat16
                 and w.dtype == torch.bfloat16 and dy2.dtype == torch.bfloat16)
    meta = dict(BLOCK_N=cfg["BLOCK_N"], ROWS=cfg["ROWS"], STAGES=cfg["STAGES"],
                W_RELOAD=cfg["W_RELOAD"], BF16_BITS=bf16_bits, WIDE_INDEX=wide)
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
    return n_progs, dw_part, db_part


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

    gpu = x.is_cuda and not _INTERPRET
    wide = M * max(x2.stride(0), dy2.stride(0), N) >= 2**31
    sms = _device_info(x.device)[0] if gpu else 4
    slab = _use_slab(N) and _slab_ok.get(x.device.index if gpu else -1, True)
    if slab:
        slices = _SLAB["SLICES"]
        n_groups = max(1, min(triton.cdiv(M, slices), sms // slices))
        n_steps = triton.cdiv(triton.cdiv(M, n_groups), slices)
        rows_per_group = n_steps * slices
        n_groups = triton.cdiv(M, rows_per_group)
        n_progs = n_groups                       # partial rows for the second stage
        dw_part = torch.empty((n_groups, N), dtype=torch.float32, device=x.device)
        db_part = torch.empty((n_groups, N), dtype=torch.float32, device=x.device)
        try:
            _ln_bwd_slab_kernel[(n_groups * slices,)](
                x2, w, dy2, mean, rstd, dx, dw_part, db_part,
                x2.stride(0), dy2.stride(0), dx.stride(0),
                M, N, rows_per_group, n_steps,
                BLOCK_N=slices * _SLAB["SLICE_C"], SLICES=slices, SLICE_C=_SLAB["SLICE_C"],
                RA=_SLAB["RA"], RB=_SLAB["RB"], LEAD=_SLAB["LEAD"], STAGES=_SLAB["STAGES"],
                WIDE_INDEX=wide, num_warps=_SLAB["num_warps"])
        except Exception:
            # e.g. a compiler that puts the tile loads into the cp.async pipeline too and runs
            # out of shared memory: fall back (once per device) to the whole-row kernel
            if not gpu:
                raise
            _slab_ok[x.device.index] = False
            slab = False
    if not slab:
        n_progs, dw_part, db_part = _launch_rows(x, x2, w, dy2, mean, rstd, dx, M, N, wide, gpu)

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
