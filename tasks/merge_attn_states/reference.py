"""Merge two partial attention results with their log-sum-exps (vLLM merge_attn_states).

o_a, o_b: [T, H, D] partial outputs of the same queries over two disjoint key ranges (a shared
prefix and a suffix, or two KV chunks), each already normalised by its own softmax sum.
lse_a, lse_b: [H, T] float32 natural-log log-sum-exps of the scaled scores of each range.
A partial over an empty key range has an all-zero output and an LSE of -inf (or +inf, the
FlashAttention-2 convention for an empty row); +inf is read as -inf. For every (t, h):

    a, b  = lse_a[h, t], lse_b[h, t]           (+inf replaced by -inf)
    m     = max(a, b)
    wa    = exp(a - m),  wb = exp(b - m)
    o     = (wa * o_a[t, h] + wb * o_b[t, h]) / (wa + wb)      in o_a's dtype
    lse   = m + log(wa + wb)                                     float32, [H, T]

When both sides are empty (a = b = -inf) the result is o = o_a[t, h] (all zeros) and lse = -inf,
never NaN. The math is done in fp32; o is rounded once to the input dtype.
"""

import torch

INF = float("inf")


def reference(o_a, lse_a, o_b, lse_b):
    la = lse_a.float()
    lb = lse_b.float()
    la = torch.where(la == INF, torch.full_like(la, -INF), la)
    lb = torch.where(lb == INF, torch.full_like(lb, -INF), lb)
    m = torch.maximum(la, lb)
    both_empty = m == -INF
    m_safe = torch.where(both_empty, torch.zeros_like(m), m)
    wa = torch.exp(la - m_safe)
    wb = torch.exp(lb - m_safe)
    s = wa + wb
    s_safe = torch.where(both_empty, torch.ones_like(s), s)
    ca = torch.where(both_empty, torch.ones_like(s), wa / s_safe)      # [H, T]
    cb = torch.where(both_empty, torch.zeros_like(s), wb / s_safe)
    lse = torch.where(both_empty, torch.full_like(m, -INF), m_safe + torch.log(s_safe))
    o = o_a.float() * ca.t()[:, :, None] + o_b.float() * cb.t()[:, :, None]
    return o.to(o_a.dtype), lse.contiguous()


def make_inputs(axes, dtypes, params, generator, device):
    """Partial outputs ~ N(0, 1) and LSEs ~ 6 + 2 N(0, 1) (a few hundred to thousands of keys).

    params.empty_frac: share of tokens (drawn at random) with an empty partial; such a token has
    side a empty (45 %), side b empty (45 %) or both (10 %), in all heads: its o is zero and its
    LSE is +inf or -inf. params.empty_lse: "+inf" (FlashAttention-2's value for an empty row),
    "-inf", or "mixed" (each empty partial picks one at random).
    """
    T, H, D = axes["T"], axes["H"], axes["D"]
    dtype = dtypes["dtype"]
    frac = float(params.get("empty_frac", 0.0))
    kind = params.get("empty_lse", "-inf")

    def randn(*shape):
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32)

    o_a, o_b = randn(T, H, D), randn(T, H, D)
    lse_a, lse_b = 6.0 + 2.0 * randn(H, T), 6.0 + 2.0 * randn(H, T)
    if frac > 0:
        u = torch.rand((T,), generator=generator, device=device)
        side = torch.rand((T,), generator=generator, device=device)
        empty = u < frac
        empty_a = empty & ((side < 0.45) | (side >= 0.9))
        empty_b = empty & (side >= 0.45)
        for o, lse, e in ((o_a, lse_a, empty_a), (o_b, lse_b, empty_b)):
            if kind == "+inf":
                val = torch.full((T,), INF, device=device)
            elif kind == "-inf":
                val = torch.full((T,), -INF, device=device)
            elif kind == "mixed":
                pos = torch.rand((T,), generator=generator, device=device) < 0.5
                val = torch.where(pos, torch.full((T,), INF, device=device),
                                  torch.full((T,), -INF, device=device))
            else:
                raise ValueError(f"unknown empty_lse {kind!r}")
            o[e] = 0.0
            lse[:, e] = val[e][None, :].expand(H, -1)
    return {"o_a": o_a.to(dtype), "lse_a": lse_a.contiguous(),
            "o_b": o_b.to(dtype), "lse_b": lse_b.contiguous()}
