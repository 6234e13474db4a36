"""DeepSeek-V3 biased grouped top-k routing (noaux_tc), plain Triton implementation.

Computes, for router logits z: [T, E] (fp32) and bias: [E]:

    s = sigmoid(z), sb = s + bias
    gs[t, g] = top-2 sum of sb over group g (G groups of E/G consecutive experts)
    keep the topk_group best groups, then ids = top_k of sb over the kept experts
    w = s[ids] / sum(s[ids]) * routed_scaling_factor          (ties -> lower index)

Two kernels, one token per program: the first writes the group scores gs to a [T, G] buffer
(one program per (token, group)); the second re-reads the token's logits, picks the groups and
then the experts one at a time with runtime loops of arg-max over the whole padded row,
storing each pick, and finally renormalises the stored weights.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _group_score_kernel(Z, BIAS, GS, E, G, EPG, stride_z, EPG_P: tl.constexpr):
    t = tl.program_id(0)
    g = tl.program_id(1)
    j = tl.arange(0, EPG_P)
    m = j < EPG
    e = g * EPG + j
    z = tl.load(Z + t * stride_z + e, mask=m, other=0.0)
    b = tl.load(BIAS + e, mask=m, other=0.0)
    sb = tl.where(m, 1.0 / (1.0 + tl.exp(-z)) + b, float("-inf"))
    m1 = tl.max(sb, axis=0)
    i1 = tl.min(tl.where(sb == m1, j, EPG_P), axis=0)
    m2 = tl.max(tl.where(j == i1, float("-inf"), sb), axis=0)
    tl.store(GS + t * G + g, m1 + m2)


@triton.jit
def _select_kernel(Z, BIAS, GS, W_OUT, ID_OUT, E, G, EPG, TOPK_GROUP, K, stride_z, scale,
                   E_P: tl.constexpr, G_P: tl.constexpr):
    t = tl.program_id(0)
    e = tl.arange(0, E_P)
    m = e < E
    z = tl.load(Z + t * stride_z + e, mask=m, other=0.0)
    b = tl.load(BIAS + e, mask=m, other=0.0)
    s = 1.0 / (1.0 + tl.exp(-z))
    sb = tl.where(m, s + b, float("-inf"))
    # groups
    gi = tl.arange(0, G_P)
    gs = tl.load(GS + t * G + gi, mask=gi < G, other=float("-inf"))
    keep = tl.zeros([E_P], dtype=tl.int32)
    for r in range(0, TOPK_GROUP):
        gmax = tl.max(gs, axis=0)
        pick = tl.min(tl.where(gs == gmax, gi, G_P), axis=0)
        gs = tl.where(gi == pick, float("-inf"), gs)
        keep = tl.where(e // EPG == pick, 1, keep)
    sb = tl.where(keep != 0, sb, float("-inf"))
    # experts
    total = 0.0
    for k in range(0, K):
        vmax = tl.max(sb, axis=0)
        pick = tl.min(tl.where(sb == vmax, e, E_P), axis=0)
        wk = tl.sum(tl.where(e == pick, s, 0.0), axis=0)
        sb = tl.where(e == pick, float("-inf"), sb)
        tl.store(ID_OUT + t * K + k, pick)
        tl.store(W_OUT + t * K + k, wk)
        total += wk
    for k in range(0, K):
        wk = tl.load(W_OUT + t * K + k)
        tl.store(W_OUT + t * K + k, wk / total * scale)


def run(router_logits, bias, n_group, topk_group, top_k, routed_scaling_factor):
    z = router_logits.contiguous()
    bias = bias.contiguous()
    T, E = z.shape
    G, TG, K = int(n_group), int(topk_group), int(top_k)
    epg = E // G
    gs = torch.empty((T, G), dtype=torch.float32, device=z.device)
    w = torch.empty((T, K), dtype=torch.float32, device=z.device)
    ids = torch.empty((T, K), dtype=torch.int32, device=z.device)
    if T == 0:
        return w, ids
    _group_score_kernel[(T, G)](z, bias, gs, E, G, epg, z.stride(0),
                                EPG_P=triton.next_power_of_2(epg))
    _select_kernel[(T,)](z, bias, gs, w, ids, E, G, epg, TG, K, z.stride(0),
                         float(routed_scaling_factor),
                         E_P=triton.next_power_of_2(E), G_P=max(2, triton.next_power_of_2(G)))
    return w, ids
