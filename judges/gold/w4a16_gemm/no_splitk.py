"""Expert w4a16 GEMM with split-K ablated (gold-set ablation `no_splitk`).

Identical to tasks/w4a16_gemm/expert.py as of a0298f0 (before its M = 1 GEMV and row renaming)
except that K is never split: the grid is (N tiles) x (token tiles) and each program runs the
whole K range and stores its tile; there is no workspace, no arrival counter and no SPLIT_K in
the configs.

Expert GPTQ int4-weight x 16-bit-activation GEMM (symmetric, zero point 8, group 128).

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
* One program per (N tile, token tile) runs the whole K range (loads marked evict-first, 3-5
  pipeline stages) and stores its tile.
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



@triton.jit
def _nibble_planes(w, cty: tl.constexpr, MAGIC: tl.constexpr):
    """The 8 planes (q_i - 8), i = 0..7, of a tensor of packed words, in dtype cty."""
    if MAGIC:
        # One int32 word -> 8 bf16 values q - 8. lop3 (a & b) | c with LUT 0xEA keeps nibbles
        # j and j+4 (bits 0-3 and 16-19 after the shift) under the exponent 0x43 of bf16 128.0,
        # giving the pair (128 + q_j, 128 + q_{j+4}); fma x * 1 - 136 leaves q - 8 exactly.
        p0, p1, p2, p3, p4, p5, p6, p7 = tl.inline_asm_elementwise(
            asm=(
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
            ),
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
    a_ptr, wq_ptr, s_ptr, c_ptr,
    M, N, K,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    PLANES: tl.constexpr, GROUP_SIZE: tl.constexpr, MAGIC: tl.constexpr,
):
    """C[tok, n] tiles of A . ((q - 8) * S): computed as C^T = W^T . A^T over a K slice."""
    tl.static_assert(GROUP_SIZE % BK == 0, "a K tile never straddles a scale group")
    cty = a_ptr.dtype.element_ty
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    k_steps = K // BK

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
    s_ptrs = s_ptr + rn_c                                        # [BN]

    acc = tl.zeros((BN, BM), dtype=tl.float32)
    for ks in tl.range(0, k_steps):
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
            part = tl.dot(wd, a)                                  # exact (q - 8), fp32 result
        acc += part * s.to(tl.float32)[:, None]                   # one scale per column

    c_ptrs = c_ptr + rm[None, :] * N + rn[:, None]
    c_mask = n_ok[:, None] & m_ok[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def _configs():
    if _INTERPRET:
        return [triton.Config({"BM": 16, "BN": 64, "BK": 128, "PLANES": False},
                              num_warps=4, num_stages=2)]

    def cfg(bm, bn, bk, split, stages, warps=4, planes=False):
        # (the split factor of the full design is ignored: every program runs all of K)
        return triton.Config({"BM": bm, "BN": bn, "BK": bk, "PLANES": planes},
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
    kept, seen = [], set()
    for c in configs:
        key = (tuple(sorted(c.kwargs.items())), c.num_warps, c.num_stages)
        if c.kwargs["BM"] == want and key not in seen:
            seen.add(key)
            kept.append(c)
    return kept or configs


_w4a16 = triton.autotune(
    configs=_configs(),
    key=["M", "N", "K", "MAGIC"],
    prune_configs_by=None if _INTERPRET else {"early_config_prune": _prune},
)(_w4a16_kernel)

def run(A, Wq, S):
    M, K = A.shape
    N = Wq.shape[1]
    assert K % GROUP == 0 and Wq.shape[0] * 8 == K and S.shape == (K // GROUP, N)
    A, Wq, S = A.contiguous(), Wq.contiguous(), S.contiguous()
    C = torch.empty((M, N), dtype=A.dtype, device=A.device)
    if M == 0 or N == 0:
        return C
    magic = (not _INTERPRET) and A.is_cuda and A.dtype == torch.bfloat16
    grid = lambda meta: (triton.cdiv(N, meta["BN"]), triton.cdiv(M, meta["BM"]))
    _w4a16[grid](A, Wq, S, C, M, N, K, GROUP_SIZE=GROUP, MAGIC=magic)
    return C
