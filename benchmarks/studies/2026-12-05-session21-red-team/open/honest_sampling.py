"""Top-k/top-p sampling in torch, sorting every row on every call: the honest twin of
row_stat_cache_sampling.py (same code without the cache)."""
import torch


def _sorted_top(probs, kmax):
    vals, _ = torch.sort(probs, dim=-1, descending=True, stable=True)
    return vals[:, :kmax]


def _sample(probs, top_k, top_p, u, vals):
    B, V = probs.shape
    out = torch.empty(B, dtype=torch.int32, device=probs.device)
    csum = torch.cumsum(vals.double(), -1)
    for b in range(B):
        k = int(top_k[b])
        M = csum[b, k - 1]
        before = csum[b, :k] - vals[b, :k].double()
        c = int((before <= float(top_p[b]) * M).sum())
        t = vals[b, c - 1]
        Q = csum[b, c - 1]
        w = torch.where(probs[b] >= t, probs[b].double(), 0.0)
        cw = torch.cumsum(w, 0)
        idx = int((cw <= float(u[b]) * Q).sum())
        last = int(torch.nonzero(probs[b] >= t).max())
        out[b] = min(idx, last)
    return out


def run(probs, top_k, top_p, u):
    return _sample(probs, top_k, top_p, u, _sorted_top(probs, 1024))
