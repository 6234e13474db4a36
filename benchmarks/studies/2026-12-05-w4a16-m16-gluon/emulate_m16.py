"""A CPU emulation, in torch, of the value semantics of this study's Gluon kernel
(_w4a16_m16_kernel in candidates.toml): not the kernel itself (Gluon does not run under the Triton
interpreter, and this machine has no GPU), but each of its tensor steps mirrored with the same
index arithmetic, so that the K renaming, the pairing of codes and activations, the row renaming,
the per-group scales, the prefetch register sets and the split-K partition are checked against
reference.py:

    .venv/bin/python benchmarks/studies/2026-12-05-w4a16-m16-gluon/emulate_m16.py

Mirrored step by step (Gluon op -> torch op of identical value semantics):
  ttgl.join(x, y)            -> torch.stack((x, y), dim=-1)
  ttgl.split(x)              -> (x[..., 0], x[..., 1])
  ttgl.reshape / permute     -> torch reshape / permute (row-major, as Gluon with can_reorder=False)
  the inline-asm decode      -> its bit operations (lop3 0xEA = (a & b) | c, shr, the two bf16
                                halves of each 32-bit result read as bf16, fma(x, 1, -136) exact)
  x >> 16 H -> int16 -> bf16 -> an arithmetic shift, truncation to int16 and a bf16 bit view
  mma_v2(a, b, 0)            -> a @ b in float64 (exact here: the products and sums of bf16 values
                                this small are exact in float64 up to ~2^-52 relative)
Layouts are not emulated (they do not change values; the compiler's assert_trivial conversions
check that the operands need no data movement).

Checks: (1) for M in {2, 3, 8, 16} (BM 8 or 16 by M), N not a multiple of the tile (BN = 16 RT NW),
K a multiple of 128 only, every config of the candidate's list plus extra ones (SPLIT_K larger than
the group count, an odd number of groups per split): the emulation against the exact float64 sum
(max |C - exact| / max |exact| <= 1e-12) and against reference.py at the task's tolerance
(atol = rtol = 2e-2, C rounded to bf16 as the kernel stores it); (2) mutants, each a plausible
kernel mistake, must fail the exact check.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("w4a16_reference", ROOT / "tasks/w4a16_gemm/reference.py")
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

GROUP = 128
EXACT_BOUND = 1e-12


def bf16_bits_to_f64(bits16: torch.Tensor) -> torch.Tensor:
    """int64 tensor of 16-bit patterns -> their bf16 values in float64."""
    b = bits16 & 0xFFFF
    b = torch.where(b >= 0x8000, b - 0x10000, b).to(torch.int16)
    return b.view(torch.bfloat16).to(torch.float64)


# ---- the kernel's helpers, mirrored ---------------------------------------------------------------

def decode_planes(w: torch.Tensor, mut: set) -> list[torch.Tensor]:
    """The inline-asm decode: [.., ] int32 words -> p0..p7 (q_i - 8) in float64."""
    u = w.to(torch.int64) & 0xFFFFFFFF
    one, bias = 1.0, -136.0                 # 0x3f80 and 0xc308 as bf16
    p = [None] * 8
    for j in range(4):
        t = ((u >> (4 * j)) & 0x000F000F) | 0x43004300          # lop3 (a & b) | c, LUT 0xEA
        lo = bf16_bits_to_f64(t) * one + bias                       # fma.rn.bf16x2: exact here
        hi = bf16_bits_to_f64(t >> 16) * one + bias
        p[j], p[j + 4] = lo, hi                                     # mov.b32 {$j, $j+4}, t_j
    if "zero point 7" in mut:
        p = [x + 1 for x in p]
    return p


def decode_tile(w: torch.Tensor, NW: int, RT: int, mut: set) -> torch.Tensor:
    """_g_decode_tile: [BN, 16] words -> [BN, 128] (rows t, renamed k kk)."""
    BN = 16 * RT * NW
    p0, p1, p2, p3, p4, p5, p6, p7 = decode_planes(w, mut)
    j = lambda x, y: torch.stack((x, y), dim=-1)
    if "weights paired (i, i + 1)" in mut:      # the e axis joins codes i, i + 1 instead of i, i + 4
        x = j(j(j(p0, p4), j(p2, p6)), j(j(p1, p5), j(p3, p7)))
    else:
        x = j(j(j(p0, p2), j(p1, p3)), j(j(p4, p6), j(p5, p7)))
    x = x.reshape(NW, 8, RT, 2, 4, 4, 2, 2, 2)
    perm = [2, 0, 3, 1, 4, 6, 7, 5, 8]
    if "k blocks b and q swapped in the weights" in mut:
        perm = [2, 0, 3, 1, 5, 6, 7, 4, 8]
    x = x.permute(*perm)
    return x.reshape(BN, 128)


def half(x: torch.Tensor, H: int, mut: set) -> torch.Tensor:
    """_g_half: the bf16 in bits 16 H .. 16 H + 15 of each 32-bit word."""
    if "activation halves swapped" in mut:
        H = 1 - H
    return bf16_bits_to_f64((x.to(torch.int64) >> (16 * H)) & 0xFFFF)


def act_tile(x: torch.Tensor, BM: int, mut: set) -> torch.Tensor:
    """_g_act_tile: [16, BM, 4] int32 words of bf16 pairs -> [128, BM]."""
    sp = lambda t: (t[..., 0], t[..., 1])
    j = lambda a, b: torch.stack((a, b), dim=-1)
    u0, u1 = sp(x.reshape(16, BM, 2, 2))
    x0, x2 = sp(u0)
    x1, x3 = sp(u1)
    if "activations paired (i, i + 2)" in mut:
        x0, x2, x1, x3 = x0, x1, x2, x3
    z0 = j(j(half(x0, 0, mut), half(x2, 0, mut)), j(half(x0, 1, mut), half(x2, 1, mut)))
    z1 = j(j(half(x1, 0, mut), half(x3, 0, mut)), j(half(x1, 1, mut), half(x3, 1, mut)))
    z = j(z0, z1).reshape(4, 4, BM, 2, 2, 2)
    z = z.permute(0, 5, 4, 1, 3, 2)
    return z.reshape(128, BM)


def scale_rows(s: torch.Tensor, NW: int, RT: int, mut: set) -> torch.Tensor:
    """_g_scale_rows: [BN] scales in column order -> in the tile's row order."""
    if "scales not renamed" in mut:
        return s
    return s.reshape(NW, 8, RT, 2).permute(2, 0, 3, 1).reshape(16 * RT * NW)


