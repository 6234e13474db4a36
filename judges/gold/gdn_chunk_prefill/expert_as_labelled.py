"""Gated delta rule prefill (Qwen3-Next GDN) as a chunked WY-form scan in three Triton kernels.

Computes, for each packed sequence n and v-head h (q/k head h // (Hv // Hqk)), from
S = state[n, h] ([V, K], "k-last"), token by token:
    S <- exp(g_t) S;  u = (v_t - S k_t) beta_t;  S <- S + u k_t^T;  o_t = scale * S q_t
and returns o [T, Hv, V] (q's dtype) and final_state [N, Hv, V, K] float32.

Design (chunks of BT = 64 tokens; the state is handled as h = S^T, [K, V]):
- `_gdn_wy_fwd`, one program per (chunk, v-head): the chunk-local cumulative gate
  gc = cumsum(g) / ln 2 (stored, every later decay is exp2 of a difference of gc's); the scaled
  key Gram matrix A = strict_tril(beta k k^T * exp2(gc_i - gc_j)) in 16 x 16 blocks; its unit
  lower-triangular inverse T = (I + A)^-1 by forward substitution inside the four diagonal blocks
  and block products below them (fp32, ieee dots); then the WY factors W = T (beta exp2(gc) k)
  and U = T (beta v), written in bf16. The rank-1 updates of the chunk collapse to
  h_end = exp2(gc_last) h + K^T ((U - W h) * exp2(gc_last - gc)).
- `_gdn_state_fwd`, one program per (sequence, v-head, BV-column tile of h): walks the chunks of
  its sequence in order, carrying h in fp32 registers as two 64-row blocks (K = 128), writes h at
  each chunk start (bf16) and the corrected values v_new = U - W h, and the final state.
- `_gdn_output_fwd`, one program per (chunk, v-head, BV tile), all chunks in parallel:
  o = scale * ((q h) * exp2(gc) + ((q k^T) * exp2(gc_i - gc_j) * causal) v_new).
Varlen: the host builds (sequence, chunk) pairs from cu_seqlens once, so programs index chunks
directly. Gates are pre-scaled by 1/ln 2 and every decay is an exp2.
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
def _inv_unit_lower(A, n_rows, BC: tl.constexpr):
    """(I + A)^-1 for a strictly lower-triangular [BC, BC] A by forward substitution, row by row:
    X[r, :] = e_r - sum_{s < r} A[r, s] X[s, :]. Rows from n_rows on (past the sequence end)
    have A = 0 and keep their identity row."""
    rows = tl.arange(0, BC)
    X = (rows[:, None] == rows[None, :]).to(tl.float32)
    for r in range(1, tl.minimum(n_rows, BC)):
        sel = rows[:, None] == r
        a_r = tl.sum(tl.where(sel, A, 0.0), axis=0)                       # A[r, :]
        X = X - tl.where(sel, tl.sum(a_r[:, None] * X, axis=0)[None, :], 0.0)
    return X


@triton.jit
def _gdn_wy_fwd(K_ptr, V_ptr, G_ptr, BETA, GC, W, U, CU, CHUNK_IDX,
                Hqk, Hv, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
                DOT_PRECISION: tl.constexpr):
    """Per (chunk, v-head): GC = chunk-local cumsum(g) / ln 2; T = (I + strict_tril(beta k k^T
    exp2(gc_i - gc_j)))^-1; W = T (beta exp2(gc) k), U = T (beta v) (bf16)."""
    i_t = tl.program_id(0)
    hv = tl.program_id(1)
    hk = hv // (Hv // Hqk)
    seq = tl.load(CHUNK_IDX + 2 * i_t)
    ic = tl.load(CHUNK_IDX + 2 * i_t + 1)
    bos = tl.load(CU + seq).to(tl.int64)
    eos = tl.load(CU + seq + 1).to(tl.int64)
    t0 = bos + ic * BT
    o_c = tl.arange(0, BC)
    o_k = tl.arange(0, K)
    o_v = tl.arange(0, V)
    r0 = t0 + o_c
    r1 = t0 + BC + o_c
    r2 = t0 + 2 * BC + o_c
    r3 = t0 + 3 * BC + o_c
    m0, m1, m2, m3 = r0 < eos, r1 < eos, r2 < eos, r3 < eos

    # gates: chunk-local cumsum in the log2 domain, block by block with a carry
    g0 = tl.load(G_ptr + r0 * Hv + hv, mask=m0, other=0.0)
    g1 = tl.load(G_ptr + r1 * Hv + hv, mask=m1, other=0.0)
    g2 = tl.load(G_ptr + r2 * Hv + hv, mask=m2, other=0.0)
    g3 = tl.load(G_ptr + r3 * Hv + hv, mask=m3, other=0.0)
    c0 = tl.cumsum(g0, axis=0) * RCP_LN2
    c1 = tl.cumsum(g1, axis=0) * RCP_LN2 + tl.sum(g0, axis=0) * RCP_LN2
    c2 = tl.cumsum(g2, axis=0) * RCP_LN2 + (tl.sum(g0, axis=0) + tl.sum(g1, axis=0)) * RCP_LN2
    c3 = tl.cumsum(g3, axis=0) * RCP_LN2 + (tl.sum(g0, axis=0) + tl.sum(g1, axis=0) + tl.sum(g2, axis=0)) * RCP_LN2
    tl.store(GC + r0 * Hv + hv, c0, mask=m0)
    tl.store(GC + r1 * Hv + hv, c1, mask=m1)
    tl.store(GC + r2 * Hv + hv, c2, mask=m2)
    tl.store(GC + r3 * Hv + hv, c3, mask=m3)
    b0 = tl.load(BETA + r0 * Hv + hv, mask=m0, other=0.0)
    b1 = tl.load(BETA + r1 * Hv + hv, mask=m1, other=0.0)
    b2 = tl.load(BETA + r2 * Hv + hv, mask=m2, other=0.0)
    b3 = tl.load(BETA + r3 * Hv + hv, mask=m3, other=0.0)

    # keys of the four sub-blocks and the ten lower blocks of the Gram matrix
    k0 = tl.load(K_ptr + (r0 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m0[:, None], other=0.0)
    k1 = tl.load(K_ptr + (r1 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m1[:, None], other=0.0)
    k2 = tl.load(K_ptr + (r2 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m2[:, None], other=0.0)
    k3 = tl.load(K_ptr + (r3 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m3[:, None], other=0.0)
    strict = o_c[:, None] > o_c[None, :]
    a00 = tl.dot(k0, tl.trans(k0))
    a11 = tl.dot(k1, tl.trans(k1))
    a22 = tl.dot(k2, tl.trans(k2))
    a33 = tl.dot(k3, tl.trans(k3))
    a10 = tl.dot(k1, tl.trans(k0))
    a20 = tl.dot(k2, tl.trans(k0))
    a21 = tl.dot(k2, tl.trans(k1))
    a30 = tl.dot(k3, tl.trans(k0))
    a31 = tl.dot(k3, tl.trans(k1))
    a32 = tl.dot(k3, tl.trans(k2))
    # beta_i * exp2(gc_i - gc_j); below the diagonal gc_i <= gc_j so nothing overflows, on the
    # diagonal blocks the upper triangle is cut before the exp2
    a00 = tl.where(strict, a00 * b0[:, None] * tl.exp2(tl.where(strict, c0[:, None] - c0[None, :], 0.0)), 0.0)
    a11 = tl.where(strict, a11 * b1[:, None] * tl.exp2(tl.where(strict, c1[:, None] - c1[None, :], 0.0)), 0.0)
    a22 = tl.where(strict, a22 * b2[:, None] * tl.exp2(tl.where(strict, c2[:, None] - c2[None, :], 0.0)), 0.0)
    a33 = tl.where(strict, a33 * b3[:, None] * tl.exp2(tl.where(strict, c3[:, None] - c3[None, :], 0.0)), 0.0)
    a10 = a10 * b1[:, None] * tl.exp2(c1[:, None] - c0[None, :])
    a20 = a20 * b2[:, None] * tl.exp2(c2[:, None] - c0[None, :])
    a21 = a21 * b2[:, None] * tl.exp2(c2[:, None] - c1[None, :])
    a30 = a30 * b3[:, None] * tl.exp2(c3[:, None] - c0[None, :])
    a31 = a31 * b3[:, None] * tl.exp2(c3[:, None] - c1[None, :])
    a32 = a32 * b3[:, None] * tl.exp2(c3[:, None] - c2[None, :])

    # T = (I + A)^-1: diagonal blocks by substitution, then block rows top to bottom:
    # T_ij = -T_ii sum_{j <= l < i} A_il T_lj
    n_in = eos - t0
    t00 = _inv_unit_lower(a00, n_in, BC)
    t11 = _inv_unit_lower(a11, n_in - BC, BC)
    t22 = _inv_unit_lower(a22, n_in - 2 * BC, BC)
    t33 = _inv_unit_lower(a33, n_in - 3 * BC, BC)
    t10 = -tl.dot(t11, tl.dot(a10, t00, input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)
    t21 = -tl.dot(t22, tl.dot(a21, t11, input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)
    t32 = -tl.dot(t33, tl.dot(a32, t22, input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)
    t20 = -tl.dot(t22, tl.dot(a20, t00, input_precision=DOT_PRECISION)
                  + tl.dot(a21, t10, input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)
    t31 = -tl.dot(t33, tl.dot(a31, t11, input_precision=DOT_PRECISION)
                  + tl.dot(a32, t21, input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)
    t30 = -tl.dot(t33, tl.dot(a30, t00, input_precision=DOT_PRECISION)
                  + tl.dot(a31, t10, input_precision=DOT_PRECISION)
                  + tl.dot(a32, t20, input_precision=DOT_PRECISION), input_precision=DOT_PRECISION)

    # W = T (beta exp2(gc) k), block row by block row (the key blocks are re-read from L2 rather
    # than kept live across the solve)
    dt = K_ptr.dtype.element_ty
    k0 = tl.load(K_ptr + (r0 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m0[:, None], other=0.0)
    k1 = tl.load(K_ptr + (r1 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m1[:, None], other=0.0)
    k2 = tl.load(K_ptr + (r2 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m2[:, None], other=0.0)
    k3 = tl.load(K_ptr + (r3 * Hqk + hk)[:, None] * K + o_k[None, :], mask=m3[:, None], other=0.0)
    kd0 = (k0 * (b0 * tl.exp2(c0))[:, None]).to(dt)
    kd1 = (k1 * (b1 * tl.exp2(c1))[:, None]).to(dt)
    kd2 = (k2 * (b2 * tl.exp2(c2))[:, None]).to(dt)
    kd3 = (k3 * (b3 * tl.exp2(c3))[:, None]).to(dt)
    w0 = tl.dot(t00.to(dt), kd0)
    w1 = tl.dot(t11.to(dt), kd1, tl.dot(t10.to(dt), kd0))
    w2 = tl.dot(t22.to(dt), kd2, tl.dot(t21.to(dt), kd1, tl.dot(t20.to(dt), kd0)))
    w3 = tl.dot(t33.to(dt), kd3, tl.dot(t32.to(dt), kd2, tl.dot(t31.to(dt), kd1, tl.dot(t30.to(dt), kd0))))
    tl.store(W + (r0 * Hv + hv)[:, None] * K + o_k[None, :], w0.to(W.dtype.element_ty), mask=m0[:, None])
    tl.store(W + (r1 * Hv + hv)[:, None] * K + o_k[None, :], w1.to(W.dtype.element_ty), mask=m1[:, None])
    tl.store(W + (r2 * Hv + hv)[:, None] * K + o_k[None, :], w2.to(W.dtype.element_ty), mask=m2[:, None])
    tl.store(W + (r3 * Hv + hv)[:, None] * K + o_k[None, :], w3.to(W.dtype.element_ty), mask=m3[:, None])

    # U = T (beta v)
    vb0 = (tl.load(V_ptr + (r0 * Hv + hv)[:, None] * V + o_v[None, :], mask=m0[:, None], other=0.0) * b0[:, None]).to(dt)
    vb1 = (tl.load(V_ptr + (r1 * Hv + hv)[:, None] * V + o_v[None, :], mask=m1[:, None], other=0.0) * b1[:, None]).to(dt)
    vb2 = (tl.load(V_ptr + (r2 * Hv + hv)[:, None] * V + o_v[None, :], mask=m2[:, None], other=0.0) * b2[:, None]).to(dt)
    vb3 = (tl.load(V_ptr + (r3 * Hv + hv)[:, None] * V + o_v[None, :], mask=m3[:, None], other=0.0) * b3[:, None]).to(dt)
    u0 = tl.dot(t00.to(dt), vb0)
    u1 = tl.dot(t11.to(dt), vb1, tl.dot(t10.to(dt), vb0))
    u2 = tl.dot(t22.to(dt), vb2, tl.dot(t21.to(dt), vb1, tl.dot(t20.to(dt), vb0)))
    u3 = tl.dot(t33.to(dt), vb3, tl.dot(t32.to(dt), vb2, tl.dot(t31.to(dt), vb1, tl.dot(t30.to(dt), vb0))))
    tl.store(U + (r0 * Hv + hv)[:, None] * V + o_v[None, :], u0.to(U.dtype.element_ty), mask=m0[:, None])
    tl.store(U + (r1 * Hv + hv)[:, None] * V + o_v[None, :], u1.to(U.dtype.element_ty), mask=m1[:, None])
    tl.store(U + (r2 * Hv + hv)[:, None] * V + o_v[None, :], u2.to(U.dtype.element_ty), mask=m2[:, None])
    tl.store(U + (r3 * Hv + hv)[:, None] * V + o_v[None, :], u3.to(U.dtype.element_ty), mask=m3[:, None])


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
    seq = tl.load(CHUNK_IDX + 2 * i_t)
    ic = tl.load(CHUNK_IDX + 2 * i_t + 1)
    bos = tl.load(CU + seq).to(tl.int64)
    eos = tl.load(CU + seq + 1).to(tl.int64)
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


def _chunk_tables(cu_seqlens):
    """(sequence, chunk) pairs of every chunk in order, and each sequence's first chunk number."""
    cu = cu_seqlens.tolist()
    pairs, offs = [], [0]
    for n in range(len(cu) - 1):
        nc = triton.cdiv(cu[n + 1] - cu[n], BT)
        pairs.extend((n, i) for i in range(nc))
        offs.append(offs[-1] + nc)
    dev = cu_seqlens.device
    idx = torch.tensor(pairs if pairs else [(0, 0)], dtype=torch.int32, device=dev).reshape(-1)
    return idx, torch.tensor(offs, dtype=torch.int32, device=dev), len(pairs)


