"""LayerNorm backward (dx, dw, db): whole rows for N <= 8192, column-split teams above.

For x, dy: [M, N], w: [N] (one dtype, e.g. bfloat16) and the saved fp32 mean, rstd: [M]:

    xhat = (x - mean) * rstd,  g = w * dy
    dx   = rstd * (g - xhat * mean_n(xhat * g) - mean_n(g))          (per row, fp32, rounded once)
    dw   = sum_m dy * xhat,    db = sum_m dy                          (fp32, rounded once)

Design (memory-bound: x and dy are read once, dx written once; everything else is small):
  * closed-form dx from the saved statistics (no recomputation of mean or variance): the two row
    sums are taken on xm * g and g (xm = x - mean) in one two-operand tl.reduce, and rstd is
    folded into two per-row scalars: dx = rstd * g - (xm * rstd^3 * mean(xm * g) + rstd * mean(g));
  * N <= 8192: the shipped whole-row kernel unchanged (about #SM * k persistent programs, each
    owning a contiguous range of rows, the whole row one masked block of next_pow2(N) columns,
    the row loop software-pipelined by Triton into cp.async copies, dw/db accumulated per program
    in fp32 registers and written once as a partial row);
  * 8192 < N <= 16384 (the N = 15872 shape): one program per SM cannot hold the fp32 dw/db
    accumulators of a whole row (2 x 16384 x 4 B = half the register file) next to the row
    itself: the shipped kernel spilled and ran latency-bound at ~0.44 of the memory roofline.
    Here each row is split into TEAM = 2 column slices (16-byte aligned, each one masked block
    of next_pow2(slice) columns), owned by the two programs of a team, which walk the same
    contiguous row range. Each program keeps only its slice's accumulators (half the registers:
    no spills), loads its slice of x and dy once per row (cp.async pipeline, STAGES deep) and
    takes its slice's part of the two row sums. The parts are exchanged through global memory:
    each program publishes its two sums as 64-bit words tagged with the call's generation
    number (relaxed gpu-scope stores, self-validating, so no flag, fence or per-call memset)
    and reads its partner's words of the row. The exchange is lagged by one row: in step i a
    program publishes row i's part and then finishes dx of row i - 1 (held as 16-bit values in
    registers), whose partner part was published a whole step earlier, so the wait is normally
    one L2 read. dw/db of row i are accumulated in step i (they need no row sums). Both members
    add the same two fp32 parts, so both compute identical sums. The publish and the bounded
    spin-wait are one inline-PTX block; teams are formed only when the whole grid fits on the
    GPU in one wave (the grid is capped by the compiled kernel's occupancy, read back from it),
    so a partner is always resident and no deadlock is possible; the bounded spin (~0.2 s)
    would turn a broken assumption into a wrong result instead of a hang;
  * bf16 operands of the team kernel are widened by inline PTX on the packed pairs (one
    instruction per element: a shift for the low half, a mask for the high half);
  * dw/db: fp32 partial rows in a [programs (or teams), N] buffer (<= ~17 MB, stays in the 60 MB
    L2), summed over the partials by a second small kernel with tl.sum(axis=0) (loads
    pipelined, grid about two programs per SM) and cast once to w's dtype; on sm_90+ launched
    with programmatic dependent launch (griddepcontrol.wait before its first load). No atomics
    on dw/db, deterministic;
  * launch configuration, num_warps from the row width: next_pow2(N) <= 4096: 2 programs per SM
    of 8 warps, S = 4; 8192: 1 program per SM, 16 warps, S = 4; teams (8192 < N <= 16384): one
    program per SM per slice, 8 warps (32 elements per thread, 255 registers, no spill: 793
    SASS instructions per step, 20 % fewer warp-instructions per row than with 16 warps, at
    2 warps per scheduler), S = 4 (96 KB of shared memory); > 16384: the whole-row kernel with
    32 warps, w reloaded every row and the fp32 values recomputed from the 16-bit operands
    after the row sums;
  * fallbacks: the team path runs only on a CUDA device; if it fails to compile or launch (e.g.
    a Triton that refuses the inline PTX) the call takes the whole-row kernel, once per device.
    Under TRITON_INTERPRET=1 (programs run one after another, so nothing could be waited for)
    the same team kernel runs with TEAM = 1 (whole rows, no exchange, the same lagged loop).
Dtypes come from the pointers, so the same code runs bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
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


_TEAM_WARPS = 8
_TEAM_STAGES = 4

# ----------------------------------------------------------------------------------------------
# Wide rows (8192 < N <= 16384): column-split teams of two programs exchanging the row sums.
# ----------------------------------------------------------------------------------------------

# Publish this member's two partial row sums (each as a 64-bit word: low half the fp32 bits,
# high half the call's generation number), then wait for the partner's words of the previous
# row carrying the same generation. Relaxed gpu-scope accesses: each word is single-copy atomic
# and carries its own validity (the generation), so no fence or flag is needed. The spin is
# bounded (2^18 polls, ~0.2 s): if a partner never arrives the call computes a wrong dx (caught
# by any check) instead of hanging the GPU.
_XCHG_ASM = tl.constexpr("""
{
.reg .pred %pp, %pw;
.reg .b64 %wa, %wb, %va, %vb;
.reg .b32 %la, %ha, %lb, %hb, %cnt;
setp.ne.s32 %pp, $5, 0;
mov.b64 %wa, {$3, $7};
mov.b64 %wb, {$4, $7};
@%pp st.relaxed.gpu.global.b64 [$2], %wa;
@%pp st.relaxed.gpu.global.b64 [$2+8], %wb;
mov.b32 %la, 0;
mov.b32 %lb, 0;
setp.eq.s32 %pw, $8, 0;
@%pw bra XDONE${:uid};
mov.u32 %cnt, 0;
XSPIN${:uid}:
ld.relaxed.gpu.global.b64 %va, [$6];
ld.relaxed.gpu.global.b64 %vb, [$6+8];
mov.b64 {%la, %ha}, %va;
mov.b64 {%lb, %hb}, %vb;
setp.eq.s32 %pw, %ha, $7;
setp.eq.and.s32 %pw, %hb, $7, %pw;
@%pw bra XDONE${:uid};
add.u32 %cnt, %cnt, 1;
setp.lt.u32 %pw, %cnt, 262144;
@%pw bra XSPIN${:uid};
XDONE${:uid}:
mov.b32 $0, %la;
mov.b32 $1, %lb;
}
""")


@triton.jit
def _widen(v, BF16_ASM: tl.constexpr):
    """16-bit -> fp32. For bf16 on the GPU: one instruction per element on the packed pairs (a
    shift for the low half, a mask for the high half) instead of the compiler's two for the high
    half."""
    if BF16_ASM:
        return tl.inline_asm_elementwise(
            asm="shl.b32 $0, $2, 16;\n and.b32 $1, $2, 0xffff0000;",
            constraints="=r,=r,r", args=[v], dtype=tl.float32, is_pure=True, pack=2)
    else:
        return v.to(tl.float32)


@triton.jit
def _exchange(my_slot, s1, s2, publish, partner_slot, gen, wait, SPIN: tl.constexpr):
    """(partner's s1, partner's s2) of the previous row, after publishing this row's (s1, s2)."""
    if SPIN:
        p1, p2 = tl.inline_asm_elementwise(
            asm=_XCHG_ASM,
            constraints="=r,=r,l,r,r,r,l,r,r",
            args=[my_slot, s1.to(tl.int32, bitcast=True), s2.to(tl.int32, bitcast=True),
                  publish.to(tl.int32), partner_slot, gen, wait.to(tl.int32)],
            dtype=(tl.int32, tl.int32), is_pure=False, pack=1)
        return p1.to(tl.float32, bitcast=True), p2.to(tl.float32, bitcast=True)
    else:
        # CPU interpreter (programs run one after another, so nothing can be waited for): the
        # words are read once; the test harness pre-fills them. Same layout as the GPU path.
        hi = gen.to(tl.int64) << 32
        w1 = hi | (s1.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)
        w2 = hi | (s2.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)
        tl.store(my_slot, w1, mask=publish)
        tl.store(my_slot + 1, w2, mask=publish)
        v1 = tl.load(partner_slot, mask=wait, other=0)
        v2 = tl.load(partner_slot + 1, mask=wait, other=0)
        return ((v1 & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True),
                (v2 & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True))


