"""Gated delta rule prefill (Qwen3-Next GDN) as a chunked WY-form scan in Triton kernels.

Computes, for each packed sequence n and v-head h (q/k head h // (Hv // Hqk)), from
S = state[n, h] ([V, K], "k-last"), token by token:
    S <- exp(g_t) S;  u = (v_t - S k_t) beta_t;  S <- S + u k_t^T;  o_t = scale * S q_t
and returns o [T, Hv, V] (q's dtype) and final_state [N, Hv, V, K] float32.

Design (chunks of BT = 64 tokens; the state is handled as h = S^T, [K, V]):
- `_gdn_tinv_fwd`, one program of ONE warp per (chunk, v-head): the chunk-local cumulative gate
  gc = cumsum(g) / ln 2 (stored, every later decay is exp2 of a difference of gc's); the scaled
  key Gram matrix A = strict_tril(beta k k^T * exp2(gc_i - gc_j)) in 16 x 16 blocks (bf16
  operands, fp32 sums); its unit lower-triangular inverse T = (I + A)^-1, written in bf16.
  The four diagonal blocks are inverted side by side (`_inv_diag4`) by a column-oriented forward
  substitution whose per-step reductions broadcast back without a layout change; on one warp
  each reduction is a shuffle (no shared memory, no barrier), and an SM holds 8 such programs.
  The blocks below the diagonal, T_ij = -T_ii sum_l A_il T_lj, are tensor-core dots in tf32x3
  (each fp32 operand split into a tf32 high and low part, three products: about fp32 accuracy;
  fp32 FMA dots on one warp spill, and plain tf32, fla-core's choice, adds a rounding point).
- `_gdn_wu_apply`, per (chunk, v-head): the WY factors W = T (beta exp2(gc) k) and
  U = T (beta v) as one 64-row dot each, written in bf16. The rank-1 updates of the chunk
  collapse to h_end = exp2(gc_last) h + K^T ((U - W h) * exp2(gc_last - gc)).
- `_gdn_state_fwd`, one program per (sequence, v-head, BV-column tile of h): walks the chunks of
  its sequence in order, carrying h in fp32 registers as two 64-row blocks (K = 128), writes h at
  each chunk start (bf16) and the corrected values v_new = U - W h, and the final state.
- `_gdn_output_fwd`, one program per (chunk, v-head, BV tile), all chunks in parallel:
  o = scale * ((q h) * exp2(gc) + ((q k^T) * exp2(gc_i - gc_j) * causal) v_new).
Varlen without a host sync: `_gdn_chunk_table` builds the (sequence, chunk) pairs from
cu_seqlens on the device (the host never reads cu_seqlens, so the call never waits for the
device), and the grids cover an upper bound of the chunk count, cdiv(T, BT) + N - 1; slots past
the last chunk are masked. Gates are pre-scaled by 1/ln 2 and every decay is an exp2.
Adopted from benchmarks/studies/2026-12-05-gdn-tinv, candidate `tinv_w1_x3_syncfree`. Its two
parts were timed on the H100 (2026-12-05, session 27), not yet the whole: the tf32 form of this
file went 3499 -> 2027 us at 1 x 32768, 1098 -> 509 us at 4 x 8192 and 653 -> 334 us at 1 x 8192
(event medians, same call), and with the host's chunk table the whole call of the tf32x3 form
took 2.5-7 % longer than the tf32 one's.
"""

import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
RCP_LN2 = tl.constexpr(1.4426950408889634)
BT = 64   # chunk length
BC = 16   # sub-block of the triangular solve


