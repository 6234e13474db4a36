"""Gated delta rule decode step (Qwen3-Next GDN), plain Triton implementation.

For sequence n, value head h, with S = state[state_indices[n], h] ([V, K]):

    q^, k^ = L2-normalised q, k (eps 1e-6),  g = -exp(A_log) * softplus(a + dt_bias),  beta = sigmoid(b)
    S = S * exp(g);  v' = beta * (v - S @ k^);  S = S + outer(v', k^);  o = scale * S @ q^

The gates, the norms and the repeat of q / k to the value heads are computed with torch ops;
the states are gathered from the pool into a dense [B, HV, V, K] tensor, one program per
(sequence, head) updates its whole [V, K] state and writes it to a second dense tensor, which
is scattered back into the pool.
"""
import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _gdn_naive_kernel(Q, Kt, Vt, G, BETA, S_IN, S_OUT, O, scale, K, V,
                      BK: tl.constexpr, BV: tl.constexpr):
    """Program p = n * HV + h: the whole state of (n, h), dense [V, K] at p * V * K."""
    p = tl.program_id(0)
    rk = tl.arange(0, BK)
    rv = tl.arange(0, BV)
    mk = rk < K
    mv = rv < V
    q = tl.load(Q + p * K + rk, mask=mk, other=0.0)
    k = tl.load(Kt + p * K + rk, mask=mk, other=0.0)
    v = tl.load(Vt + p * V + rv, mask=mv, other=0.0).to(tl.float32)
    g = tl.load(G + p)
    beta = tl.load(BETA + p)
    offs = p * V * K + rv[:, None] * K + rk[None, :]
    m2 = mv[:, None] & mk[None, :]
    h = tl.load(S_IN + offs, mask=m2, other=0.0)
    h = h * tl.exp(g)
    u = tl.sum(h * k[None, :], axis=1)
    vn = (v - u) * beta
    h = h + vn[:, None] * k[None, :]
    o = tl.sum(h * q[None, :], axis=1) * scale
    tl.store(S_OUT + offs, h, mask=m2)
    tl.store(O + p * V + rv, o.to(O.dtype.element_ty), mask=mv)


def run(q, k, v, state, state_indices, A_log, a, dt_bias, b, scale):
    B, _, HQK, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    qf = q[:, 0].float() / torch.sqrt((q[:, 0].float() ** 2).sum(-1, keepdim=True) + 1e-6)
    kf = k[:, 0].float() / torch.sqrt((k[:, 0].float() ** 2).sum(-1, keepdim=True) + 1e-6)
    qf = qf.repeat_interleave(HV // HQK, dim=1).contiguous()        # [B, HV, K]
    kf = kf.repeat_interleave(HV // HQK, dim=1).contiguous()
    g = (-torch.exp(A_log) * F.softplus(a[:, 0].float() + dt_bias)).contiguous()   # [B, HV]
    beta = torch.sigmoid(b[:, 0].float()).contiguous()
    idx = state_indices.long()
    s_in = state[idx].contiguous()                                   # [B, HV, V, K]
    s_out = torch.empty_like(s_in)
    o = torch.empty_like(v)
    _gdn_naive_kernel[(B * HV,)](qf, kf, v.contiguous(), g, beta, s_in, s_out, o, float(scale), K, V,
                                 BK=triton.next_power_of_2(K), BV=triton.next_power_of_2(V),
                                 num_warps=8)
    state[idx] = s_out
    return o
