"""Top-k then top-p sampling from probabilities with a given uniform draw, plain Triton kernel.

For each row x = probs[b] (k = top_k[b], p = top_p[b], u = u[b]):
    K = the k largest entries, M = sum_K x
    S = the entries of K whose higher-ranked mass is <= p * M,  Q = sum_S x
    sample = the smallest index i in S with  sum_{j in S, j <= i} x[j] > u * Q

One program per row and a binary search over float bit patterns, one full pass over the row
per bit: 31 passes find the k-th largest value tau_k (largest t with count(x >= t) >= k),
31 more the top-p cut t_p (largest t with mass(x >= max(t, tau_k)) > p * M), then one pass
scans the kept entries in vocabulary order with a running cumsum. It keeps every entry
>= tau_k, so it assumes no tie at the top-k boundary (the workloads guarantee that).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _sampling_naive_kernel(P, TOPK, TOPP, U, OUT, V, stride_p, TILE: tl.constexpr):
    row = tl.program_id(0)
    k = tl.load(TOPK + row)
    p = tl.load(TOPP + row)
    u = tl.load(U + row)
    base = P + row * stride_p

    tk = 0
    for b in range(30, -1, -1):
        cand = tk | (1 << b)
        cnt = 0
        for t0 in range(0, V, TILE):
            offs = t0 + tl.arange(0, TILE)
            x = tl.load(base + offs, mask=offs < V, other=0.0)
            bits = x.to(tl.int32, bitcast=True)
            cnt += tl.sum(((offs < V) & (bits >= cand)).to(tl.int32), axis=0)
        tk = tl.where(cnt >= k, cand, tk)

    mass_k = 0.0
    for t0 in range(0, V, TILE):
        offs = t0 + tl.arange(0, TILE)
        x = tl.load(base + offs, mask=offs < V, other=0.0)
        bits = x.to(tl.int32, bitcast=True)
        mass_k += tl.sum(tl.where((offs < V) & (bits >= tk), x, 0.0), axis=0)
    limit = p * mass_k

    tp = 0
    for b in range(30, -1, -1):
        cand = tp | (1 << b)
        thr = tl.maximum(cand, tk)
        mass = 0.0
        for t0 in range(0, V, TILE):
            offs = t0 + tl.arange(0, TILE)
            x = tl.load(base + offs, mask=offs < V, other=0.0)
            bits = x.to(tl.int32, bitcast=True)
            mass += tl.sum(tl.where((offs < V) & (bits >= thr), x, 0.0), axis=0)
        tp = tl.where(mass > limit, cand, tp)
    thr = tl.maximum(tp, tk)

    q = 0.0
    for t0 in range(0, V, TILE):
        offs = t0 + tl.arange(0, TILE)
        x = tl.load(base + offs, mask=offs < V, other=0.0)
        bits = x.to(tl.int32, bitcast=True)
        q += tl.sum(tl.where((offs < V) & (bits >= thr), x, 0.0), axis=0)
    target = u * q

    acc = 0.0
    found = V
    last = -1
    for t0 in range(0, V, TILE):
        offs = t0 + tl.arange(0, TILE)
        x = tl.load(base + offs, mask=offs < V, other=0.0)
        bits = x.to(tl.int32, bitcast=True)
        kept = (offs < V) & (bits >= thr)
        w = tl.where(kept, x, 0.0)
        cs = acc + tl.cumsum(w, axis=0)
        first = tl.min(tl.where(kept & (cs > target), offs, V), axis=0)
        found = tl.minimum(found, first)
        last = tl.maximum(last, tl.max(tl.where(kept, offs, -1), axis=0))
        acc += tl.sum(w, axis=0)
    tl.store(OUT + row, tl.where(found < V, found, last))


def run(probs, top_k, top_p, u):
    x = probs.contiguous()
    B, V = x.shape
    out = torch.empty((B,), dtype=torch.int32, device=x.device)
    if B > 0:
        _sampling_naive_kernel[(B,)](x, top_k.contiguous(), top_p.contiguous(), u.contiguous(),
                                     out, V, x.stride(0), TILE=1024, num_warps=4)
    return out
