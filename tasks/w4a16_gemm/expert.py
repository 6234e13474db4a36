"""Expert GPTQ int4-weight x 16-bit-activation GEMM (symmetric, zero point 8, group 128).

On sm_90 with bf16 inputs, 2 <= M <= 16 takes a Gluon kernel (_w4a16_m16_kernel) instead of the
Triton MMA path: mma.sync m16n8k16 (C^T = W^T . A^T, the weights as the A operand, the <= 16 tokens
as B) with both operands built in registers, so no weight or activation tile goes through shared
memory. k is renamed the same way in both operands (exact): a lane's 8 k-slots over two k16 steps
are the 8 codes of one packed word, paired (code i, code i + 4) as the exponent-bias decode leaves
them in one register; its activations are one 16-byte load, paired the same way with one byte
permute per register. The compile fails if either operand would need data movement
(convert_layout(assert_trivial=True)). One scale group a trip (fp32 partial, scaled once per column
into acc), words prefetched into register sets, split-K with the fixed-order reduction. M = 1, M >
16, the interpreter and other GPUs take the Triton paths
(benchmarks/studies/2026-12-05-w4a16-m16-gluon has the design).

    W[k, n] = (q[k, n] - 8) * S[k // 128, n],  q[8j + i, n] = nibble i of Wq[j, n]
    C[m, n] = sum_k A[m, k] * W[k, n]            A [M, K], Wq [K/8, N] int32, S [K/128, N]

Design (the op is a weight stream at M <= 16: 0.5 byte per weight is all the traffic there is):

* Dequantize in registers inside the K loop; the packed words are read from HBM once and a
  16-bit W is never written anywhere. Each program owns BN output columns x BM tokens and
  computes the transposed tile C^T = W^T . A^T, so the weight tile is the MMA's M operand
  (64-128 rows) and the few tokens are its N operand (16..128): no MMA rows are wasted on
  padding tokens even at M = 1.
* Unpack: one [BN, BK/8] load of int32 words; the 8 nibble planes are produced with shifts and
  masks (no per-nibble gathers, no replicated loads) and either interleaved back into K order
  with a tree of tl.join + one tl.reshape (one dot per K tile), or, as an autotuned
  alternative, kept as planes, each dotted with the A^T rows k = 8 j + i it belongs to (A
  split the same way with tl.split): then the planes feed the wgmma from registers and no
  16-bit weight tile is staged through shared memory.
* Conversion: on the GPU with bf16 operands the planes come out of inline PTX using the
  exponent-bias trick: lop3 puts two nibbles under the bf16 exponent of 128 (0x4300) in one
  32-bit register and one bf16x2 FMA subtracts 136 (128 + the zero point), so 8 codes cost
  4 lop3 + 3 shifts + 4 fma instead of 8 int->float conversions.
* BK divides the 128-wide group, so a K tile has one scale per column: the dot runs on exact
  (q - 8) values and the scale is applied once per tile to the fp32 partial,
  acc += dot(q - 8, A^T) * s[:, None].
* Split-K for small M: the grid is (N tiles) x SPLIT_K x (token tiles), so a few hundred CTAs
  stream disjoint K slices of the weights (loads marked evict-first, 3-5 pipeline stages).
  Each CTA writes its fp32 partial to a workspace and bumps a per-tile counter; the last
  arriver sums the partials in a fixed order (deterministic), writes C and re-arms the counter.
* M = 1 leaves the tensor cores: a CUDA-core GEMV (_w4a16_gemv_kernel) in which each thread
  dequantizes the words it loaded into fp32 registers and accumulates its own partial sums; the
  K reduction across threads happens once after the loop, split-K as above. No 16-bit weight
  tile, no shared-memory layout change. A trip is one whole scale group: the activations come
  as two 8-byte loads a word row, each thread chains the group's products into one unscaled
  sum, and the scale is applied once a group and column. (Adopted from
  benchmarks/studies/2026-12-05-w4a16-loads, `gemv_groupload`: on the H100, M = 1 went
  30.46 -> 26.69 us in one call, 0.657 -> 0.75 of copy bandwidth.)
* 2 <= M <= 16: the joined weight tile's rows are renamed in registers (_rows_lanes_first)
  before the dot, so its K-major store into the row-swizzled shared-memory operand hits 8
  different bank groups per 16-byte phase instead of a few; acc's rows, the scales and C follow
  the renamed order. (Both adopted from benchmarks/studies/2026-12-04-w4a16-candidates,
  `gemv_m1_rowperm`: on the H200, M = 1 went 51.0 -> 29.2 us and M = 16 79.7 -> 69.7 us.)
* Autotuned on (M, N, K); the configs are pruned to BM = next_pow2(M) (16..128). Under
  TRITON_INTERPRET=1 there is one small config and the plain (shift, mask, convert) unpack; the
  dtypes come from the pointers (float16 there).
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

GROUP = 128

# One int32 word of 8 codes -> 8 bf16 (q - 8), as four bf16x2 registers t_i = (code i, code i + 4):
# lop3 (a & b) | c with LUT 0xEA keeps nibbles i and i + 4 under the exponent 0x43 of bf16 128.0,
# giving (128 + q_i, 128 + q_{i+4}); fma x * 1 - 136 leaves q - 8 exactly. Shared by the Triton
# paths and the Gluon kernel (a constexpr: JIT code may read only constexpr globals).
_DECODE_PAIRS_PTX = tl.constexpr(
    "{\n"
    ".reg .b32 t0, t1, t2, t3, r, one, bias;\n"
    "mov.b32 one, 0x3f803f80;\n"
    "mov.b32 bias, 0xc308c308;\n"
    "lop3.b32 t0, $8, 0x000f000f, 0x43004300, 0xea;\n"
    "shr.b32 r, $8, 4;\n"
    "lop3.b32 t1, r, 0x000f000f, 0x43004300, 0xea;\n"
    "shr.b32 r, $8, 8;\n"
    "lop3.b32 t2, r, 0x000f000f, 0x43004300, 0xea;\n"
    "shr.b32 r, $8, 12;\n"
    "lop3.b32 t3, r, 0x000f000f, 0x43004300, 0xea;\n"
    "fma.rn.bf16x2 t0, t0, one, bias;\n"
    "fma.rn.bf16x2 t1, t1, one, bias;\n"
    "fma.rn.bf16x2 t2, t2, one, bias;\n"
    "fma.rn.bf16x2 t3, t3, one, bias;\n"
    "mov.b32 {$0, $4}, t0;\n"
    "mov.b32 {$1, $5}, t1;\n"
    "mov.b32 {$2, $6}, t2;\n"
    "mov.b32 {$3, $7}, t3;\n"
    "}\n"
)


@triton.jit
def _nibble_planes(w, cty: tl.constexpr, MAGIC: tl.constexpr):
    """The 8 planes (q_i - 8), i = 0..7, of a tensor of packed words, in dtype cty."""
    if MAGIC:
        # one int32 word -> 8 bf16 values q - 8, the exponent-bias decode (_DECODE_PAIRS_PTX)
        p0, p1, p2, p3, p4, p5, p6, p7 = tl.inline_asm_elementwise(
            asm=_DECODE_PAIRS_PTX,
            constraints="=h,=h,=h,=h,=h,=h,=h,=h,r",
            args=[w],
            dtype=(tl.bfloat16, tl.bfloat16, tl.bfloat16, tl.bfloat16,
                   tl.bfloat16, tl.bfloat16, tl.bfloat16, tl.bfloat16),
            is_pure=True,
            pack=1,
        )
    else:
        p0 = (((w >> 0) & 0xF) - 8).to(cty)
        p1 = (((w >> 4) & 0xF) - 8).to(cty)
        p2 = (((w >> 8) & 0xF) - 8).to(cty)
        p3 = (((w >> 12) & 0xF) - 8).to(cty)
        p4 = (((w >> 16) & 0xF) - 8).to(cty)
        p5 = (((w >> 20) & 0xF) - 8).to(cty)
        p6 = (((w >> 24) & 0xF) - 8).to(cty)
        p7 = (((w >> 28) & 0xF) - 8).to(cty)
    return p0, p1, p2, p3, p4, p5, p6, p7


@triton.jit
def _code_f32(w, b: tl.constexpr, magic):
    """q - 8 in fp32, exactly, for the code q at bits 4b..4b+3 of w (b <= 4).

    (w & 0xF << 4b) | 0x4B000000 is the float 2^23 + q 2^(4b); one fma scales it by 2^(-4b) and
    subtracts 2^(23 - 4b) + 8 (both exact: the result q - 8 is representable). `magic` is
    0x4B000000 passed in at run time, so the mask and the OR fold into one LOP3 (a literal there
    costs a second LOP3: LOP3 takes one immediate)."""
    f = ((w & (0xF << (4 * b))) | magic).to(tl.float32, bitcast=True)
    return f * (1.0 / (1 << (4 * b))) - ((1 << (23 - 4 * b)) + 8.0)


@triton.jit
def _unpack_kmajor(w, BN: tl.constexpr, BK: tl.constexpr, cty: tl.constexpr, MAGIC: tl.constexpr):
    """[BN, BK/8] packed words -> [BN, BK] values (q - 8) with k = 8 j + i in natural order.

    tl.join appends a trailing axis, the last join the innermost: joining plane pairs
    (i, i+4), then (.., i+2), then (.., i+1) makes index [j, c, b, a] hold plane 4c + 2b + a,
    so the reshape lays the 8 codes of word j out as k = 8 j + 0..7.
    """
    p0, p1, p2, p3, p4, p5, p6, p7 = _nibble_planes(w, cty, MAGIC)
    x0 = tl.join(tl.join(p0, p4), tl.join(p2, p6))
    x1 = tl.join(tl.join(p1, p5), tl.join(p3, p7))
    return tl.reshape(tl.join(x0, x1), (BN, BK))


@triton.jit
def _rows_lanes_first(x, BN: tl.constexpr, BK: tl.constexpr, V: tl.constexpr):
    """[BN, BK] -> the same rows renamed: row r = (BN / V) lo + hi holds tile row n = V hi + lo.

    The unpacked tile leaves each thread V consecutive rows (lo: its vector of words) and spreads
    hi over the lanes. The conversion to the wgmma operand stores the tile K-major into shared
    memory swizzled by row % 8; in natural order the 8 lanes of one 16-byte store phase write
    rows V or 8 apart, few distinct row % 8 (the conflicted stores of the profile). Renamed, the
    lanes' rows are consecutive: 8 distinct row % 8, 8 bank groups. reshape and permute move no
    data, they rename the rows of the register layout. V (4 or 8) is per config: the one the
    offline count (benchmarks/studies/2026-12-04-w4a16-candidates/smem_conflicts.py) found
    conflict-free for the layout the compiler picks for that tile."""
    return tl.reshape(tl.permute(tl.reshape(x, (BN // V, V, BK)), (1, 0, 2)), (BN, BK))


@triton.jit
def _split_rows8(a, BK: tl.constexpr, BM: tl.constexpr):
    """[BK, BM] -> the 8 row planes a_i[j, :] = a[8 j + i, :], i = 0..7 (inverse of the joins)."""
    x = tl.reshape(tl.permute(tl.reshape(a, (BK // 8, 8, BM)), (0, 2, 1)), (BK // 8, BM, 2, 2, 2))
    e, o = tl.split(x)            # lowest bit of i: even / odd rows
    e0, e1 = tl.split(e)
    o0, o1 = tl.split(o)
    a0, a4 = tl.split(e0)
    a2, a6 = tl.split(e1)
    a1, a5 = tl.split(o0)
    a3, a7 = tl.split(o1)
    return a0, a1, a2, a3, a4, a5, a6, a7


@triton.jit
def _w4a16_kernel(
    a_ptr, wq_ptr, s_ptr, c_ptr, ws_ptr, count_ptr,
    M, N, K,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    SPLIT_K: tl.constexpr, PLANES: tl.constexpr, GROUP_SIZE: tl.constexpr, MAGIC: tl.constexpr,
    ROWPERM: tl.constexpr = False, RPV: tl.constexpr = 4,
):
    """C[tok, n] tiles of A . ((q - 8) * S): computed as C^T = W^T . A^T over a K slice."""
    tl.static_assert(GROUP_SIZE % BK == 0, "a K tile never straddles a scale group")
    cty = a_ptr.dtype.element_ty
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    num_pid_n = tl.cdiv(N, BN)

    k_steps = K // BK
    per_split = tl.cdiv(k_steps, SPLIT_K)
    ks0 = pid_k * per_split
    ks1 = tl.minimum(ks0 + per_split, k_steps)

    rn = pid_n * BN + tl.arange(0, BN)
    rm = pid_m * BM + tl.arange(0, BM)
    n_ok = rn < N
    m_ok = rm < M
    rn_c = tl.max_contiguous(tl.multiple_of(tl.where(n_ok, rn, 0), BN), BN)
    rm_c = tl.where(m_ok, rm, 0)
    rj = tl.arange(0, BK // 8)
    rk = tl.arange(0, BK)
    w_ptrs = wq_ptr + rj[None, :] * N + rn_c[:, None]            # [BN, BK/8] words
    a_ptrs = a_ptr + rm_c[None, :] * K + rk[:, None]             # [BK, BM] = A^T tile
    if ROWPERM and not PLANES:
        # acc's row r is column RPV (r % (BN / RPV)) + r / (BN / RPV) of the tile
        r = tl.arange(0, BN)
        rn_acc = pid_n * BN + RPV * (r % (BN // RPV)) + r // (BN // RPV)
        n_ok_acc = rn_acc < N
        s_ptrs = s_ptr + tl.where(n_ok_acc, rn_acc, 0)           # [BN], in acc's row order
    else:
        rn_acc = rn
        n_ok_acc = n_ok
        s_ptrs = s_ptr + rn_c                                    # [BN]

    acc = tl.zeros((BN, BM), dtype=tl.float32)
    for ks in tl.range(ks0, ks1):
        k0 = ks * BK
        w = tl.load(w_ptrs + (k0 // 8) * N, eviction_policy="evict_first")   # read once
        a = tl.load(a_ptrs + k0)
        s = tl.load(s_ptrs + (k0 // GROUP_SIZE) * N)
        if PLANES:
            # each nibble plane (k = 8 j + i) meets the A^T rows it belongs to: the planes stay
            # in registers as the wgmma's A operand, no 16-bit weight tile goes through smem
            tl.static_assert(BK // 8 >= 16, "a plane dot needs K >= 16")
            p0, p1, p2, p3, p4, p5, p6, p7 = _nibble_planes(w, cty, MAGIC)
            a0, a1, a2, a3, a4, a5, a6, a7 = _split_rows8(a, BK, BM)
            part = tl.dot(p0, a0)
            part = tl.dot(p1, a1, part)
            part = tl.dot(p2, a2, part)
            part = tl.dot(p3, a3, part)
            part = tl.dot(p4, a4, part)
            part = tl.dot(p5, a5, part)
            part = tl.dot(p6, a6, part)
            part = tl.dot(p7, a7, part)
        else:
            wd = _unpack_kmajor(w, BN, BK, cty, MAGIC)
            if ROWPERM:     # acc's rows follow (rn_acc): the scales, C and the partials too
                wd = _rows_lanes_first(wd, BN, BK, RPV)
            part = tl.dot(wd, a)                                  # exact (q - 8), fp32 result
        acc += part * s.to(tl.float32)[:, None]                   # one scale per column

    c_ptrs = c_ptr + rm[None, :] * N + rn_acc[:, None]
    c_mask = n_ok_acc[:, None] & m_ok[None, :]
    if SPLIT_K == 1:
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
    else:
        tile = pid_m * num_pid_n + pid_n
        tile_ws = ws_ptr + tile.to(tl.int64) * (SPLIT_K * BN * BM)
        blk = tl.arange(0, BN)[:, None] * BM + tl.arange(0, BM)[None, :]
        tl.store(tile_ws + pid_k * (BN * BM) + blk, acc)
        tl.debug_barrier()   # all of this CTA's partial is written before the release below
        arrived = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:
            total = tl.zeros((BN, BM), dtype=tl.float32)
            for sidx in tl.static_range(SPLIT_K):     # fixed order: deterministic
                total += tl.load(tile_ws + sidx * (BN * BM) + blk, cache_modifier=".cg")
            tl.store(c_ptrs, total.to(c_ptr.dtype.element_ty), mask=c_mask)
            tl.atomic_xchg(count_ptr + tile, 0, sem="relaxed", scope="gpu")


@triton.jit
def _act8_f32(a_ptr, j, BF16: tl.constexpr):
    """The 8 activations a[8 j + i], i = 0..7, of the word rows j (a tensor of row indices), in
    fp32, from two 8-byte loads of A viewed as int64 (eight 2-byte loads a row cost more issue
    slots than the weights' own loads). bf16 -> fp32 is exact bit placement (bits << 16); fp16
    (the interpreter) converts."""
    p = a_ptr.to(tl.pointer_type(tl.int64), bitcast=True) + 2 * j
    lo = tl.load(p)
    hi = tl.load(p + 1)
    x0 = lo.to(tl.int32)
    x1 = (lo >> 32).to(tl.int32)
    x2 = hi.to(tl.int32)
    x3 = (hi >> 32).to(tl.int32)
    if BF16:
        a0 = (x0 << 16).to(tl.float32, bitcast=True)
        a1 = (x0 & -65536).to(tl.float32, bitcast=True)
        a2 = (x1 << 16).to(tl.float32, bitcast=True)
        a3 = (x1 & -65536).to(tl.float32, bitcast=True)
        a4 = (x2 << 16).to(tl.float32, bitcast=True)
        a5 = (x2 & -65536).to(tl.float32, bitcast=True)
        a6 = (x3 << 16).to(tl.float32, bitcast=True)
        a7 = (x3 & -65536).to(tl.float32, bitcast=True)
    else:
        a0 = x0.to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        a1 = (x0 >> 16).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        a2 = x1.to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        a3 = (x1 >> 16).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        a4 = x2.to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        a5 = (x2 >> 16).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        a6 = x3.to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        a7 = (x3 >> 16).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
    return a0, a1, a2, a3, a4, a5, a6, a7


@triton.jit
def _dot_row(w, a0, a1, a2, a3, a4, a5, a6, a7, accg, magic, FIRST: tl.constexpr):
    """accg + sum_i (q_i - 8) a_i over the 8 codes of each word of w: exact q - 8 (_code_f32) and
    one fp32 FFMA a code (FIRST: accg is not read)."""
    # code i of a word: bits 4i..4i+3 of w (i <= 4), or bits 4(i-3).. of w >> 12 (i >= 5)
    w_hi = w >> 12
    if FIRST:
        accg = _code_f32(w, 0, magic) * a0
    else:
        accg += _code_f32(w, 0, magic) * a0
    accg += _code_f32(w, 1, magic) * a1
    accg += _code_f32(w, 2, magic) * a2
    accg += _code_f32(w, 3, magic) * a3
    accg += _code_f32(w, 4, magic) * a4
    accg += _code_f32(w_hi, 2, magic) * a5
    accg += _code_f32(w_hi, 3, magic) * a6
    accg += _code_f32(w_hi, 4, magic) * a7
    return accg


@triton.jit
def _w4a16_gemv_kernel(
    a_ptr, wq_ptr, s_ptr, c_ptr, ws_ptr, count_ptr,
    N, K, magic,
    NR: tl.constexpr, SUBS: tl.constexpr, SPLIT_K: tl.constexpr, GROUP_SIZE: tl.constexpr,
    PREFETCH: tl.constexpr,
):
    """M = 1: c[n] = sum_g S[g, n] sum_{k in group g} a[k] (q[k, n] - 8) on the CUDA cores, fp32.

    No tensor cores and no 16-bit weight tile: each thread dequantizes the words it loaded in
    registers and multiplies them into an fp32 accumulator of its own; the K reduction across
    threads happens once, after the loop. A program owns BN = 128 NR columns, viewed as
    [NR, 128]: a warp's 32 lanes x 4 columns (one 16-byte word load each) span 128 columns, and
    the NR column blocks stay in each thread's registers, so a thread reuses each activation it
    loads over 4 NR columns. A trip is one whole scale group (GW = GROUP_SIZE / 8 word rows) as
    SUBS sub-tiles of HB = GW / SUBS rows that the warps split (SUBS = GW / num_warps gives a
    thread one row of each). Each thread chains its rows' products into one unscaled fp32 sum
    (accg), and the group's scale multiplies it once a column (acc += accg * s): a scale load and
    multiply a group, not a word row. PREFETCH: the next group's words are loaded at the top of
    the trip into registers the loop carries (the loop has no dot, so the compiler does not
    pipeline it); the group index is clamped to the last group, so no predicate is needed."""
    GW: tl.constexpr = GROUP_SIZE // 8
    HB: tl.constexpr = GW // SUBS
    BN: tl.constexpr = 128 * NR
    BF16: tl.constexpr = a_ptr.dtype.element_ty == tl.bfloat16
    tl.static_assert(SUBS == 1 or SUBS == 2 or SUBS == 4, "SUBS is 1, 2 or 4")
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    n_groups = K // GROUP_SIZE
    per_split = tl.cdiv(n_groups, SPLIT_K)
    g0 = pid_k * per_split
    g1 = tl.minimum(g0 + per_split, n_groups)

    rr = tl.arange(0, NR)
    rc = tl.arange(0, 128)
    rn = pid_n * BN + rr[:, None] * 128 + rc[None, :]            # [NR, 128] columns
    n_ok = rn < N
    rn_c = tl.max_contiguous(tl.multiple_of(tl.where(n_ok, rn, 0), [1, 128]), [1, 128])
    rj = tl.arange(0, HB)
    # [HB, NR, 128]: the compiler gives its warps to the leading dimension and keeps the NR
    # column blocks in registers (in [NR, HB, 128] order the warps went to NR instead)
    w_ptrs = wq_ptr + rj[:, None, None] * N + rn_c[None, :, :]
    # the scales in the weights' own layout (a [1, NR, 128] tile would get a layout of its own
    # and a shared-memory conversion a trip)
    rn_s = tl.max_contiguous(tl.multiple_of(tl.where(n_ok, rn, 0), [1, 4]), [1, 4])
    s_ptrs = s_ptr + (0 * rj)[:, None, None] + rn_s[None, :, :]
    jrow = rj[:, None, None]
    acc = tl.zeros((HB, NR, 128), dtype=tl.float32)
    if PREFETCH:
        rp = tl.minimum(g0, n_groups - 1) * GW
        w0n = tl.load(w_ptrs + rp * N, eviction_policy="evict_first")
        if SUBS >= 2:
            w1n = tl.load(w_ptrs + (rp + HB) * N, eviction_policy="evict_first")
        if SUBS >= 4:
            w2n = tl.load(w_ptrs + (rp + 2 * HB) * N, eviction_policy="evict_first")
            w3n = tl.load(w_ptrs + (rp + 3 * HB) * N, eviction_policy="evict_first")
    for g in tl.range(g0, g1):
        r0 = g * GW
        if PREFETCH:
            rp = tl.minimum(g + 1, n_groups - 1) * GW
            w0 = w0n
            w0n = tl.load(w_ptrs + rp * N, eviction_policy="evict_first")
            if SUBS >= 2:
                w1 = w1n
                w1n = tl.load(w_ptrs + (rp + HB) * N, eviction_policy="evict_first")
            if SUBS >= 4:
                w2 = w2n
                w3 = w3n
                w2n = tl.load(w_ptrs + (rp + 2 * HB) * N, eviction_policy="evict_first")
                w3n = tl.load(w_ptrs + (rp + 3 * HB) * N, eviction_policy="evict_first")
        else:
            w0 = tl.load(w_ptrs + r0 * N, eviction_policy="evict_first")     # read once
            if SUBS >= 2:
                w1 = tl.load(w_ptrs + (r0 + HB) * N, eviction_policy="evict_first")
            if SUBS >= 4:
                w2 = tl.load(w_ptrs + (r0 + 2 * HB) * N, eviction_policy="evict_first")
                w3 = tl.load(w_ptrs + (r0 + 3 * HB) * N, eviction_policy="evict_first")
        s = tl.load(s_ptrs + g * N).to(tl.float32)
        # every activation row of the trip is loaded before the first product
        b0, b1, b2, b3, b4, b5, b6, b7 = _act8_f32(a_ptr, r0 + jrow, BF16)
        if SUBS >= 2:
            c0, c1, c2, c3, c4, c5, c6, c7 = _act8_f32(a_ptr, r0 + HB + jrow, BF16)
        if SUBS >= 4:
            d0, d1, d2, d3, d4, d5, d6, d7 = _act8_f32(a_ptr, r0 + 2 * HB + jrow, BF16)
            e0, e1, e2, e3, e4, e5, e6, e7 = _act8_f32(a_ptr, r0 + 3 * HB + jrow, BF16)
        accg = _dot_row(w0, b0, b1, b2, b3, b4, b5, b6, b7, 0.0, magic, True)
        if SUBS >= 2:
            accg = _dot_row(w1, c0, c1, c2, c3, c4, c5, c6, c7, accg, magic, False)
        if SUBS >= 4:
            accg = _dot_row(w2, d0, d1, d2, d3, d4, d5, d6, d7, accg, magic, False)
            accg = _dot_row(w3, e0, e1, e2, e3, e4, e5, e6, e7, accg, magic, False)
        acc += accg * s                                           # one scale a group and column
    c = tl.sum(acc, axis=0)                                       # [NR, 128]
    if SPLIT_K == 1:
        tl.store(c_ptr + rn, c.to(c_ptr.dtype.element_ty), mask=n_ok)
    else:
        rb = rr[:, None] * 128 + rc[None, :]
        tile_ws = ws_ptr + pid_n.to(tl.int64) * (SPLIT_K * BN)
        tl.store(tile_ws + pid_k * BN + rb, c)
        tl.debug_barrier()   # all of this CTA's partial is written before the release below
        arrived = tl.atomic_add(count_ptr + pid_n, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:
            total = tl.zeros((NR, 128), dtype=tl.float32)
            for sidx in tl.static_range(SPLIT_K):     # fixed order: deterministic
                total += tl.load(tile_ws + sidx * BN + rb, cache_modifier=".cg")
            tl.store(c_ptr + rn, total.to(c_ptr.dtype.element_ty), mask=n_ok)
            tl.atomic_xchg(count_ptr + pid_n, 0, sem="relaxed", scope="gpu")


def _gemv_configs():
    if _INTERPRET:
        return [triton.Config({"NR": 1, "SUBS": 2, "SPLIT_K": 2, "PREFETCH": True},
                              num_warps=8, num_stages=1)]
    out = []
    # (NR, SUBS, warps): SUBS = 16 / warps puts one word row of each sub-tile in a thread, so a
    # thread's rows of a group are SUBS (1, 2, 4) and its columns 4 NR (4, 8, 16); BN = 128 NR
    # gives 56-224 column tiles at N = 28672, and SPLIT_K 2-8 fills 132 SMs
    for nr, subs, warps in ((2, 2, 8), (4, 2, 8), (2, 4, 4), (4, 4, 4), (1, 1, 16), (2, 1, 16), (4, 1, 16)):
        for split in (2, 4, 8):
            for prefetch in (False, True):
                out.append(triton.Config({"NR": nr, "SUBS": subs, "SPLIT_K": split, "PREFETCH": prefetch},
                                         num_warps=warps, num_stages=1))
    return out


_gemv = triton.autotune(configs=_gemv_configs(), key=["N", "K"])(_w4a16_gemv_kernel)
_GEMV_CFGS = _gemv_configs()


def _configs():
    if _INTERPRET:
        return [triton.Config({"BM": 16, "BN": 64, "BK": 128, "SPLIT_K": 2, "PLANES": False},
                              num_warps=4, num_stages=2)]

    def cfg(bm, bn, bk, split, stages, warps=4, planes=False):
        # RPV: _rows_lanes_first's row group, the one the offline count found conflict-free
        return triton.Config({"BM": bm, "BN": bn, "BK": bk, "SPLIT_K": split, "PLANES": planes,
                              "RPV": 8 if (bn, bk) == (128, 128) else 4},
                             num_warps=warps, num_stages=stages)

    out = []
    # Decode (BM 16/32): a weight stream. Aim for ~2-4 CTAs per SM over N tiles x SPLIT_K, each
    # with enough words in flight (3-5 stages of 4-16 KB). Both unpack forms are offered for
    # BK = 128: joined [BN, BK] tile (one dot; the 16-bit tile is staged through shared memory
    # for the wgmma) and nibble planes (8 dots; the planes feed the wgmma from registers, only
    # the packed words and A are staged).
    for bm in (16, 32):
        for planes in (False, True):
            out += [
                cfg(bm, 128, 128, 2, 4, planes=planes), cfg(bm, 128, 128, 4, 4, planes=planes),
                cfg(bm, 128, 128, 8, 4, planes=planes), cfg(bm, 128, 128, 16, 3, planes=planes),
                cfg(bm, 64, 128, 4, 5, planes=planes), cfg(bm, 64, 128, 8, 4, planes=planes),
                cfg(bm, 256, 128, 4, 3, warps=8, planes=planes),
                cfg(bm, 128, 128, 4, 3, warps=8, planes=planes),
            ]
        out += [cfg(bm, 128, 64, 8, 5), cfg(bm, 256, 64, 8, 4, warps=8)]
    # Small batches (BM 64/128): still weight-bound at M = 128 only with few re-reads; keep
    # one token tile per program and split K to fill the SMs.
    for bm in (64, 128):
        for planes in (False, True):
            out += [
                cfg(bm, 128, 128, 1, 3, warps=8, planes=planes),
                cfg(bm, 128, 128, 2, 3, warps=8, planes=planes),
                cfg(bm, 128, 128, 4, 3, warps=8, planes=planes),
                cfg(bm, 64, 128, 2, 4, planes=planes), cfg(bm, 64, 128, 4, 4, planes=planes),
            ]
        out += [cfg(bm, 128, 64, 2, 4, warps=8)]
    return out


def _prune(configs, named_args, **kwargs):
    # BM = the smallest power of two >= M (16..128): the token tile is the MMA's N side.
    want = max(16, min(128, triton.next_power_of_2(named_args["M"])))
    kept = [c for c in configs if c.kwargs["BM"] == want]
    return kept or configs


_w4a16 = triton.autotune(
    configs=_configs(),
    key=["M", "N", "K", "MAGIC", "ROWPERM"],
    prune_configs_by=None if _INTERPRET else {"early_config_prune": _prune},
)(_w4a16_kernel)

_CFGS = _configs()
_MIN_BM = min(c.kwargs["BM"] for c in _CFGS)
_MIN_BN = min(c.kwargs["BN"] for c in _CFGS)
_COUNTERS = {}


# --------------------------------------------------------------------------------------------
# 2 <= M <= 16 on sm_90: mma.sync with both operands in registers
# --------------------------------------------------------------------------------------------
# The Triton MMA path (_w4a16_kernel) stages the dequantised bf16 weight tile through shared memory
# for the wgmma (stores + ldmatrix, ~1.4 GB of shared traffic at m16_n8192_k28672). Here neither operand touches
# shared memory: the words and the activations are loaded straight into the registers of
# m16n8k16 fragments, by renaming k (the same renaming in both operands, so the dot is exact).
try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as ttgl
    from triton.experimental.gluon.language.nvidia.ampere import mma_v2
    # spelled differently across Triton versions (3.6 on the GPU images; 3.9 renamed it)
    _cta_barrier = getattr(ttgl, "barrier", None) or ttgl.thread_barrier
except (ImportError, AttributeError):   # a Triton without Gluon: the Triton kernels serve every M
    gluon = None

if gluon is not None:
    @gluon.constexpr_function
    def _g_words_layout(NW, RT):
        """[BN, 16] words of one scale group, (n, j): a thread holds 2 RT consecutive columns n (one
        vector load) of the word rows j = 4 b + q, q = its lane % 4, b = 0..3; lanes // 4 and the warps
        step n by 2 RT and 16 RT."""
        return ttgl.DistributedLinearLayout(
            reg_bases=[[1 << i, 0] for i in range((2 * RT).bit_length() - 1)] + [[0, 4], [0, 8]],
            lane_bases=[[0, 1], [0, 2], [2 * RT, 0], [4 * RT, 0], [8 * RT, 0]],
            warp_bases=[[(16 * RT) << i, 0] for i in range(NW.bit_length() - 1)],
            block_bases=[], shape=[16 * RT * NW, 16])


    @gluon.constexpr_function
    def _g_scale_layout(NW, RT):
        """[BN] scales in the words' column order (the 4 lanes of a lane quad hold the same ones)."""
        return ttgl.DistributedLinearLayout(
            reg_bases=[[1 << i] for i in range((2 * RT).bit_length() - 1)],
            lane_bases=[[0], [0], [2 * RT], [4 * RT], [8 * RT]],
            warp_bases=[[(16 * RT) << i] for i in range(NW.bit_length() - 1)],
            block_bases=[], shape=[16 * RT * NW])


    @gluon.constexpr_function
    def _g_act_layout(NW, BM):
        """[16, BM, 4] activations of one scale group as 32-bit words, (j, m, p) = the bf16 pair
        a[m, 128 g + 8 j + 2 p + (0, 1)]: a thread holds the 4 words p of the word rows j = 4 b + q
        (one 16-byte load each) for the tokens lane // 4 (+ 8); every warp holds the whole tile (the
        MMA's B operand is not split across warps)."""
        return ttgl.DistributedLinearLayout(
            reg_bases=[[0, 0, 1], [0, 0, 2], [4, 0, 0], [8, 0, 0]] + ([[0, 8, 0]] if BM == 16 else []),
            lane_bases=[[1, 0, 0], [2, 0, 0], [0, 1, 0], [0, 2, 0], [0, 4, 0]],
            warp_bases=[[0, 0, 0] for _ in range(NW.bit_length() - 1)],
            block_bases=[], shape=[16, BM, 4])


    @gluon.jit
    def _g_decode_tile(w, NW: ttgl.constexpr, RT: ttgl.constexpr):
        """[BN, 16] packed words of one scale group -> [BN, 128] bf16 (q - 8), the MMA's A operand, with
        its rows and its K axis renamed (see _w4a16_m16_kernel): the value at (t, kk) is code
        k = 32 b + 8 q + h + 2 s + 4 e (kk = e + 2 q + 8 h + 16 s + 32 b) of column
        n = a + 2 rep + 2 RT (r + 8 w) (t = r + 8 a + 16 w + 16 NW rep)."""
        BN: ttgl.constexpr = 16 * RT * NW
        # the exponent-bias decode (_DECODE_PAIRS_PTX): t_i holds the pair (code i, code i + 4) as bf16x2
        p0, p1, p2, p3, p4, p5, p6, p7 = ttgl.inline_asm_elementwise(
            asm=_DECODE_PAIRS_PTX,
            constraints="=h,=h,=h,=h,=h,=h,=h,=h,r",
            args=[w],
            dtype=(ttgl.bfloat16, ttgl.bfloat16, ttgl.bfloat16, ttgl.bfloat16,
                   ttgl.bfloat16, ttgl.bfloat16, ttgl.bfloat16, ttgl.bfloat16),
            is_pure=True,
            pack=1,
        )
        # [n, j, s, h, e] = code h + 2 s + 4 e of word (j, n). The last join's axis becomes register 0,
        # so e (codes i, i + 4: one decode register) is the pair an MMA operand register holds.
        x = ttgl.join(ttgl.join(ttgl.join(p0, p2), ttgl.join(p1, p3)),
                      ttgl.join(ttgl.join(p4, p6), ttgl.join(p5, p7)))
        # n = ((w * 8 + r) * RT + rep) * 2 + a, j = 4 b + q  ->  rows t = (rep, w, a, r), kk = (b, s, h, q, e)
        x = ttgl.reshape(x, [NW, 8, RT, 2, 4, 4, 2, 2, 2])
        x = ttgl.permute(x, [2, 0, 3, 1, 4, 6, 7, 5, 8])
        return ttgl.reshape(x, [BN, 128])


    @gluon.jit
    def _g_half(x, H: ttgl.constexpr):
        """The bf16 in bits 16 H .. 16 H + 15 of each 32-bit word of x."""
        return (x >> (16 * H)).to(ttgl.int16).to(ttgl.bfloat16, bitcast=True)


    @gluon.jit
    def _g_act_tile(x, BM: ttgl.constexpr):
        """[16, BM, 4] words of bf16 pairs, (j, m, p) = a[m, 8 j + 2 p + (0, 1)] -> [128, BM], the MMA's
        B operand, its K axis renamed as the weights': kk = e + 2 q + 8 h + 16 s + 32 b holds
        k = 8 (4 b + q) + (h + 2 s + 4 e). An operand register pairs (k, k + 4): halves h of the
        words p = s and p = s + 2, one byte permute each."""
        u0, u1 = ttgl.split(ttgl.reshape(x, [16, BM, 2, 2]))   # words p = 2 p1 + s: u_s = [.., p1]
        x0, x2 = ttgl.split(u0)
        x1, x3 = ttgl.split(u1)
        # [j, m, e, h, s] = a[m, 8 j + h + 2 s + 4 e]
        z0 = ttgl.join(ttgl.join(_g_half(x0, 0), _g_half(x2, 0)), ttgl.join(_g_half(x0, 1), _g_half(x2, 1)))
        z1 = ttgl.join(ttgl.join(_g_half(x1, 0), _g_half(x3, 0)), ttgl.join(_g_half(x1, 1), _g_half(x3, 1)))
        z = ttgl.reshape(ttgl.join(z0, z1), [4, 4, BM, 2, 2, 2])   # (b, q, m, e, h, s)
        z = ttgl.permute(z, [0, 5, 4, 1, 3, 2])                      # (b, s, h, q, e, m)
        return ttgl.reshape(z, [128, BM])


    @gluon.jit
    def _g_scale_rows(s, NW: ttgl.constexpr, RT: ttgl.constexpr):
        """[BN] scales in column order n -> in the tile's row order t (the rows' renaming above)."""
        BN: ttgl.constexpr = 16 * RT * NW
        s = ttgl.reshape(s, [NW, 8, RT, 2])
        s = ttgl.permute(s, [2, 0, 3, 1])
        return ttgl.reshape(s, [BN])


    @gluon.jit
    def _g_load_words(w_ptrs, w_mask, s_ptrs, s_mask, g, N):
        """Scale group g's packed words [BN, 16] (read once: evict-first) and scales [BN]."""
        w = ttgl.load(w_ptrs + g * 16 * N, mask=w_mask, other=0, eviction_policy="evict_first")
        s = ttgl.load(s_ptrs + g * N, mask=s_mask, other=0.0)
        return w, s


    @gluon.jit
    def _g_group_mma(w, s, a, acc, NW: ttgl.constexpr, RT: ttgl.constexpr, BM: ttgl.constexpr):
        """acc + S[g, n] * sum_{k in group g} (q[k, n] - 8) a[m, k] for the tile's rows (mma.sync)."""
        BN: ttgl.constexpr = 16 * RT * NW
        MMA: ttgl.constexpr = ttgl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[NW, 1], instr_shape=[16, 8])
        # both operands are built in registers; assert_trivial makes the compile fail if either
        # conversion would move data between threads (through shared memory or shuffles)
        wa = ttgl.convert_layout(_g_decode_tile(w, NW, RT),
                                 ttgl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2), assert_trivial=True)
        b = ttgl.convert_layout(_g_act_tile(a, BM),
                                ttgl.DotOperandLayout(operand_index=1, parent=MMA, k_width=2), assert_trivial=True)
        part = mma_v2(wa, b, ttgl.zeros([BN, BM], ttgl.float32, MMA))      # exact (q - 8), fp32
        sc = ttgl.convert_layout(_g_scale_rows(s, NW, RT).to(ttgl.float32), ttgl.SliceLayout(1, MMA),
                                 assert_trivial=True)
        return acc + part * sc[:, None]


    @gluon.jit
    def _w4a16_m16_kernel(a_ptr, wq_ptr, s_ptr, c_ptr, ws_ptr, count_ptr, M, N, K,
                          BM: ttgl.constexpr, RT: ttgl.constexpr, NW: ttgl.constexpr,
                          SPLIT_K: ttgl.constexpr, PF: ttgl.constexpr):
        """C[m, n] = sum_g S[g, n] sum_{k in g} A[m, k] (q[k, n] - 8) for 2 <= M <= BM (8 or 16), as
        C^T tiles: BN = 16 RT NW columns a program, mma.sync m16n8k16 with both operands in registers.

        Each warp owns RT row tiles of 16 columns n (the MMA's A operand, the weights) and all BM
        tokens (its B operand, one or two n8 tiles). The dot sums over k, so the same renaming of k
        in both operands is exact: a lane q (= lane % 4) takes the 8 codes of word row 4 b + q of a
        group, k = 32 b + 8 q + i, which are the 8 k-slots an m16n8k16 A fragment gives that lane
        over two k16 steps; the pair a 32-bit operand register holds is (code i, code i + 4), the
        pair the exponent-bias decode leaves in one register. The activations a lane needs are then
        a[m, 32 b + 8 q .. + 7]: one 16-byte load, paired the same way (i, i + 4). Rows are renamed
        too: a thread's 2 RT rows (t = r, r + 8, r + 16 NW, ...) are 2 RT consecutive columns, one
        vector load of words. A trip is one scale group (128 k): a fresh fp32 partial, scaled once per
        column into acc. PF: groups loaded ahead into registers. Split-K over groups with the Triton
        path's fixed-order reduction of the partials (deterministic)."""
        BN: ttgl.constexpr = 16 * RT * NW
        MMA: ttgl.constexpr = ttgl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[NW, 1], instr_shape=[16, 8])
        WL: ttgl.constexpr = _g_words_layout(NW, RT)
        SL: ttgl.constexpr = _g_scale_layout(NW, RT)
        AL: ttgl.constexpr = _g_act_layout(NW, BM)
        pid_n = ttgl.program_id(0)
        pid_k = ttgl.program_id(1)
        n_groups = K // 128
        per_split = ttgl.cdiv(n_groups, SPLIT_K)
        g0 = pid_k * per_split
        g1 = ttgl.minimum(g0 + per_split, n_groups)
        last = n_groups - 1

        rn = pid_n * BN + ttgl.arange(0, BN, layout=ttgl.SliceLayout(1, WL))
        rj = ttgl.arange(0, 16, layout=ttgl.SliceLayout(0, WL))
        w_ptrs = wq_ptr + rj[None, :] * N + rn[:, None]
        w_mask = (rn < N)[:, None] & (rj < 16)[None, :]
        rs = pid_n * BN + ttgl.arange(0, BN, layout=SL)
        s_ptrs = s_ptr + rs
        s_mask = rs < N
        ra = ttgl.arange(0, 16, layout=ttgl.SliceLayout(1, ttgl.SliceLayout(2, AL)))
        rm = ttgl.minimum(ttgl.arange(0, BM, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(2, AL))), M - 1)
        rp = ttgl.arange(0, 4, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(1, AL)))
        # A read as 32-bit words (bf16 pairs): rows past M re-read row M - 1 (never stored)
        a_ptrs = (a_ptr.to(ttgl.pointer_type(ttgl.int32), bitcast=True)
                  + (ra[:, None] * 4 + rm[None, :] * (K // 2))[:, :, None] + rp[None, None, :])

        # PF + 1 register sets, the loop unrolled PF + 1 times: set i holds group g + i; once computed
        # it is reloaded with group g + i + PF + 1, so PF groups are in flight during each group's
        # compute and no set is copied (group indices are clamped: no load needs a predicate)
        wa_, sa_ = _g_load_words(w_ptrs, w_mask, s_ptrs, s_mask, ttgl.minimum(g0, last), N)
        aa_ = ttgl.load(a_ptrs + ttgl.minimum(g0, last) * 64)
        wb_, sb_ = _g_load_words(w_ptrs, w_mask, s_ptrs, s_mask, ttgl.minimum(g0 + 1, last), N)
        ab_ = ttgl.load(a_ptrs + ttgl.minimum(g0 + 1, last) * 64)
        if PF >= 2:
            wc_, sc_ = _g_load_words(w_ptrs, w_mask, s_ptrs, s_mask, ttgl.minimum(g0 + 2, last), N)
            ac_ = ttgl.load(a_ptrs + ttgl.minimum(g0 + 2, last) * 64)
        acc = ttgl.zeros([BN, BM], ttgl.float32, MMA)
        for g in range(g0, g1, PF + 1):
            acc = _g_group_mma(wa_, sa_, aa_, acc, NW, RT, BM)
            wa_, sa_ = _g_load_words(w_ptrs, w_mask, s_ptrs, s_mask, ttgl.minimum(g + PF + 1, last), N)
            aa_ = ttgl.load(a_ptrs + ttgl.minimum(g + PF + 1, last) * 64)
            if g + 1 < g1:
                acc = _g_group_mma(wb_, sb_, ab_, acc, NW, RT, BM)
            wb_, sb_ = _g_load_words(w_ptrs, w_mask, s_ptrs, s_mask, ttgl.minimum(g + PF + 2, last), N)
            ab_ = ttgl.load(a_ptrs + ttgl.minimum(g + PF + 2, last) * 64)
            if PF >= 2:
                if g + 2 < g1:
                    acc = _g_group_mma(wc_, sc_, ac_, acc, NW, RT, BM)
                wc_, sc_ = _g_load_words(w_ptrs, w_mask, s_ptrs, s_mask, ttgl.minimum(g + PF + 3, last), N)
                ac_ = ttgl.load(a_ptrs + ttgl.minimum(g + PF + 3, last) * 64)

        # acc's row t is column n = a + 2 rep + 2 RT (r + 8 w) of the tile, t = r + 8 a + 16 w + 16 NW rep
        rt = ttgl.arange(0, BN, layout=ttgl.SliceLayout(1, MMA))
        rmo = ttgl.arange(0, BM, layout=ttgl.SliceLayout(0, MMA))
        n_out = (pid_n * BN + (rt // 8) % 2 + 2 * (rt // (16 * NW))
                 + 2 * RT * (rt % 8 + 8 * ((rt // 16) % NW)))
        c_ptrs = c_ptr + rmo[None, :] * N + n_out[:, None]
        c_mask = (n_out < N)[:, None] & (rmo < M)[None, :]
        if SPLIT_K == 1:
            ttgl.store(c_ptrs, acc.to(ttgl.bfloat16), mask=c_mask)
        else:
            tile_ws = ws_ptr + pid_n.to(ttgl.int64) * (SPLIT_K * BN * BM)
            blk = rt[:, None] * BM + rmo[None, :]
            ttgl.store(tile_ws + pid_k * (BN * BM) + blk, acc)
            _cta_barrier()   # all of this CTA's partial is written before the release below
            arrived = ttgl.atomic_add(count_ptr + pid_n, 1, sem="acq_rel", scope="gpu")
            if arrived == SPLIT_K - 1:
                total = ttgl.zeros([BN, BM], ttgl.float32, MMA)
                for sidx in range(SPLIT_K):     # fixed order: deterministic; not unrolled (registers)
                    total += ttgl.load(tile_ws + sidx * (BN * BM) + blk, cache_modifier=".cg")
                ttgl.store(c_ptrs, total.to(ttgl.bfloat16), mask=c_mask)
                ttgl.atomic_xchg(count_ptr + pid_n, 0, sem="relaxed", scope="gpu")


def _m16_configs():
    # (BM, RT, NW, SPLIT_K, PF); BN = 16 RT NW columns a program. Registers (offline sm_90 screen,
    # Triton 3.6): BM 16 RT 2 NW 4: 168 (PF 1: 3 programs an SM) or 228 (PF 2: 2 an SM); SPLIT_K
    # >= 12 took ~210, so none is offered. At N = 8192, BN = 128 gives 64 column tiles: SPLIT_K 6
    # fills one round of 3 programs on 132 SMs, 4 one round at 2 an SM; 8 splits K = 28672 into 28
    # groups exactly. BM 8 serves M <= 8 (one n8 tile: half the HMMA and activation loads).
    out = []
    for bm, rt, nw, split, pf in ((16, 2, 4, 6, 1), (16, 2, 4, 8, 1), (16, 2, 4, 4, 2), (16, 2, 4, 8, 2),
                                  (16, 2, 8, 4, 1), (16, 1, 4, 8, 2),
                                  (8, 4, 4, 6, 1), (8, 4, 4, 8, 1), (8, 2, 4, 6, 1), (8, 2, 4, 8, 2)):
        out.append(triton.Config({"BM": bm, "RT": rt, "NW": nw, "SPLIT_K": split, "PF": pf},
                                 num_warps=nw, num_stages=1))
    return out


def _m16_prune(configs, named_args, **kwargs):
    want = 8 if named_args["M"] <= 8 else 16
    return [c for c in configs if c.kwargs["BM"] == want]


_M16_CFGS = _m16_configs()
if gluon is not None:
    _w4a16_m16 = triton.autotune(configs=_M16_CFGS, key=["M", "N", "K"],
                                 prune_configs_by={"early_config_prune": _m16_prune})(_w4a16_m16_kernel)


def _gluon_m16_ok(A, S, M):
    """The Gluon kernel serves 2 <= M <= 16 on sm_90 with bf16 activations and scales (its decode is
    the bf16 exponent-bias one); the interpreter and every other case take the Triton path."""
    return (gluon is not None and not _INTERPRET and A.is_cuda and 2 <= M <= 16
            and A.dtype == torch.bfloat16 and S.dtype == torch.bfloat16
            and torch.cuda.get_device_capability(A.device) == (9, 0))


def _counters(device, n):
    buf = _COUNTERS.get(device)
    if buf is None or buf.numel() < n:
        buf = torch.zeros(max(n, 4096), dtype=torch.int32, device=device)
        _COUNTERS[device] = buf
    return buf


def run(A, Wq, S):
    M, K = A.shape
    N = Wq.shape[1]
    assert K % GROUP == 0 and Wq.shape[0] * 8 == K and S.shape == (K // GROUP, N)
    A, Wq, S = A.contiguous(), Wq.contiguous(), S.contiguous()
    C = torch.empty((M, N), dtype=A.dtype, device=A.device)
    if M == 0 or N == 0:
        return C
    if K == 0:   # an empty sum; the GEMV's and the Gluon kernel's clamped prefetch would read before Wq
        return C.zero_()
    if M == 1:
        # a single token: the CUDA-core GEMV (no tensor cores, no shared-memory layout change)
        if A.data_ptr() % 16:   # _act8_f32 reads A as int64 words: an aligned copy (never at a
            A = A.clone()       # fresh allocation or a row of one)
        bns = [(128 * c.kwargs["NR"], c.kwargs["SPLIT_K"]) for c in _GEMV_CFGS]
        ws = torch.empty(max(split * triton.cdiv(N, bn) * bn for bn, split in bns),
                         dtype=torch.float32, device=A.device)
        counters = _counters(A.device, triton.cdiv(N, min(bn for bn, _ in bns)))
        grid = lambda meta: (triton.cdiv(N, 128 * meta["NR"]), meta["SPLIT_K"])
        _gemv[grid](A, Wq, S, C, ws, counters, N, K, 0x4B000000, GROUP_SIZE=GROUP)
        return C
    if _gluon_m16_ok(A, S, M):
        # 2 <= M <= 16 on sm_90: mma.sync from registers, no shared-memory operand staging
        if A.data_ptr() % 16:   # A is read as bf16 pairs in 16-byte vectors: an aligned copy (never
            A = A.clone()       # at a fresh allocation)
        bns = [(16 * c.kwargs["RT"] * c.kwargs["NW"], c.kwargs["SPLIT_K"], c.kwargs["BM"]) for c in _M16_CFGS]
        ws = torch.empty(max(split * triton.cdiv(N, bn) * bn * bm for bn, split, bm in bns),
                         dtype=torch.float32, device=A.device)
        counters = _counters(A.device, triton.cdiv(N, min(bn for bn, _, _ in bns)))
        grid = lambda meta: (triton.cdiv(N, 16 * meta["RT"] * meta["NW"]), meta["SPLIT_K"])
        _w4a16_m16[grid](A, Wq, S, C, ws, counters, M, N, K)
        return C
    magic = (not _INTERPRET) and A.is_cuda and A.dtype == torch.bfloat16
    # workspace for the largest split-K partial set among the configs this M can pick
    want = max(16, min(128, triton.next_power_of_2(M)))
    cands = [c.kwargs for c in _CFGS if c.kwargs["BM"] == want] or [c.kwargs for c in _CFGS]
    ws_elems = max(c["SPLIT_K"] * triton.cdiv(M, c["BM"]) * c["BM"] * triton.cdiv(N, c["BN"]) * c["BN"]
                   for c in cands if c["SPLIT_K"] > 1) if any(c["SPLIT_K"] > 1 for c in cands) else 1
    ws = torch.empty(ws_elems, dtype=torch.float32, device=A.device)
    counters = _counters(A.device, triton.cdiv(M, _MIN_BM) * triton.cdiv(N, _MIN_BN))
    grid = lambda meta: (triton.cdiv(N, meta["BN"]), meta["SPLIT_K"], triton.cdiv(M, meta["BM"]))
    _w4a16[grid](A, Wq, S, C, ws, counters, M, N, K, GROUP_SIZE=GROUP, MAGIC=magic, ROWPERM=M <= 16)
    return C