@triton.jit
def _inv_diag4(a0, a1, a2, a3, BC: tl.constexpr):
    """(I + A)^-1 of four strictly lower-triangular [BC, BC] blocks, solved side by side.
    Column-oriented (right-looking) forward substitution: once row s of X is final, its
    multiple A[r, s] X[s, :] is subtracted from every row r below it. Row s of X is a reduction
    of X over its rows and column s of A one over its columns; both results broadcast straight
    back onto the [BC, BC] layout, so a step needs no layout change (the row-oriented form turns
    A's row from a column vector into a row vector each step), and the column of A does not
    depend on X, so only one reduction per step is on the dependent chain. The four blocks are
    independent chains in the same loop. Rows past the sequence end have A = 0 and keep their
    identity row; step BC - 1 would touch no row and is left out."""
    o = tl.arange(0, BC)
    eye = (o[:, None] == o[None, :]).to(tl.float32)
    first = o[None, :] == 0
    # step 0: row 0 of X is e_0, so column 0 of X becomes e_0 - A[:, 0]
    x0 = eye - tl.where(first, a0, 0.0)
    x1 = eye - tl.where(first, a1, 0.0)
    x2 = eye - tl.where(first, a2, 0.0)
    x3 = eye - tl.where(first, a3, 0.0)
    for s in range(1, BC - 1):
        in_col = o[None, :] == s
        in_row = o[:, None] == s
        x0 -= tl.sum(tl.where(in_col, a0, 0.0), axis=1)[:, None] * tl.sum(tl.where(in_row, x0, 0.0), axis=0)[None, :]
        x1 -= tl.sum(tl.where(in_col, a1, 0.0), axis=1)[:, None] * tl.sum(tl.where(in_row, x1, 0.0), axis=0)[None, :]
        x2 -= tl.sum(tl.where(in_col, a2, 0.0), axis=1)[:, None] * tl.sum(tl.where(in_row, x2, 0.0), axis=0)[None, :]
        x3 -= tl.sum(tl.where(in_col, a3, 0.0), axis=1)[:, None] * tl.sum(tl.where(in_row, x3, 0.0), axis=0)[None, :]
    return x0, x1, x2, x3



@triton.jit
def _chunk_bounds(CU, CHUNK_IDX, i_t):
    """Chunk i_t's index within its sequence and that sequence's [bos, eos) token range, read
    from the chunk table (sequence, chunk-in-sequence) pairs and cu_seqlens."""
    seq = tl.load(CHUNK_IDX + 2 * i_t)
    ic = tl.load(CHUNK_IDX + 2 * i_t + 1)
    bos = tl.load(CU + seq).to(tl.int64)
    eos = tl.load(CU + seq + 1).to(tl.int64)
    return ic, bos, eos


