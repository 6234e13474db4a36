"""Mamba-2 SSD chunked scan (prefill) in four Triton kernels.

Computes, per sequence b and head h (group g = h // (H // G)), from h_0 = 0:

    dt_t = softplus(dt[b, t, h] + dt_bias[h])
    h_t  = exp(dt_t A[h]) h_{t-1} + dt_t x_t^T B_t          (state [P, N])
    y_t  = h_t C_t + D[h] x_t

and returns y (x's dtype) and final_state = h_L ([batch, H, P, N] float32).

Design (the state-space duality): the sequence is cut into chunks of Q = 256 tokens.
- Kernel 1 (`_ssd_chunk_cumsum`) applies the softplus and forms the within-chunk cumulative
  log-decay cs_t = sum_{s <= t in chunk} dt_s A once; every decay later is exp(cs_i - cs_j) of
  two of its entries (never a product of exps).
- Kernel 2 (`_ssd_bmm_chunk`) forms CB = C B^T per (chunk, group) on tensor cores, only the
  tiles on or below the diagonal; all H/G heads of the group reuse it.
- Kernel 3 (`_ssd_state_passing`) is the only sequential part: per (batch, head, [P, N] tile) it
  walks the chunks, writes the state entering each chunk (bf16, what kernel 4 consumes), decays
  the running fp32 state by exp(cs_last) and adds the chunk's own contribution
  x^T (B * exp(cs_last - cs) * dt) with tl.dot. Folding mamba_ssm's chunk_state kernel into the
  pass saves writing and re-reading the per-chunk fp32 states.
- Kernel 4 (`_ssd_chunk_scan`) produces y per (chunk, head, row tile): the inter-chunk part
  (C h_prev^T) * exp(cs), plus the causal intra-chunk part ((CB * exp(cs_i - cs_j) * dt_j) x),
  looping key tiles only up to the diagonal, plus D x. Heads of one chunk are adjacent in the
  grid. B and C are expanded to one copy per head on the host.
Decays, states and accumulators are fp32; tl.dot operands are cast to the input dtype.
"""

import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
# 256-token chunks on the GPU (Mamba-2's default); the CPU interpreter's smoke runs use 32 so a
# 40-token prompt already spans two chunks (same code, only the constexpr differs).
CHUNK = 32 if _INTERPRET else 256


