"""Top-k then top-p (nucleus) sampling from probabilities, with the uniform draw given.

For row b with probabilities x = probs[b] (float32, >= 0, summing to ~1), k = top_k[b],
p = top_p[b], u = u[b] in [0, 1):

  1. Rank the V entries by decreasing probability (equal probabilities: lower index first).
     K = the k first ranks;  M = sum of x over K.
  2. An entry of K is kept when the mass of the entries ranked before it is <= p * M
     (the smallest prefix of K whose mass exceeds p * M; FlashInfer/FIB top-p after top-k).
     S = kept entries, Q = sum of x over S.
  3. Inverse CDF in vocabulary order: samples[b] = the smallest index i in S with
         sum_{j in S, j <= i} x[j] > u * Q.

All sums are taken in float64 here. make_inputs draws probs, top_p and u so that no decision
above is within MARGIN (relative to M or Q) of flipping, and so that the probabilities at the
top-k and top-p boundaries are not tied: any float32 evaluation then returns the same ids.
"""
import torch

MARGIN = 3e-5
# Each timed call gets a new draw of the inputs (d2k/execution/wire.refill). The perturbation
# between calls only moves values within a row, so a row's sorted top values would be the same on
# every call: a solution that kept them from its first call and matched them by the row's max and
# min passed at a sixth of its honest twin's time (session 21's row-statistics cache).
FRESH_INPUTS_PER_CALL = True
# ...and that draw replaces the perturbation, which would pair a row's probabilities with another
# row's top_k, top_p and u and reorder its CDF, undoing the margins above: on v151936_b64, 72 of
# 1,280 perturbed rows fell under MARGIN and the smallest was 1.5e-7 of Q, where an honest float32
# sampler could return another id (benchmarks/studies/2026-12-05-row-stat-audit/margins_sampling.py)
UNPERTURBED_WHEN_FRESH = ("probs", "top_k", "top_p", "u")


def _keep_mask(x, top_k, top_p):
    """float64 x [B, V] -> (keep [B, V] bool in vocab order, sorted values, order, k, M, before)."""
    B, V = x.shape
    vals, order = torch.sort(x, dim=-1, descending=True, stable=True)
    k = top_k.long().clamp(1, V)
    ranks = torch.arange(V, device=x.device)
    in_k = ranks[None, :] < k[:, None]
    vk = torch.where(in_k, vals, torch.zeros_like(vals))
    M = vk.sum(-1)
    csum = torch.cumsum(vk, -1)
    before = csum - vk
    keep_sorted = in_k & (before <= top_p.double()[:, None] * M[:, None])
    keep = torch.zeros_like(keep_sorted).scatter_(1, order, keep_sorted)
    return keep, vals, k, M, csum, keep_sorted


def _sample(x, keep, u):
    w = torch.where(keep, x, torch.zeros_like(x))
    Q = w.sum(-1)
    c = torch.cumsum(w, -1)
    target = u.double() * Q
    idx = (c <= target[:, None]).sum(-1)
    last = torch.where(keep, torch.arange(x.shape[1], device=x.device), -1).max(-1).values
    return torch.minimum(idx, last), c, Q, target


def reference(probs, top_k, top_p, u):
    x = probs.double()
    keep, *_ = _keep_mask(x, top_k, top_p)
    idx, *_ = _sample(x, keep, u)
    return idx.to(torch.int32)


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """probs = softmax(sigma_b * N(0, 1)) per row with sigma_b ~ U[2.5, 5] (top-1 probability
    from ~3 % to ~60 %; chosen, ‡); top_k ~ U{k_lo..k_hi}; top_p ~ U[p_lo, p_hi]; u ~ U[0, 1).
    Rows whose top-k boundary is a tie, or whose top-p cut lies within MARGIN * M of a
    cumulative sum (or is a tie), are redrawn (probs and top_p); then u is redrawn until u * Q
    is at least MARGIN * Q away from both ends of the sampled entry's CDF interval."""
    B, V = axes["B"], axes["V"]
    k_lo, k_hi = int(params["k_lo"]), int(params["k_hi"])
    p_lo, p_hi = float(params["p_lo"]), float(params["p_hi"])

    def draw_probs(n):
        sigma = 2.5 + 2.5 * torch.rand((n, 1), generator=generator, device=device, dtype=torch.float64)
        z = sigma * torch.randn((n, V), generator=generator, device=device, dtype=torch.float64)
        return torch.softmax(z, dim=-1).to(torch.float32)

    def draw_p(n):
        r = torch.rand((n,), generator=generator, device=device, dtype=torch.float64)
        return (p_lo + (p_hi - p_lo) * r).to(torch.float32)

    probs = draw_probs(B)
    top_k = torch.randint(k_lo, k_hi + 1, (B,), generator=generator, device=device, dtype=torch.int64)
    top_k = top_k.clamp(1, V).to(torch.int32)
    top_p = draw_p(B)
    ar = torch.arange(B, device=device)
    for _ in range(200):
        x = probs.double()
        keep, vals, k, M, csum, keep_sorted = _keep_mask(x, top_k, top_p)
        m = keep_sorted.sum(-1)                       # kept count, >= 1
        pM = top_p.double() * M
        last_in = vals[ar, m - 1]
        bad = (csum[ar, m - 1] - vals[ar, m - 1]) > pM - MARGIN * M     # last kept, robustly
        nxt = torch.clamp(m, max=V - 1)
        cut = m < k                                   # an entry of K is cut by top-p
        bad |= cut & ((csum[ar, m - 1] <= pM + MARGIN * M) | (vals[ar, nxt] >= last_in))
        kk = torch.clamp(k, max=V - 1)
        bad |= (k < V) & (vals[ar, kk] >= vals[ar, k - 1])                # top-k tie
        n_bad = int(bad.sum())
        if n_bad == 0:
            break
        probs[bad] = draw_probs(n_bad)
        top_p[bad] = draw_p(n_bad)
    else:
        raise RuntimeError("could not draw sampling inputs away from the decision boundaries")

    x = probs.double()
    keep, *_ = _keep_mask(x, top_k, top_p)
    u = torch.rand((B,), generator=generator, device=device, dtype=torch.float32)
    for _ in range(200):
        idx, c, Q, target = _sample(x, keep, u)
        hi = c[ar, idx]
        lo = hi - x[ar, idx]
        bad = (target - lo <= MARGIN * Q) | (hi - target <= MARGIN * Q)
        n_bad = int(bad.sum())
        if n_bad == 0:
            break
        u[bad] = torch.rand((n_bad,), generator=generator, device=device, dtype=torch.float32)
    else:
        raise RuntimeError("could not draw u away from the CDF boundaries")
    return {"probs": probs.contiguous(), "top_k": top_k, "top_p": top_p, "u": u}