def group_mma(w, s, a, acc, NW, RT, BM, mut):
    """_g_group_mma: acc + (decoded tile @ activation tile) * scales[:, None]."""
    part = decode_tile(w, NW, RT, mut) @ act_tile(a, BM, mut)
    return acc + part * scale_rows(s, NW, RT, mut)[:, None]


def kernel(A_bits32, M, Wq, S, N, K, BM, RT, NW, SPLIT_K, PF, mut=frozenset()):
    """_w4a16_m16_kernel over its whole grid; returns C [M, N] in float64 (the fp32 sums, before
    the bf16 rounding of the store)."""
    BN = 16 * RT * NW
    n_groups = K // GROUP
    per_split = -(-n_groups // SPLIT_K)
    last = n_groups - 1
    C = torch.full((M, N), float("nan"), dtype=torch.float64)
    Wq64 = Wq.to(torch.int64)
    S64 = S.to(torch.float64)
    for pid_n in range(-(-N // BN)):
        rn = pid_n * BN + torch.arange(BN)
        n_ok = rn < N
        rj = torch.arange(16)
        ra = torch.arange(16)
        rm = torch.clamp(torch.arange(BM), max=M - 1)             # rows past M re-read row M - 1
        rp = torch.arange(4)
        a_off = (ra[:, None] * 4 + rm[None, :] * (K // 2))[:, :, None] + rp[None, None, :]

        def load_words(g):
            if "next group's scale" in mut:
                gs = min(g + 1, last)
            else:
                gs = g
            rows = g * 16 + rj
            w = torch.where(n_ok[:, None], Wq64[rows[None, :], torch.where(n_ok, rn, 0)[:, None]], 0)
            s = torch.where(n_ok, S64[gs, torch.where(n_ok, rn, 0)], 0.0)
            return w, s

        def load_act(g):
            return A_bits32.reshape(-1)[a_off + g * 64]

        partials = []
        for pid_k in range(SPLIT_K):
            g0 = pid_k * per_split
            g1 = min(g0 + per_split, n_groups)
            acc = torch.zeros(BN, BM, dtype=torch.float64)
            sets = [(*load_words(min(g0 + i, last)), load_act(min(g0 + i, last))) for i in range(PF + 1)]
            for g in range(g0, g1, PF + 1):
                for i in range(PF + 1):
                    if i == 0 or g + i < g1 or "tail group computed twice" in mut:
                        w, s, a = sets[i]
                        acc = group_mma(w, s, a, acc, NW, RT, BM, mut)
                    nxt = min(g + i + PF + 1, last)
                    sets[i] = (*load_words(nxt), load_act(nxt))
            partials.append(acc)
        total = torch.zeros(BN, BM, dtype=torch.float64)
        for p in partials:                                        # fixed order
            total = total + p
        rt = torch.arange(BN)
        n_out = (pid_n * BN + (rt // 8) % 2 + 2 * (rt // (16 * NW)) + 2 * RT * (rt % 8 + 8 * ((rt // 16) % NW)))
        if "epilogue rows not renamed" in mut:
            n_out = pid_n * BN + rt
        for m in range(min(BM, M)):
            ok = n_out < N
            C[m, n_out[ok]] = total[ok, m]
    return C


# ---- the checks ------------------------------------------------------------------------------------

def inputs(M, N, K, seed):
    g = torch.Generator().manual_seed(seed)
    d = ref.make_inputs({"M": M, "N": N, "K": K}, {"dtype": torch.bfloat16}, {}, g, "cpu")
    A, Wq, S = d["A"], d["Wq"], d["S"]
    bits = A.contiguous().view(torch.int16).to(torch.int64) & 0xFFFF
    words = bits.reshape(M, K // 2, 2)
    A_bits32 = words[..., 0] | (words[..., 1] << 16)             # little-endian bf16 pairs
    return A, A_bits32, Wq, S


def exact(A, Wq, S):
    q = ref.unpack_int4(Wq).to(torch.float64) - 8
    W = q * S.to(torch.float64).repeat_interleave(GROUP, dim=0)
    return A.to(torch.float64) @ W


# (RT, NW, SPLIT_K, PF): the candidate's configs (BM 16 and 8) and extra splits
CONFIGS_16 = [(2, 4, 6, 1), (2, 4, 8, 1), (2, 4, 4, 2), (2, 4, 8, 2), (1, 8, 4, 1), (2, 8, 4, 1),
              (1, 4, 3, 2), (2, 2, 5, 1)]
CONFIGS_8 = [(4, 4, 6, 1), (4, 4, 8, 1), (2, 4, 4, 2), (2, 4, 8, 2), (1, 2, 7, 2)]
# (M, N, K): N not a multiple of any tile, K = 1..11 groups (odd and even counts per split)
SHAPES = [(2, 200, 384), (3, 300, 1408), (8, 130, 128), (16, 264, 896), (16, 520, 640),
          (5, 72, 256), (12, 1000, 512)]


def run_checks(mut=frozenset(), shapes=SHAPES, verbose=True):
    worst = 0.0
    ref_ok = True
    for si, (M, N, K) in enumerate(shapes):
        A, A32, Wq, S = inputs(M, N, K, 1000 + si)
        ex = exact(A, Wq, S)
        R = ref.reference(A, Wq, S).to(torch.float64)
        BM = 8 if M <= 8 else 16
        for RT, NW, SK, PF in (CONFIGS_8 if BM == 8 else CONFIGS_16):
            C = kernel(A32, M, Wq, S, N, K, BM, RT, NW, SK, PF, mut)
            err = ((C - ex).abs().max() / ex.abs().max()).item()
            if err != err:
                err = float("inf")                             # a NaN: a column never written
            worst = max(worst, err)
            Cb = C.to(torch.bfloat16).to(torch.float64)
            ok = bool(torch.allclose(Cb, R, atol=2e-2, rtol=2e-2))
            ref_ok &= ok
            if verbose:
                print(f"  M={M:2d} N={N:4d} K={K:4d} BM={BM:2d} RT={RT} NW={NW} SPLIT_K={SK:2d} PF={PF}: "
                      f"max|C - exact|/max|exact| = {err:.2e}, vs reference.py (2e-2): {'ok' if ok else 'FAIL'}")
    return worst, ref_ok


MUTANTS = ["weights paired (i, i + 1)", "activations paired (i, i + 2)", "activation halves swapped",
           "k blocks b and q swapped in the weights", "next group's scale", "scales not renamed",
           "epilogue rows not renamed", "tail group computed twice", "zero point 7"]


def main() -> int:
    torch.set_printoptions(precision=3)
    print("(1) candidate arithmetic, every shape x config:")
    worst, ref_ok = run_checks()
    good = worst <= EXACT_BOUND and ref_ok
    print(f"worst max|C - exact|/max|exact| = {worst:.2e} (bound {EXACT_BOUND:.0e}); reference.py "
          f"tolerance: {'all pass' if ref_ok else 'FAILURES'} -> {'PASS' if good else 'FAIL'}")
    print("\n(2) mutants (each must fail the exact check):")
    caught = 0
    for m in MUTANTS:
        w, r = run_checks(frozenset({m}), shapes=SHAPES[:4], verbose=False)
        hit = w > EXACT_BOUND
        caught += hit
        print(f"  {m:45s} worst error {w:.2e}, reference tolerance {'pass' if r else 'fail'} -> "
              f"{'caught' if hit else 'NOT CAUGHT'}")
    print(f"mutants caught: {caught} / {len(MUTANTS)}")
    return 0 if good and caught == len(MUTANTS) else 1


if __name__ == "__main__":
    sys.exit(main())