# Tile configs per kernel (the interpreter cannot benchmark configs: it gets the first one only).
_BMM_CONFIGS = [
    triton.Config({"BLOCK_M": 64, "BLOCK_K": 64, "BLOCK_DS": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_K": 64, "BLOCK_DS": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_K": 64, "BLOCK_DS": 32}, num_warps=4, num_stages=4),
]
_PASS_CONFIGS = [
    triton.Config({"BLOCK_P": 64, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_P": 64, "BLOCK_N": 32, "BLOCK_K": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_P": 32, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_P": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=4),
]
_SCAN_CONFIGS = [
    triton.Config({"BLOCK_M": 64, "BLOCK_P": 64, "BLOCK_K": 64, "BLOCK_DS": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_P": 64, "BLOCK_K": 64, "BLOCK_DS": 64}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_P": 64, "BLOCK_K": 32, "BLOCK_DS": 64}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_P": 64, "BLOCK_K": 32, "BLOCK_DS": 32}, num_warps=4, num_stages=3),
]
if _INTERPRET:
    _BMM_CONFIGS = [triton.Config({"BLOCK_M": 32, "BLOCK_K": 32, "BLOCK_DS": 32}, num_warps=4, num_stages=2)]
    _PASS_CONFIGS = [triton.Config({"BLOCK_P": 32, "BLOCK_N": 32, "BLOCK_K": 16}, num_warps=4, num_stages=2)]
    _SCAN_CONFIGS = [triton.Config({"BLOCK_M": 16, "BLOCK_P": 32, "BLOCK_K": 16, "BLOCK_DS": 32},
                                   num_warps=4, num_stages=2)]


@triton.jit
def _softplus(v):
    # log(1 + e^v) with the log1p correction (u - 1 is exact), linear above 20 like torch
    e = tl.exp(tl.minimum(v, 20.0))
    u = 1.0 + e
    lp = tl.where(u == 1.0, e, tl.log(u) * (e / (u - 1.0)))
    return tl.where(v > 20.0, v, lp)


@triton.jit
def _ssd_chunk_cumsum(DT, DT_BIAS, A, DT_OUT, CS_OUT, L, H, nchunks,
                      chunk_size: tl.constexpr, BLOCK_H: tl.constexpr):
    """dt_out[b, h, c*Q + i] = softplus(dt + dt_bias) (0 past L) and
    cs_out[b, h, c*Q + i] = cumsum_{j <= i} dt_out * A[h] within chunk c."""
    pid_bc = tl.program_id(0)
    pid_h = tl.program_id(1)
    b = pid_bc // nchunks
    c = pid_bc % nchunks
    offs_t = tl.arange(0, chunk_size)
    offs_h = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    t = c * chunk_size + offs_t
    mask_t = t < L
    mask_h = offs_h < H
    raw = tl.load(DT + (b * L + t[:, None]).to(tl.int64) * H + offs_h[None, :],
                  mask=mask_t[:, None] & mask_h[None, :], other=0.0).to(tl.float32)
    bias = tl.load(DT_BIAS + offs_h, mask=mask_h, other=0.0).to(tl.float32)
    a = tl.load(A + offs_h, mask=mask_h, other=0.0).to(tl.float32)
    dtv = _softplus(raw + bias[None, :])
    dtv = tl.where(mask_t[:, None], dtv, 0.0)
    cs = tl.cumsum(dtv * a[None, :], axis=0)
    out = ((b * H + offs_h[None, :]).to(tl.int64) * nchunks + c) * chunk_size + offs_t[:, None]
    tl.store(DT_OUT + out, dtv, mask=mask_h[None, :])
    tl.store(CS_OUT + out, cs, mask=mask_h[None, :])


@triton.autotune(
    configs=_BMM_CONFIGS,
    key=["chunk_size", "dstate"],
)
@triton.jit
def _ssd_bmm_chunk(C, B, CB, L, G, nchunks,
                   chunk_size: tl.constexpr, dstate: tl.constexpr, IS_CAUSAL: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_DS: tl.constexpr):
    """CB[b, c, g, i, j] = sum_n C[b, cQ + i, g, n] * B[b, cQ + j, g, n] (fp32), for the tiles
    that hold some j <= i when IS_CAUSAL (the others are never read)."""
    pid_t = tl.program_id(0)
    pid_bcg = tl.program_id(1)
    num_k = tl.cdiv(chunk_size, BLOCK_K)
    pid_m = pid_t // num_k
    pid_k = pid_t % num_k
    if IS_CAUSAL:
        if pid_k * BLOCK_K >= (pid_m + 1) * BLOCK_M:
            return
    g = pid_bcg % G
    bc = pid_bcg // G
    b = bc // nchunks
    c = bc % nchunks
    if c * chunk_size + pid_m * BLOCK_M >= L:
        return  # rows past the end of the last (partial) chunk are never read
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    tm = c * chunk_size + offs_m
    tk = c * chunk_size + offs_k
    row_m = ((b * L + tm).to(tl.int64) * G + g) * dstate
    row_k = ((b * L + tk).to(tl.int64) * G + g) * dstate
    acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    for n0 in range(0, dstate, BLOCK_DS):
        offs_n = n0 + tl.arange(0, BLOCK_DS)
        mask_n = offs_n < dstate
        cm = tl.load(C + row_m[:, None] + offs_n[None, :], mask=(tm < L)[:, None] & mask_n[None, :], other=0.0)
        bk = tl.load(B + row_k[None, :] + offs_n[:, None], mask=(tk < L)[None, :] & mask_n[:, None], other=0.0)
        acc = tl.dot(cm, bk, acc)
    out = CB + (bc * G + g).to(tl.int64) * chunk_size * chunk_size
    tl.store(out + offs_m[:, None] * chunk_size + offs_k[None, :], acc)


@triton.autotune(
    configs=_PASS_CONFIGS,
    key=["chunk_size", "hdim", "dstate", "batch"],
)
@triton.jit
def _ssd_state_passing(X, B, DT_C, CS_C, PREV, FINAL, batch, L, H, nchunks, nheads_ngroups_ratio,
                       chunk_size: tl.constexpr, hdim: tl.constexpr, dstate: tl.constexpr,
                       BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Walk the chunks of (b, h) in order: PREV[b, c, h] = state entering chunk c (x's dtype);
    state <- exp(cs_last) state + sum_j x_j^T B_j exp(cs_last - cs_j) dt_j; FINAL = last state."""
    pid_pn = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    G = H // nheads_ngroups_ratio
    g = h // nheads_ngroups_ratio
    num_n = tl.cdiv(dstate, BLOCK_N)
    offs_p = (pid_pn // num_n) * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_n = (pid_pn % num_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_p = offs_p < hdim
    mask_n = offs_n < dstate
    mask_pn = mask_p[:, None] & mask_n[None, :]
    dcs = (b * H + h).to(tl.int64) * nchunks * chunk_size
    tile = offs_p[:, None] * dstate + offs_n[None, :]
    state = tl.zeros([BLOCK_P, BLOCK_N], dtype=tl.float32)
    for c in range(0, nchunks):
        prev = PREV + ((b * nchunks + c) * H + h).to(tl.int64) * hdim * dstate
        tl.store(prev + tile, state.to(PREV.dtype.element_ty), mask=mask_pn)
        cs_last = tl.load(CS_C + dcs + c * chunk_size + chunk_size - 1)
        state = state * tl.exp(cs_last)
        chunk_len = tl.minimum(chunk_size, L - c * chunk_size)
        for k0 in range(0, chunk_len, BLOCK_K):
            offs_k = k0 + tl.arange(0, BLOCK_K)
            t = c * chunk_size + offs_k
            mask_t = t < L
            cs_k = tl.load(CS_C + dcs + c * chunk_size + offs_k)
            dt_k = tl.load(DT_C + dcs + c * chunk_size + offs_k)
            xk = tl.load(X + ((b * L + t).to(tl.int64) * H + h)[:, None] * hdim + offs_p[None, :],
                         mask=mask_t[:, None] & mask_p[None, :], other=0.0)
            bk = tl.load(B + ((b * L + t).to(tl.int64) * G + g)[:, None] * dstate + offs_n[None, :],
                         mask=mask_t[:, None] & mask_n[None, :], other=0.0)
            w = tl.exp(cs_last - cs_k) * dt_k
            bw = (bk.to(tl.float32) * w[:, None]).to(X.dtype.element_ty)
            state = tl.dot(tl.trans(xk), bw, state)
    tl.store(FINAL + (b * H + h).to(tl.int64) * hdim * dstate + tile, state, mask=mask_pn)


@triton.autotune(
    configs=_SCAN_CONFIGS,
    key=["chunk_size", "hdim", "dstate"],
)
@triton.jit
def _ssd_chunk_scan(X, C, CB, DT_C, CS_C, PREV, D, Y, L, H, nchunks, nheads_ngroups_ratio,
                    chunk_size: tl.constexpr, hdim: tl.constexpr, dstate: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_K: tl.constexpr,
                    BLOCK_DS: tl.constexpr):
    """y[b, cQ + i, h, p] = exp(cs_i) (C_i . PREV[b, c, h][p, :])
                          + sum_{j <= i} CB[i, j] exp(cs_i - cs_j) dt_j x[b, cQ + j, h, p]
                          + D[h] x[b, cQ + i, h, p]."""
    pid_mp = tl.program_id(0)
    pid_bch = tl.program_id(1)
    h = pid_bch % H
    bc = pid_bch // H
    b = bc // nchunks
    c = bc % nchunks
    G = H // nheads_ngroups_ratio
    g = h // nheads_ngroups_ratio
    num_p = tl.cdiv(hdim, BLOCK_P)
    pid_m = pid_mp // num_p
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_p = (pid_mp % num_p) * BLOCK_P + tl.arange(0, BLOCK_P)
    mask_p = offs_p < hdim
    chunk_len = tl.minimum(chunk_size, L - c * chunk_size)
    if pid_m * BLOCK_M >= chunk_len:
        return  # a row tile wholly past the end of the last (partial) chunk
    tm = c * chunk_size + offs_m
    mask_m = offs_m < chunk_len
    dcs = (b * H + h).to(tl.int64) * nchunks * chunk_size + c * chunk_size
    cs_m = tl.load(CS_C + dcs + offs_m)

    acc = tl.zeros([BLOCK_M, BLOCK_P], dtype=tl.float32)
    if c > 0:
        # inter-chunk: the state that entered the chunk, seen through C and decayed to each row
        prev = PREV + (bc * H + h).to(tl.int64) * hdim * dstate
        row_m = ((b * L + tm).to(tl.int64) * G + g) * dstate
        for n0 in range(0, dstate, BLOCK_DS):
            offs_n = n0 + tl.arange(0, BLOCK_DS)
            mask_n = offs_n < dstate
            cm = tl.load(C + row_m[:, None] + offs_n[None, :], mask=mask_m[:, None] & mask_n[None, :], other=0.0)
            st = tl.load(prev + offs_p[None, :] * dstate + offs_n[:, None],
                         mask=mask_p[None, :] & mask_n[:, None], other=0.0)
            acc = tl.dot(cm, st.to(cm.dtype), acc)
        acc = acc * tl.exp(cs_m)[:, None]

    # intra-chunk, causal: key tiles only up to this row tile's last row
    cb = CB + (bc * G + g).to(tl.int64) * chunk_size * chunk_size
    hi = tl.minimum((pid_m + 1) * BLOCK_M, chunk_len)
    for k0 in range(0, hi, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        cs_k = tl.load(CS_C + dcs + offs_k)
        dt_k = tl.load(DT_C + dcs + offs_k)
        cbt = tl.load(cb + offs_m[:, None] * chunk_size + offs_k[None, :])
        causal = offs_k[None, :] <= offs_m[:, None]
        decay = tl.exp(tl.where(causal, cs_m[:, None] - cs_k[None, :], float("-inf")))
        w = tl.where(causal, cbt * decay * dt_k[None, :], 0.0)
        tk = c * chunk_size + offs_k
        xk = tl.load(X + ((b * L + tk).to(tl.int64) * H + h)[:, None] * hdim + offs_p[None, :],
                     mask=(offs_k < chunk_len)[:, None] & mask_p[None, :], other=0.0)
        acc = tl.dot(w.to(X.dtype.element_ty), xk, acc)

    x_ptrs = X + ((b * L + tm).to(tl.int64) * H + h)[:, None] * hdim + offs_p[None, :]
    io_mask = mask_m[:, None] & mask_p[None, :]
    xm = tl.load(x_ptrs, mask=io_mask, other=0.0).to(tl.float32)
    acc += tl.load(D + h).to(tl.float32) * xm
    y_ptrs = Y + ((b * L + tm).to(tl.int64) * H + h)[:, None] * hdim + offs_p[None, :]
    tl.store(y_ptrs, acc.to(Y.dtype.element_ty), mask=io_mask)


def run(x, dt, dt_bias, A, B, C, D):
    batch, L, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    Q = CHUNK
    nchunks = triton.cdiv(L, Q)
    dev = x.device
    x, dt = x.contiguous(), dt.contiguous()
    # one copy of B and C per head, so every kernel indexes them by head
    B = B.repeat_interleave(H // G, dim=2).contiguous()
    C = C.repeat_interleave(H // G, dim=2).contiguous()
    G = H
    dt_c = torch.empty(batch, H, nchunks * Q, device=dev, dtype=torch.float32)
    cs_c = torch.empty_like(dt_c)
    BLOCK_H = min(16, triton.next_power_of_2(H))
    _ssd_chunk_cumsum[(batch * nchunks, triton.cdiv(H, BLOCK_H))](
        dt, dt_bias, A, dt_c, cs_c, L, H, nchunks, chunk_size=Q, BLOCK_H=BLOCK_H)

    cb = torch.empty(batch, nchunks, G, Q, Q, device=dev, dtype=torch.float32)
    grid = lambda meta: (triton.cdiv(Q, meta["BLOCK_M"]) * triton.cdiv(Q, meta["BLOCK_K"]), batch * nchunks * G)
    _ssd_bmm_chunk[grid](C, B, cb, L, G, nchunks, chunk_size=Q, dstate=N, IS_CAUSAL=True)

    prev = torch.empty(batch, nchunks, H, P, N, device=dev, dtype=x.dtype)
    final = torch.empty(batch, H, P, N, device=dev, dtype=torch.float32)
    grid = lambda meta: (triton.cdiv(P, meta["BLOCK_P"]) * triton.cdiv(N, meta["BLOCK_N"]), batch * H)
    _ssd_state_passing[grid](x, B, dt_c, cs_c, prev, final, batch, L, H, nchunks, H // G,
                             chunk_size=Q, hdim=P, dstate=N)

    y = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(Q, meta["BLOCK_M"]) * triton.cdiv(P, meta["BLOCK_P"]), batch * nchunks * H)
    _ssd_chunk_scan[grid](x, C, cb, dt_c, cs_c, prev, D, y, L, H, nchunks, H // G,
                          chunk_size=Q, hdim=P, dstate=N)
    return y, final
