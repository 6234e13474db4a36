"""Fused MoE expert MLPs (vLLM `fused_experts` semantics): for the routed tokens, the SwiGLU
expert MLP of every (token, expert) pair and the weighted combine over the top-k experts.

    x: [T, H], w1: [E, 2I, H] (rows 0..I-1 gate, rows I..2I-1 up), w2: [E, H, I],
    topk_weights: [T, K] float32, topk_ids: [T, K] int32 (K distinct experts per token).

    for every token t and slot j < K, with e = topk_ids[t, j]:
        g = x[t] @ w1[e, :I].T            (length I)
        u = x[t] @ w1[e, I:].T
        h = silu(g) * u                   silu(z) = z * sigmoid(z)
        y[t] += topk_weights[t, j] * (h @ w2[e].T)     (length H)

The products are accumulated in fp32. This reference rounds where an unfused PyTorch
pipeline does: the gate/up GEMM output and h to the activation dtype, the down-GEMM output to
the activation dtype, then sums the K weighted terms in fp32 and rounds y once. It groups the
pairs by expert on the host (one argsort and one device-to-host copy of the counts), runs two
GEMMs per active expert and writes each pair's weighted term to its own row before the sum
over K (deterministic; no scatter-add).
"""
import torch
import torch.nn.functional as F


def reference(x, w1, w2, topk_weights, topk_ids):
    T, H = x.shape
    E, two_i, _ = w1.shape
    I = two_i // 2
    K = topk_ids.shape[1]
    flat = topk_ids.reshape(-1).long()
    order = torch.argsort(flat, stable=True)           # pair indices grouped by expert
    counts = torch.bincount(flat, minlength=E).tolist()
    tok = order // K
    wts = topk_weights.reshape(-1).float()[order]
    terms = torch.empty((T * K, H), dtype=torch.float32, device=x.device)   # one row per pair
    start = 0
    for e, n in enumerate(counts):
        if n == 0:
            continue
        sel = slice(start, start + n)
        start += n
        gu = x[tok[sel]] @ w1[e].T                     # [n, 2I], activation dtype
        h = (F.silu(gu[:, :I].float()) * gu[:, I:].float()).to(x.dtype)
        o = h @ w2[e].T                                # [n, H], activation dtype
        terms[order[sel]] = o.float() * wts[sel, None]
    return terms.view(T, K, H).sum(dim=1).to(x.dtype)


ROUTER_BIAS_STD = 0.15   # per-expert popularity, in units of the per-token logit noise


def _randn_scaled(shape, scale, dtype, generator, device):
    """randn * scale in `dtype`, drawn in slabs along dim 0 so the fp32 temporary stays small."""
    out = torch.empty(shape, dtype=dtype, device=device)
    per = max(1, (1 << 27) // max(1, out[0].numel()))          # <= 512 MB of fp32 at a time
    for i in range(0, shape[0], per):
        j = min(shape[0], i + per)
        t = torch.randn((j - i, *shape[1:]), generator=generator, device=device, dtype=torch.float32)
        out[i:j] = t.mul_(scale)
    return out


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """x ~ N(0, 1); w1 ~ N(0, 1/H), so gate and up are ~N(0, 1); w2 ~ N(0, c^2/I) with
    c = 1/sqrt(E[h^2]) ~ 1.68 (E[h^2] ~ 0.355 for h = silu(g) * u), so each expert's output is
    ~N(0, 1) and y is a convex combination of K such terms.

    Routing: softmax over E of router logits z[t, e] = n[t, e] + b[e] with n ~ N(0, 1) per
    token and a per-expert popularity b ~ N(0, 0.15^2) fixed by the seed; top-K experts by
    probability, weights renormalised to sum to 1 (Mixtral / Qwen3 norm_topk_prob). The
    popularity makes the loads somewhat uneven: max/mean load ~2 for 128 experts top-8, ~1.2
    for 8 experts top-2."""
    T, H, I, E, K = axes["T"], axes["H"], axes["I"], axes["E"], axes["K"]
    dtype = dtypes["dtype"]
    x = _randn_scaled((T, H), 1.0, dtype, generator, device)
    w1 = _randn_scaled((E, 2 * I, H), H ** -0.5, dtype, generator, device)
    w2 = _randn_scaled((E, H, I), 1.68 * I ** -0.5, dtype, generator, device)
    bias = ROUTER_BIAS_STD * torch.randn((E,), generator=generator, device=device)
    logits = torch.randn((T, E), generator=generator, device=device) + bias
    probs = torch.softmax(logits, dim=-1)
    topk_weights, topk_ids = torch.topk(probs, K, dim=-1)
    topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
    return {
        "x": x, "w1": w1, "w2": w2,
        "topk_weights": topk_weights.float().contiguous(),
        "topk_ids": topk_ids.to(torch.int32).contiguous(),
    }