@triton.jit(do_not_specialize=["gen"])
def _ln_bwd_team_kernel(
    X, W, DY, MEAN, RSTD, DX, DW_PART, DB_PART, XCHG,
    stride_x, stride_dy, stride_dx,
    n_rows, n_cols, n_groups, slice_n, gen,
    BLOCK: tl.constexpr,         # next_pow2(slice_n)
    TEAM: tl.constexpr,          # 1 (whole rows, no exchange) or 2 (two column halves)
    STAGES: tl.constexpr,        # software-pipelining depth of the row loop (cp.async)
    SPIN: tl.constexpr,          # GPU: publish + spin-wait in PTX; interpreter: plain accesses
    BF16_ASM: tl.constexpr,      # bf16 operands widened by inline PTX (GPU only)
    WIDE_INDEX: tl.constexpr,
    PAIRED_SUM: tl.constexpr,    # GPU: both row sums in one tl.reduce; interpreter: two tl.sum
):
    dx_dtype = DX.dtype.element_ty
    pid = tl.program_id(0)
    grp = pid // TEAM
    mem = pid - grp * TEAM
    row_start = (grp.to(tl.int64) * n_rows // n_groups).to(tl.int32)
    row_end = ((grp.to(tl.int64) + 1) * n_rows // n_groups).to(tl.int32)
    if WIDE_INDEX:
        row_start = row_start.to(tl.int64)
        row_end = row_end.to(tl.int64)
    lane = tl.arange(0, BLOCK)
    cols = mem * slice_n + lane            # slice_n is a multiple of 16: 16-byte vectors
    cmask = (lane < slice_n) & (cols < n_cols)
    inv_n = 1.0 / n_cols

    w = _widen(tl.load(W + cols, mask=cmask, other=0.0), BF16_ASM)
    dw_acc = tl.zeros([BLOCK], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK], dtype=tl.float32)
    # the previous row, whose dx waits for the partner's sums
    xb_p = tl.zeros([BLOCK], dtype=X.dtype.element_ty)
    dyb_p = tl.zeros([BLOCK], dtype=DY.dtype.element_ty)
    mean_p = 0.0
    rstd_p = 0.0
    s1_p = 0.0
    s2_p = 0.0
    for row in tl.range(row_start, row_end + 1, num_stages=STAGES):
        valid = row < row_end
        m = tl.where(valid, cmask, False)
        xb = tl.load(X + row * stride_x + cols, mask=m, other=0.0)
        dyb = tl.load(DY + row * stride_dy + cols, mask=m, other=0.0)
        mean = tl.load(MEAN + row, mask=valid, other=0.0)
        rstd = tl.load(RSTD + row, mask=valid, other=0.0)
        # this member's part of the two row sums of the current row (masked columns add 0)
        xm = _widen(xb, BF16_ASM) - mean
        dyf = _widen(dyb, BF16_ASM)
        g = w * dyf
        if PAIRED_SUM:
            s1, s2 = tl.reduce((xm * g, g), 0, _add2)
        else:
            # the interpreter runs a tuple reduce element by element in Python (seconds per
            # 16K-wide row); two tl.sum give the same sums
            s1 = tl.sum(xm * g, 0)
            s2 = tl.sum(g, 0)
        dw_acc += (dyf * rstd) * xm                     # dy * xhat
        db_acc += dyf
        # the whole-row sums of the previous row: own part + partner's part
        has_prev = row > row_start
        if TEAM == 2:
            slot = XCHG + row * 4 + mem * 2            # words [row, mem, 0:2] of [M, 2, 2]
            partner = XCHG + (row - 1) * 4 + (1 - mem) * 2
            q1, q2 = _exchange(slot, s1, s2, valid, partner, gen, has_prev, SPIN)
            t1 = s1_p + q1
            t2 = s2_p + q2
        else:
            t1 = s1_p
            t2 = s2_p
        k1 = (t1 * inv_n) * (rstd_p * rstd_p * rstd_p)     # rstd^2 * c1
        k2 = (t2 * inv_n) * rstd_p                         # rstd * c2
        # the previous row's fp32 operands again from its 16-bit values (fewer live registers)
        xm_p = _widen(xb_p, BF16_ASM) - mean_p
        g_p = w * _widen(dyb_p, BF16_ASM)
        dx = rstd_p * g_p - (xm_p * k1 + k2)
        tl.store(DX + (row - 1) * stride_dx + cols, dx.to(dx_dtype),
                 mask=tl.where(has_prev, cmask, False))
        xb_p = xb
        dyb_p = dyb
        mean_p = mean
        rstd_p = rstd
        s1_p = s1
        s2_p = s2

    part = grp.to(tl.int64) * n_cols
    tl.store(DW_PART + part + cols, dw_acc, mask=cmask)
    tl.store(DB_PART + part + cols, db_acc, mask=cmask)


def _config(M, N):
    """Launch configuration of the whole-row dx kernel for a row width N (next_pow2(N) <= 8192;
    the wider rows take the team kernel, except where it cannot run)."""
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
_team_ok = {}      # device -> False once the team path failed to compile or launch there
_xchg = {}         # (device, M) -> int64 [M, 2, 2] exchange words, zeroed once
_gen = [0]         # call generation, tags the exchange words (so no per-call memset)


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
    key = (kernel.fn.__name__ if hasattr(kernel, "fn") else id(kernel), device.index,
           tuple(sorted(meta.items())), tuple(sorted(launch.items())), want, args[0].dtype)
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


def _sum_partials(dw_part, db_part, dw, db, n_parts, N, sms, gpu, device):
    """Second stage: dw, db = column sums of the fp32 partial rows, cast once. About two
    programs per SM, a [BLOCK_P, BLOCK_C] step of 2048 partials, loads pipelined; PDL on sm_90+."""
    block_c = max(16, min(64, triton.next_power_of_2(triton.cdiv(N, 2 * sms))))
    block_p = max(8, min(128, 2048 // block_c))
    grid2 = (triton.cdiv(N, block_c),)
    args2 = (dw_part, db_part, dw, db, n_parts, N)
    meta2 = dict(BLOCK_P=block_p, BLOCK_C=block_c, STAGES=3, num_warps=4)
    if not gpu:
        _ln_bwd_sum_partials_kernel[grid2](*args2, USE_PDL=False, **meta2)
        return
    dev = device.index
    pdl = _pdl_ok.get(dev)
    if pdl is None:
        pdl = torch.cuda.get_device_capability(device)[0] >= 9
        if pdl:
            try:
                _ln_bwd_sum_partials_kernel[grid2](*args2, USE_PDL=True, launch_pdl=True, **meta2)
                _pdl_ok[dev] = True
                return
            except Exception:
                pdl = False
        _pdl_ok[dev] = pdl
    if pdl:
        _ln_bwd_sum_partials_kernel[grid2](*args2, USE_PDL=True, launch_pdl=True, **meta2)
    else:
        _ln_bwd_sum_partials_kernel[grid2](*args2, USE_PDL=False, **meta2)


def _run_team(x2, w, dy2, mean, rstd, dx, dw, db, M, N, gpu):
    """The wide-row path: teams of TEAM column slices. Returns False where it cannot run (then
    the caller takes the whole-row kernel)."""
    dev = x2.device
    wide = M * max(x2.stride(0), dy2.stride(0), N) >= 2**31
    if gpu:
        team = 2
        if _team_ok.get(dev.index) is False:
            return False
        sms = _device_info(dev)[0]
    else:
        team = 1                     # CPU interpreter: programs run one after another, no waits
        sms = 4
    slice_n = triton.cdiv(triton.cdiv(N, team), 16) * 16     # 16-byte aligned slices
    block = triton.next_power_of_2(slice_n)
    bf16_asm = (gpu and x2.dtype == torch.bfloat16 and w.dtype == torch.bfloat16
                and dy2.dtype == torch.bfloat16)
    meta = dict(BLOCK=block, TEAM=team, STAGES=_TEAM_STAGES, SPIN=gpu, BF16_ASM=bf16_asm,
                WIDE_INDEX=wide, PAIRED_SUM=gpu)
    launch = dict(num_warps=_TEAM_WARPS)
    if gpu:
        key = (dev.index, M)
        xchg = _xchg.get(key)
        if xchg is None:
            xchg = torch.zeros((M, 2, 2), dtype=torch.int64, device=dev)
            _xchg[key] = xchg
        _gen[0] = _gen[0] % (2**31 - 2) + 1
        gen = _gen[0]
    else:
        xchg = torch.zeros((1, 2, 2), dtype=torch.int64, device=dev)
        gen = 1
    try:
        if gpu:
            # every member of a team must be resident at once: the grid is capped by the
            # occupancy of the compiled kernel (one wave), teams never straddle a second wave
            f32 = torch.empty((1,), dtype=torch.float32, device=dev)
            probe = (x2, w, dy2, mean, rstd, dx, f32, f32, xchg, x2.stride(0), dy2.stride(0),
                     dx.stride(0), M, N, 1, slice_n, gen)
            per_sm = _programs_per_sm(_ln_bwd_team_kernel, probe, meta, launch, 1, dev)
            n_groups = min(M, (sms * per_sm) // team)
            if n_groups < 1:
                return False
        else:
            n_groups = min(M, sms)
        dw_part = torch.empty((n_groups, N), dtype=torch.float32, device=dev)
        db_part = torch.empty((n_groups, N), dtype=torch.float32, device=dev)
        _ln_bwd_team_kernel[(n_groups * team,)](
            x2, w, dy2, mean, rstd, dx, dw_part, db_part, xchg,
            x2.stride(0), dy2.stride(0), dx.stride(0),
            M, N, n_groups, slice_n, gen, **launch, **meta)
    except Exception:
        if not gpu:
            raise
        _team_ok[dev.index] = False
        return False
    _sum_partials(dw_part, db_part, dw, db, n_groups, N, sms if gpu else 4, gpu, dev)
    return True


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
    if 8192 < N <= 16384 and _run_team(x2, w, dy2, mean, rstd, dx, dw, db, M, N, gpu):
        return dx.view(x.shape), dw, db

    cfg = _config(M, N)
    num_warps = cfg["num_warps"]
    launch = dict(num_warps=num_warps)
    wide = M * max(x2.stride(0), dy2.stride(0), N) >= 2**31
    bf16_bits = (cfg["RECOMPUTE_BITS"] and not _INTERPRET and x.dtype == torch.bfloat16
                 and w.dtype == torch.bfloat16 and dy.dtype == torch.bfloat16)
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
    _sum_partials(dw_part, db_part, dw, db, n_progs, N, sms, gpu, x.device)
    return dx.view(x.shape), dw, db
