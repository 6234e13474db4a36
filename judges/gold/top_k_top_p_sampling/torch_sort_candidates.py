"""Top-k then top-p sampling from probabilities with a given uniform draw: the expert Triton
kernel, sort-free candidate search ablated.

Gold-set ablation `torch_sort_candidates`: identical to tasks/top_k_top_p_sampling/expert.py in
its final stage, but the candidates come from a full sort of every row on the host side
(torch.sort of the [B, V] probabilities, stable, descending): the first min(V, 2048) sorted
indices, re-sorted into vocabulary order, and their probabilities are gathered into the
per-row candidate buffers. There is no radix select, no histogram rounds over the row and no
cumsum compaction.

For each row x = probs[b] (k = top_k[b], p = top_p[b], u = u[b]):
    K = the k largest entries (ties: lower index first), M = sum_K x
    S = the entries of K whose higher-ranked mass is <= p * M,  Q = sum_S x
    sample = the smallest index i in S with  sum_{j in S, j <= i} x[j] > u * Q

 1. torch.sort(probs, descending=True, stable=True) per row; the top min(V, 2048) indices
    (which contain the top-k set, k <= 1024, with the lower-index-first tie order) are sorted
    back into vocabulary order and gathered with their probabilities.
 2. One program per row (one Triton launch) loads those candidates into registers and does an
    exact, sort-free selection: each candidate gets the key (value bits << 32 | reversed
    position), the k-th largest key and the top-p cut key are found bit by bit (count >= k,
    resp. mass above > p * M), so K and S are "key >= threshold" masks.
 3. Inverse CDF over the kept candidates in vocabulary order: tl.cumsum of their masses, the
    first position whose prefix exceeds u * Q is the sample.
All sums are float32.
"""
import torch
import triton
import triton.language as tl

CAP = 2048                # candidates per row (top_k <= 1024 by contract)


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
    TOPK, TOPP, U, OUT, CV, CI, n,
    CAP_N: tl.constexpr, LOG_CAP: tl.constexpr,
):
    row = tl.program_id(0)
    k = tl.minimum(tl.maximum(tl.load(TOPK + row), 1), tl.minimum(n, CAP_N // 2))
    p = tl.load(TOPP + row)
    u = tl.load(U + row)
    cv = CV + row.to(tl.int64) * CAP_N
    ci = CI + row.to(tl.int64) * CAP_N
    sample = _select_and_sample(cv, ci, n, k, p, u, CAP_N, LOG_CAP)
    tl.store(OUT + row, sample)


def run(probs, top_k, top_p, u):
    x = probs if probs.stride(-1) == 1 else probs.contiguous()
    B, V = x.shape
    out = torch.empty((B,), dtype=torch.int32, device=x.device)
    if B == 0:
        return out
    n = min(V, CAP)
    order = torch.sort(x, dim=-1, descending=True, stable=True).indices[:, :n]
    top_idx = torch.sort(order, dim=-1).values                 # vocabulary order
    cand_v = torch.zeros((B, CAP), dtype=torch.float32, device=x.device)
    cand_i = torch.zeros((B, CAP), dtype=torch.int32, device=x.device)
    cand_v[:, :n] = torch.gather(x, 1, top_idx).float()
    cand_i[:, :n] = top_idx.to(torch.int32)
    _topk_topp_sampling_kernel[(B,)](
        top_k.contiguous(), top_p.contiguous(), u.contiguous(), out, cand_v, cand_i, n,
        CAP_N=CAP, LOG_CAP=CAP.bit_length() - 1,
        num_warps=8,
    )
    return out