@triton.jit
def _gdn_tinv_fwd(K_ptr, G_ptr, BETA, GC, TB, CU, CHUNK_IDX, Hqk, Hv,
                  K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr,
                  DOT_PRECISION: tl.constexpr):
    """Per (chunk, v-head), meant for one warp: GC = chunk-local cumsum(g) / ln 2 and
    T = (I + strict_tril(beta k k^T exp2(gc_i - gc_j)))^-1, written in bf16 to TB [T, Hv, BT]
    (the ten blocks on and below the block diagonal; the W/U kernel masks the rest).
    One warp holds every [BC, BC] tile whole, so every reduction of the substitution is a
    shuffle inside the warp (no shared-memory round trip, no barrier), and an SM holds as many
    of these programs as its registers allow."""
    i_t = tl.program_id(0)
    hv = tl.program_id(1)
    hk = hv // (Hv // Hqk)
    ic, bos, eos = _chunk_bounds(CU, CHUNK_IDX, i_t)
    t0 = bos + ic * BT
    o_c = tl.arange(0, BC)
    r0 = t0 + o_c
    r1 = r0 + BC
    r2 = r0 + 2 * BC
    r3 = r0 + 3 * BC
    m0, m1, m2, m3 = r0 < eos, r1 < eos, r2 < eos, r3 < eos

    # gate prefix (log2 domain) of the four sub-blocks, each offset by the sums before it
    g0 = tl.load(G_ptr + r0 * Hv + hv, mask=m0, other=0.0)
    g1 = tl.load(G_ptr + r1 * Hv + hv, mask=m1, other=0.0)
    g2 = tl.load(G_ptr + r2 * Hv + hv, mask=m2, other=0.0)
    g3 = tl.load(G_ptr + r3 * Hv + hv, mask=m3, other=0.0)
    e0 = tl.sum(g0, axis=0)
    e1 = e0 + tl.sum(g1, axis=0)
    e2 = e1 + tl.sum(g2, axis=0)
    c0 = tl.cumsum(g0, axis=0) * RCP_LN2
    c1 = (tl.cumsum(g1, axis=0) + e0) * RCP_LN2
    c2 = (tl.cumsum(g2, axis=0) + e1) * RCP_LN2
    c3 = (tl.cumsum(g3, axis=0) + e2) * RCP_LN2
    tl.store(GC + r0 * Hv + hv, c0, mask=m0)
    tl.store(GC + r1 * Hv + hv, c1, mask=m1)
    tl.store(GC + r2 * Hv + hv, c2, mask=m2)
    tl.store(GC + r3 * Hv + hv, c3, mask=m3)

    # Gram blocks k_i . k_j on and below the block diagonal: bf16 operands (exact products),
    # fp32 sums over BK-wide slices of K
    a00 = tl.zeros([BC, BC], dtype=tl.float32)
    a10 = tl.zeros([BC, BC], dtype=tl.float32)
    a11 = tl.zeros([BC, BC], dtype=tl.float32)
    a20 = tl.zeros([BC, BC], dtype=tl.float32)
    a21 = tl.zeros([BC, BC], dtype=tl.float32)
    a22 = tl.zeros([BC, BC], dtype=tl.float32)
    a30 = tl.zeros([BC, BC], dtype=tl.float32)
    a31 = tl.zeros([BC, BC], dtype=tl.float32)
    a32 = tl.zeros([BC, BC], dtype=tl.float32)
    a33 = tl.zeros([BC, BC], dtype=tl.float32)
    for kk in range(0, K, BK):
        o_k = kk + tl.arange(0, BK)
        y0 = tl.load(K_ptr + (r0 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m0[:, None], other=0.0)
        y1 = tl.load(K_ptr + (r1 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m1[:, None], other=0.0)
        y2 = tl.load(K_ptr + (r2 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m2[:, None], other=0.0)
        y3 = tl.load(K_ptr + (r3 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m3[:, None], other=0.0)
        a00 = tl.dot(y0, tl.trans(y0), a00)
        a11 = tl.dot(y1, tl.trans(y1), a11)
        a22 = tl.dot(y2, tl.trans(y2), a22)
        a33 = tl.dot(y3, tl.trans(y3), a33)
        a10 = tl.dot(y1, tl.trans(y0), a10)
        a21 = tl.dot(y2, tl.trans(y1), a21)
        a32 = tl.dot(y3, tl.trans(y2), a32)
        a20 = tl.dot(y2, tl.trans(y0), a20)
        a31 = tl.dot(y3, tl.trans(y1), a31)
        a30 = tl.dot(y3, tl.trans(y0), a30)

    # A = beta_i exp2(gc_i - gc_j) k_i . k_j, strictly below the diagonal (the diagonal blocks
    # cut their upper triangle before the exp2, where gc_i - gc_j could be large and positive)
    b0 = tl.load(BETA + r0 * Hv + hv, mask=m0, other=0.0)
    b1 = tl.load(BETA + r1 * Hv + hv, mask=m1, other=0.0)
    b2 = tl.load(BETA + r2 * Hv + hv, mask=m2, other=0.0)
    b3 = tl.load(BETA + r3 * Hv + hv, mask=m3, other=0.0)
    low = o_c[:, None] > o_c[None, :]
    a00 = tl.where(low, a00 * b0[:, None] * tl.exp2(tl.where(low, c0[:, None] - c0[None, :], 0.0)), 0.0)
    a11 = tl.where(low, a11 * b1[:, None] * tl.exp2(tl.where(low, c1[:, None] - c1[None, :], 0.0)), 0.0)
    a22 = tl.where(low, a22 * b2[:, None] * tl.exp2(tl.where(low, c2[:, None] - c2[None, :], 0.0)), 0.0)
    a33 = tl.where(low, a33 * b3[:, None] * tl.exp2(tl.where(low, c3[:, None] - c3[None, :], 0.0)), 0.0)
    a10 = a10 * b1[:, None] * tl.exp2(c1[:, None] - c0[None, :])
    a21 = a21 * b2[:, None] * tl.exp2(c2[:, None] - c1[None, :])
    a32 = a32 * b3[:, None] * tl.exp2(c3[:, None] - c2[None, :])
    a20 = a20 * b2[:, None] * tl.exp2(c2[:, None] - c0[None, :])
    a31 = a31 * b3[:, None] * tl.exp2(c3[:, None] - c1[None, :])
    a30 = a30 * b3[:, None] * tl.exp2(c3[:, None] - c0[None, :])

    # diagonal blocks of T, the four solves side by side
    t00, t11, t22, t33 = _inv_diag4(a00, a11, a22, a33, BC)
    # blocks below: T_ij = -T_ii sum_{j <= l < i} A_il T_lj, first diagonal first
    t10 = -tl.dot(t11, tl.dot(a10, t00, input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)
    t21 = -tl.dot(t22, tl.dot(a21, t11, input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)
    t32 = -tl.dot(t33, tl.dot(a32, t22, input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)
    t20 = -tl.dot(t22, tl.dot(a21, t10, tl.dot(a20, t00, input_precision=DOT_PRECISION),
                              input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)
    t31 = -tl.dot(t33, tl.dot(a32, t21, tl.dot(a31, t11, input_precision=DOT_PRECISION),
                              input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)
    t30 = -tl.dot(t33, tl.dot(a32, t20, tl.dot(a31, t10, tl.dot(a30, t00, input_precision=DOT_PRECISION),
                                                input_precision=DOT_PRECISION),
                              input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)

    # T in bf16 (the rounding point before the W and U dots); rows past the end unwritten
    dt = TB.dtype.element_ty
    p0 = TB + (r0 * Hv + hv)[:, None] * BT + o_c[None, :]
    p1 = TB + (r1 * Hv + hv)[:, None] * BT + o_c[None, :]
    p2 = TB + (r2 * Hv + hv)[:, None] * BT + o_c[None, :]
    p3 = TB + (r3 * Hv + hv)[:, None] * BT + o_c[None, :]
    tl.store(p0, t00.to(dt), mask=m0[:, None])
    tl.store(p1, t10.to(dt), mask=m1[:, None])
    tl.store(p1 + BC, t11.to(dt), mask=m1[:, None])
    tl.store(p2, t20.to(dt), mask=m2[:, None])
    tl.store(p2 + BC, t21.to(dt), mask=m2[:, None])
    tl.store(p2 + 2 * BC, t22.to(dt), mask=m2[:, None])
    tl.store(p3, t30.to(dt), mask=m3[:, None])
    tl.store(p3 + BC, t31.to(dt), mask=m3[:, None])
    tl.store(p3 + 2 * BC, t32.to(dt), mask=m3[:, None])
    tl.store(p3 + 3 * BC, t33.to(dt), mask=m3[:, None])

@triton.jit
def _gdn_wu_apply(K_ptr, V_ptr, BETA, GC, TB, W, U, CU, CHUNK_IDX, Hqk, Hv,
                  K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    """Per (chunk, v-head): W = T (beta exp2(gc) k) and U = T (beta v) with T read back from TB,
    each a single [BT, BT] x [BT, K or V] bf16 dot with fp32 accumulation (a 64-row tensor-core
    tile, not a chain of ten 16-row dots per output), stored in bf16."""
    i_t = tl.program_id(0)
    hv = tl.program_id(1)
    hk = hv // (Hv // Hqk)
    ic, bos, eos = _chunk_bounds(CU, CHUNK_IDX, i_t)
    o_t = tl.arange(0, BT)
    o_k = tl.arange(0, K)
    o_v = tl.arange(0, V)
    rows = bos + ic * BT + o_t
    m_t = rows < eos
    # blocks above the block diagonal were never written; rows past the end read as zero
    on_or_below = (o_t[None, :] // BC) <= (o_t[:, None] // BC)
    t = tl.load(TB + (rows * Hv + hv)[:, None] * BT + o_t[None, :],
                mask=m_t[:, None] & on_or_below, other=0.0)
    b = tl.load(BETA + rows * Hv + hv, mask=m_t, other=0.0)
    gc = tl.load(GC + rows * Hv + hv, mask=m_t, other=0.0)
    dt = K_ptr.dtype.element_ty
    kx = tl.load(K_ptr + (rows * Hqk + hk)[:, None] * K + o_k[None, :], mask=m_t[:, None], other=0.0)
    kd = (kx * (b * tl.exp2(gc))[:, None]).to(dt)
    w = tl.dot(t, kd)
    tl.store(W + (rows * Hv + hv)[:, None] * K + o_k[None, :], w.to(W.dtype.element_ty), mask=m_t[:, None])
    vx = tl.load(V_ptr + (rows * Hv + hv)[:, None] * V + o_v[None, :], mask=m_t[:, None], other=0.0)
    vb = (vx * b[:, None]).to(dt)
    u = tl.dot(t, vb)
    tl.store(U + (rows * Hv + hv)[:, None] * V + o_v[None, :], u.to(U.dtype.element_ty), mask=m_t[:, None])

_STATE_CONFIGS = [
    triton.Config({"BV": 32}, num_warps=4, num_stages=2),
    triton.Config({"BV": 32}, num_warps=4, num_stages=3),
    triton.Config({"BV": 64}, num_warps=4, num_stages=2),
    triton.Config({"BV": 16}, num_warps=2, num_stages=3),
]
_OUT_CONFIGS = [
    triton.Config({"BV": 128}, num_warps=8, num_stages=2),
    triton.Config({"BV": 64}, num_warps=4, num_stages=2),
    triton.Config({"BV": 64}, num_warps=4, num_stages=3),
]
if _INTERPRET:
    _STATE_CONFIGS = [triton.Config({"BV": 32}, num_warps=4, num_stages=2)]
    _OUT_CONFIGS = [triton.Config({"BV": 32}, num_warps=4, num_stages=2)]


@triton.autotune(configs=_STATE_CONFIGS, key=["K", "V", "NH"])
@triton.jit
def _gdn_state_fwd(K_ptr, W, U, GC, S0, HBUF, VNEW, FINAL, CU, CHUNK_OFF, Hqk, Hv, NH,
                   K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
                   BV: tl.constexpr):
    """Per (sequence, v-head, BV columns of h = S^T): for each chunk in order, HBUF[chunk] = h
    (bf16); VNEW = U - W h; h <- exp2(gc_last) h + K^T (VNEW exp2(gc_last - gc)). FINAL = S."""
    i_v = tl.program_id(0)
    i_nh = tl.program_id(1)
    seq = i_nh // Hv
    hv = i_nh % Hv
    hk = hv // (Hv // Hqk)
    bos = tl.load(CU + seq).to(tl.int64)
    eos = tl.load(CU + seq + 1).to(tl.int64)
    c_off = tl.load(CHUNK_OFF + seq).to(tl.int64)
    o_t = tl.arange(0, BT)
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_v = o_v < V
    # h = S^T as two BK-row register blocks (K = 2 * BK), fp32 for the whole walk
    s0 = S0 + i_nh.to(tl.int64) * V * K + o_v[None, :] * K
    h1 = tl.zeros([BK, BV], dtype=tl.float32)
    h1 += tl.load(s0 + o_k[:, None], mask=m_v[None, :], other=0.0)
    if K > BK:
        h2 = tl.zeros([BK, BV], dtype=tl.float32)
        h2 += tl.load(s0 + (BK + o_k)[:, None], mask=m_v[None, :], other=0.0)
    dt = K_ptr.dtype.element_ty
    n_chunks = tl.cdiv(eos - bos, BT)
    for ic in range(0, n_chunks):
        rows = bos + ic * BT + o_t
        m_t = rows < eos
        hb = HBUF + ((c_off + ic) * Hv + hv) * K * V + o_k[:, None] * V + o_v[None, :]
        tl.store(hb, h1.to(HBUF.dtype.element_ty), mask=m_v[None, :])
        if K > BK:
            tl.store(hb + BK * V, h2.to(HBUF.dtype.element_ty), mask=m_v[None, :])
        # v_new = U - W h
        wp = W + (rows * Hv + hv)[:, None] * K + o_k[None, :]
        w1 = tl.load(wp, mask=m_t[:, None], other=0.0)
        vn = tl.load(U + (rows * Hv + hv)[:, None] * V + o_v[None, :],
                     mask=m_t[:, None] & m_v[None, :], other=0.0).to(tl.float32)
        vn -= tl.dot(w1, h1.to(dt))
        if K > BK:
            w2 = tl.load(wp + BK, mask=m_t[:, None], other=0.0)
            vn -= tl.dot(w2, h2.to(dt))
        tl.store(VNEW + (rows * Hv + hv)[:, None] * V + o_v[None, :], vn.to(VNEW.dtype.element_ty),
                 mask=m_t[:, None] & m_v[None, :])
        # h <- exp2(gc_last) h + K^T (v_new * exp2(gc_last - gc))
        gc = tl.load(GC + rows * Hv + hv, mask=m_t, other=0.0)
        last = tl.minimum(bos + ic * BT + BT, eos) - 1
        gl = tl.load(GC + last * Hv + hv)
        vd = tl.where(m_t[:, None], vn * tl.exp2(gl - gc)[:, None], 0.0).to(dt)
        kp = K_ptr + (rows * Hqk + hk)[:, None] * K + o_k[None, :]
        k1 = tl.load(kp, mask=m_t[:, None], other=0.0)
        h1 = tl.dot(tl.trans(k1), vd, h1 * tl.exp2(gl))
        if K > BK:
            k2 = tl.load(kp + BK, mask=m_t[:, None], other=0.0)
            h2 = tl.dot(tl.trans(k2), vd, h2 * tl.exp2(gl))
    f = FINAL + i_nh.to(tl.int64) * V * K + o_v[None, :] * K
    tl.store(f + o_k[:, None], h1, mask=m_v[None, :])
    if K > BK:
        tl.store(f + (BK + o_k)[:, None], h2, mask=m_v[None, :])


@triton.autotune(configs=_OUT_CONFIGS, key=["K", "V"])
@triton.jit
def _gdn_output_fwd(Q, K_ptr, VNEW, GC, HBUF, O, CU, CHUNK_IDX, scale, Hqk, Hv,
                    K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr):
    """Per (chunk, v-head, BV columns): o = scale * ((q h) exp2(gc) + ((q k^T) exp2(gc_i - gc_j)
    [j <= i]) v_new), h being the state at the chunk's start."""
    i_v = tl.program_id(0)
    i_t = tl.program_id(1)
    hv = tl.program_id(2)
    hk = hv // (Hv // Hqk)
    ic, bos, eos = _chunk_bounds(CU, CHUNK_IDX, i_t)
    o_t = tl.arange(0, BT)
    o_k = tl.arange(0, K)
    o_v = i_v * BV + tl.arange(0, BV)
    m_v = o_v < V
    rows = bos + ic * BT + o_t
    m_t = rows < eos
    q = tl.load(Q + (rows * Hqk + hk)[:, None] * K + o_k[None, :], mask=m_t[:, None], other=0.0)
    k = tl.load(K_ptr + (rows * Hqk + hk)[:, None] * K + o_k[None, :], mask=m_t[:, None], other=0.0)
    h = tl.load(HBUF + (i_t.to(tl.int64) * Hv + hv) * K * V + o_k[:, None] * V + o_v[None, :],
                mask=m_v[None, :], other=0.0)
    gc = tl.load(GC + rows * Hv + hv, mask=m_t, other=0.0)
    acc = tl.dot(q, h) * tl.exp2(gc)[:, None]
    s = tl.dot(q, tl.trans(k))
    causal = o_t[:, None] >= o_t[None, :]
    s = tl.where(causal, s * tl.exp2(tl.where(causal, gc[:, None] - gc[None, :], 0.0)), 0.0)
    vn = tl.load(VNEW + (rows * Hv + hv)[:, None] * V + o_v[None, :], mask=m_t[:, None] & m_v[None, :], other=0.0)
    acc = tl.dot(s.to(vn.dtype), vn, acc)
    tl.store(O + (rows * Hv + hv)[:, None] * V + o_v[None, :], (acc * scale).to(O.dtype.element_ty),
             mask=m_t[:, None] & m_v[None, :])


@triton.jit
def _gdn_chunk_table(CU, CHUNK_IDX, CHUNK_OFF, N, NT, BT: tl.constexpr, BLOCK: tl.constexpr):
    """Chunk slots j < NT (an upper bound of the chunk count) to (sequence, chunk) pairs, read from
    cu_seqlens on the device; CHUNK_OFF[n] = first chunk number of sequence n. Slots past the last
    chunk map to the last sequence with a chunk number past its end, so every row they touch is
    masked off and they write nothing."""
    pid = tl.program_id(0)
    j = pid * BLOCK + tl.arange(0, BLOCK)
    seq = tl.zeros([BLOCK], dtype=tl.int32)
    first = tl.zeros([BLOCK], dtype=tl.int64)
    start = tl.load(CU) * 0            # int64 zero: the running chunk count
    for n in range(0, N):
        tl.store(CHUNK_OFF + n, start.to(tl.int32), mask=pid == 0)
        later = j >= start             # slot j is in sequence n or after it
        seq = tl.where(later, n, seq)
        first = tl.where(later, start, first)
        start += tl.cdiv(tl.load(CU + n + 1) - tl.load(CU + n), BT)
    tl.store(CHUNK_OFF + N, start.to(tl.int32), mask=pid == 0)
    m = j < NT
    tl.store(CHUNK_IDX + 2 * j, seq, mask=m)
    tl.store(CHUNK_IDX + 2 * j + 1, (j - first).to(tl.int32), mask=m)


def _chunk_tables(cu_seqlens, T):
    """The (sequence, chunk) table and each sequence's first chunk number, built on the device
    without reading cu_seqlens on the host: the call never waits for the device. The grid covers
    cdiv(T, BT) + N - 1 slots, the most chunks N sequences of T tokens can have."""
    N = cu_seqlens.numel() - 1
    NT = triton.cdiv(T, BT) + N - 1
    dev = cu_seqlens.device
    idx = torch.empty(2 * NT, dtype=torch.int32, device=dev)
    offs = torch.empty(N + 1, dtype=torch.int32, device=dev)
    _gdn_chunk_table[(triton.cdiv(NT, 1024),)](cu_seqlens, idx, offs, N, NT, BT=BT, BLOCK=1024)
    return idx, offs, NT


def run(q, k, v, g, beta, state, cu_seqlens, scale):
    T, Hqk, K = q.shape
    Hv, V = v.shape[1], v.shape[2]
    N = cu_seqlens.numel() - 1
    dev = q.device
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    g, beta, state = g.contiguous(), beta.contiguous(), state.contiguous()
    final = torch.empty(N, Hv, V, K, device=dev, dtype=torch.float32)
    o = torch.empty(T, Hv, V, device=dev, dtype=q.dtype)
    if T == 0:
        final.copy_(state)
        return o, final
    chunk_idx, chunk_off, NT = _chunk_tables(cu_seqlens, T)
    gc = torch.empty(T, Hv, device=dev, dtype=torch.float32)
    w = torch.empty(T, Hv, K, device=dev, dtype=q.dtype)
    u = torch.empty(T, Hv, V, device=dev, dtype=q.dtype)
    tb = torch.empty(T, Hv, BT, device=dev, dtype=q.dtype)
    _gdn_tinv_fwd[(NT, Hv)](k, g, beta, gc, tb, cu_seqlens, chunk_idx, Hqk, Hv,
                            K=K, BT=BT, BC=BC, BK=min(64, K), DOT_PRECISION="tf32x3", num_warps=1, num_stages=1)
    _gdn_wu_apply[(NT, Hv)](k, v, beta, gc, tb, w, u, cu_seqlens, chunk_idx, Hqk, Hv,
                            K=K, V=V, BT=BT, BC=BC, num_warps=4, num_stages=1)
    hbuf = torch.empty(NT, Hv, K, V, device=dev, dtype=q.dtype)
    v_new = torch.empty(T, Hv, V, device=dev, dtype=q.dtype)
    grid = lambda meta: (triton.cdiv(V, meta["BV"]), N * Hv)
    _gdn_state_fwd[grid](k, w, u, gc, state, hbuf, v_new, final, cu_seqlens, chunk_off, Hqk, Hv, N * Hv,
                         K=K, V=V, BT=BT, BK=min(64, K))
    grid = lambda meta: (triton.cdiv(V, meta["BV"]), NT, Hv)
    _gdn_output_fwd[grid](q, k, v_new, gc, hbuf, o, cu_seqlens, chunk_idx, scale, Hqk, Hv,
                          K=K, V=V, BT=BT)
    return o, final