def run(q, k, v, g, beta, state, cu_seqlens, scale):
    T, Hqk, K = q.shape
    Hv, V = v.shape[1], v.shape[2]
    N = cu_seqlens.numel() - 1
    dev = q.device
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    g, beta, state = g.contiguous(), beta.contiguous(), state.contiguous()
    chunk_idx, chunk_off, NT = _chunk_tables(cu_seqlens)
    final = torch.empty(N, Hv, V, K, device=dev, dtype=torch.float32)
    o = torch.empty(T, Hv, V, device=dev, dtype=q.dtype)
    if NT == 0:
        final.copy_(state)
        return o, final
    gc = torch.empty(T, Hv, device=dev, dtype=torch.float32)
    w = torch.empty(T, Hv, K, device=dev, dtype=q.dtype)
    u = torch.empty(T, Hv, V, device=dev, dtype=q.dtype)
    _gdn_wy_fwd[(NT, Hv)](k, v, g, beta, gc, w, u, cu_seqlens, chunk_idx, Hqk, Hv,
                          K=K, V=V, BT=BT, BC=BC, DOT_PRECISION="ieee", num_warps=4)
    hbuf = torch.empty(NT, Hv, K, V, device=dev, dtype=q.dtype)
    v_new = torch.empty(T, Hv, V, device=dev, dtype=q.dtype)
    grid = lambda meta: (triton.cdiv(V, meta["BV"]), N * Hv)
    _gdn_state_fwd[grid](k, w, u, gc, state, hbuf, v_new, final, cu_seqlens, chunk_off, Hqk, Hv, N * Hv,
                         K=K, V=V, BT=BT, BK=min(64, K))
    grid = lambda meta: (triton.cdiv(V, meta["BV"]), NT, Hv)
    _gdn_output_fwd[grid](q, k, v_new, gc, hbuf, o, cu_seqlens, chunk_idx, scale, Hqk, Hv,
                          K=K, V=V, BT=BT)
    return o, final
