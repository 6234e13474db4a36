"""Top-k then top-p sampling from probabilities with a given uniform draw: the expert Triton
kernel, device-side parameters ablated.

Gold-set ablation `host_params`: identical to tasks/top_k_top_p_sampling/expert.py except that
top_k, top_p and u are copied to the host (.tolist()) and the kernel is launched once per row
(grid (1,)) with that row's k, p, u and row index as scalar arguments.

For each row x = probs[b] (k = top_k[b], p = top_p[b], u = u[b]):
    K = the k largest entries (ties: lower index first), M = sum_K x
    S = the entries of K whose higher-ranked mass is <= p * M,  Q = sum_S x
    sample = the smallest index i in S with  sum_{j in S, j <= i} x[j] > u * Q

One program per row, one launch per row with host-read parameters, no sort of the row:

 1. Radix select of a pre-threshold (multi-round, the row re-streamed from L2): probabilities
    are >= 0, so their float32 bit patterns order like the values. Round r histograms one byte
    of the bits (bits 31-24, then 23-16, ...) of the entries that share the bytes already fixed
    (tl.histogram, 256 bins = 256 pivots per pass), and picks the byte where the count of
    larger-or-equal entries reaches k. It stops as soon as the candidates (entries >= the chosen
    bucket's lower edge) number at most 256 (k <= 128) or 2048 (larger k): usually after one
    or two passes. After four rounds the k-th largest value is exact and ties are cut by index.
 2. Compaction: one more pass writes the candidates, in vocabulary order, to a per-row buffer
    (a masked tl.store whose slot is a running tl.cumsum of the keep mask).
 3. Exact selection on the <= 2048 candidates held in registers, sort-free: each candidate gets
    the key (value bits << 32 | reversed position), unique and ordered like the ranking. The
    k-th largest key and the top-p cut key are found bit by bit (count >= k, resp. mass above
    > p * M), so K and S are "key >= threshold" masks.
 4. Inverse CDF over the kept candidates in vocabulary order: tl.cumsum of their masses, the
    first position whose prefix exceeds u * Q is the sample.
All sums are float32. The final stage is compiled twice (256- and 2048-wide tiles) and picked
by the candidate count. The row loads are contiguous 4096-wide tiles (16-byte vectors).
"""
import torch
import triton
import triton.language as tl

SMALL = 256               # final-stage tile for small candidate sets
CAP = 2048                # largest candidate set (top_k <= 1024 by contract)
_TILE = 4096              # probabilities per streaming step


@triton.jit
def _kth_largest_key(key, valid, k, LOGN: tl.constexpr):
    """The k-th largest of the int64 keys (value bits in 62..32, position in LOGN-1..0)."""
    t = tl.zeros([], dtype=tl.int64)
    for b in tl.static_range(62, 31, -1):
        cand = t | (1 << b)
        cnt = tl.sum((valid & (key >= cand)).to(tl.int32), axis=0)
        t = tl.where(cnt >= k, cand, t)
    for b in tl.static_range(LOGN - 1, -1, -1):
        cand = t | (1 << b)
        cnt = tl.sum((valid & (key >= cand)).to(tl.int32), axis=0)
        t = tl.where(cnt >= k, cand, t)
    return t


@triton.jit
def _mass_cut_key(key, v, in_k, limit, LOGN: tl.constexpr):
    """The largest t whose mass sum(v over in_k & key >= t) exceeds `limit` (0 if none)."""
    t = tl.zeros([], dtype=tl.int64)
    for b in tl.static_range(62, 31, -1):
        cand = t | (1 << b)
        mass = tl.sum(tl.where(in_k & (key >= cand), v, 0.0), axis=0)
        t = tl.where(mass > limit, cand, t)
    for b in tl.static_range(LOGN - 1, -1, -1):
        cand = t | (1 << b)
        mass = tl.sum(tl.where(in_k & (key >= cand), v, 0.0), axis=0)
        t = tl.where(mass > limit, cand, t)
    return t


@triton.jit
def _select_and_sample(CV, CI, n, k, p, u, N: tl.constexpr, LOGN: tl.constexpr):
    """Top-k, top-p and inverse-CDF sampling over the n candidates stored in vocab order."""
    c = tl.arange(0, N)
    valid = c < n
    v = tl.load(CV + c, mask=valid, other=0.0)
    ids = tl.load(CI + c, mask=valid, other=0)
    bits = v.to(tl.int32, bitcast=True)
    key = (bits.to(tl.int64) << 32) | (N - 1 - c).to(tl.int64)   # ties -> lower index first
    key = tl.where(valid, key, -1)
    t_k = _kth_largest_key(key, valid, k, LOGN)
    in_k = valid & (key >= t_k)
    m_k = tl.sum(tl.where(in_k, v, 0.0), axis=0)
    t_p = _mass_cut_key(key, v, in_k, p * m_k, LOGN)   # the entry crossing p * M (kept)
    keep = in_k & (key >= t_p)
    w = tl.where(keep, v, 0.0)
    q = tl.sum(w, axis=0)
    cs = tl.cumsum(w, axis=0)
    pos = tl.sum((valid & (cs <= u * q)).to(tl.int32), axis=0)
    last = tl.max(tl.where(keep, c, -1), axis=0)
    pos = tl.minimum(pos, last)
    return tl.sum(tl.where(c == pos, ids, 0), axis=0)


@triton.jit
def _topk_topp_sampling_kernel(
    P, OUT, CV, CI,
    row, k_in, p, u,
    V, stride_p,
    TILE: tl.constexpr, SMALL_N: tl.constexpr, CAP_N: tl.constexpr,
    LOG_SMALL: tl.constexpr, LOG_CAP: tl.constexpr,
):
    k = tl.minimum(tl.maximum(k_in, 1), tl.minimum(V, CAP_N // 2))
    base = P + row.to(tl.int64) * stride_p
    aim = tl.where(k <= SMALL_N // 2, SMALL_N, CAP_N)
    bins = tl.arange(0, 256)

    # ---- 1. radix select of the candidate threshold ------------------------------------
    prefix = tl.zeros([], dtype=tl.int32)     # bytes of the k-th largest value fixed so far
    above = tl.zeros([], dtype=tl.int32)      # entries strictly above the current bucket
    done = tl.zeros([], dtype=tl.int32)
    th = tl.zeros([], dtype=tl.int32) - 1     # keep bits > th ...
    quota = tl.zeros([], dtype=tl.int32)      # ... plus the first `quota` entries == th
    for LEVEL in tl.static_range(4):
        if done == 0:
            h = tl.zeros([256], dtype=tl.int32)
            for t0 in range(0, V, TILE):
                offs = t0 + tl.arange(0, TILE)
                m = offs < V
                x = tl.load(base + offs, mask=m, other=0.0)
                bits = x.to(tl.int32, bitcast=True)
                if LEVEL == 0:
                    match = m
                else:
                    match = m & ((bits >> (32 - 8 * LEVEL)) == prefix)
                h += tl.histogram((bits >> (24 - 8 * LEVEL)) & 255, 256, mask=match)
            need = k - above
            cnt_ge = tl.sum(h, axis=0) - tl.cumsum(h, axis=0) + h   # entries with byte >= d
            dstar = tl.sum((cnt_ge >= need).to(tl.int32), axis=0) - 1
            h_d = tl.sum(tl.where(bins == dstar, h, 0), axis=0)
            above = above + tl.sum(tl.where(bins == dstar, cnt_ge, 0), axis=0) - h_d
            prefix = (prefix << 8) | dstar
            if above + h_d <= aim:
                done = done + 1
                th = (prefix << (24 - 8 * LEVEL)) - 1
            elif LEVEL == 3:
                done = done + 1                    # exact k-th value: cut its ties by index
                th = prefix
                quota = k - above

    # ---- 2. compact the candidates in vocabulary order ----------------------------------
    cv = CV + row.to(tl.int64) * CAP_N
    ci = CI + row.to(tl.int64) * CAP_N
    n = tl.zeros([], dtype=tl.int32)
    ties = tl.zeros([], dtype=tl.int32)
    for t0 in range(0, V, TILE):
        offs = t0 + tl.arange(0, TILE)
        m = offs < V
        x = tl.load(base + offs, mask=m, other=0.0)
        bits = x.to(tl.int32, bitcast=True)
        eq = (m & (bits == th)).to(tl.int32)
        keep = (m & (bits > th)) | ((eq != 0) & (ties + tl.cumsum(eq, axis=0) - eq < quota))
        ki = keep.to(tl.int32)
        slot = n + tl.cumsum(ki, axis=0) - ki
        tl.store(cv + slot, x, mask=keep)
        tl.store(ci + slot, offs, mask=keep)
        n += tl.sum(ki, axis=0)
        ties += tl.sum(eq, axis=0)
    tl.debug_barrier()                              # candidates visible to the whole program

    # ---- 3 + 4. exact top-k / top-p on the candidates, inverse CDF ----------------------
    if n <= SMALL_N:
        sample = _select_and_sample(cv, ci, n, k, p, u, SMALL_N, LOG_SMALL)
    else:
        sample = _select_and_sample(cv, ci, n, k, p, u, CAP_N, LOG_CAP)
    tl.store(OUT + row, sample)


def run(probs, top_k, top_p, u):
    x = probs if probs.stride(-1) == 1 else probs.contiguous()
    B, V = x.shape
    out = torch.empty((B,), dtype=torch.int32, device=x.device)
    if B == 0:
        return out
    cand_v = torch.empty((B, CAP), dtype=torch.float32, device=x.device)
    cand_i = torch.empty((B, CAP), dtype=torch.int32, device=x.device)
    # per-row parameters are read on the host; one launch (grid (1,)) per row
    ks = top_k.tolist()
    ps = top_p.tolist()
    us = u.tolist()
    for row in range(B):
        _topk_topp_sampling_kernel[(1,)](
            x, out, cand_v, cand_i,
            row, int(ks[row]), float(ps[row]), float(us[row]),
            V, x.stride(0),
            TILE=_TILE, SMALL_N=SMALL, CAP_N=CAP,
            LOG_SMALL=SMALL.bit_length() - 1, LOG_CAP=CAP.bit_length() - 1,
            num_warps=8,
        )
    return out
