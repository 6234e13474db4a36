"""Gated delta rule (Qwen3-Next gated delta net), one decode step, state updated in place.

q, k: [B, 1, HQK, K]; v: [B, 1, HV, V]; a, b: [B, 1, HV] (one dtype, e.g. bfloat16);
state: [NS, HV, V, K] float32, a pool of per-sequence states in k-last layout (row v of a
head's state is contiguous along K); state_indices: [B] int32, the pool slot of each sequence;
A_log, dt_bias: [HV] float32; scale: float. HV is a multiple of HQK and v-head h reads q/k
head h // (HV // HQK). For every sequence n, v-head h, with S = state[state_indices[n], h]
([V, K]) and everything in fp32:

    q^  = q[n, 0, h // r] / sqrt(sum(q^2) + 1e-6),   k^ likewise              (L2 norm, r = HV // HQK)
    g   = -exp(A_log[h]) * softplus(a[n, 0, h] + dt_bias[h])                   (log decay, < 0)
    beta = sigmoid(b[n, 0, h])
    S   = S * exp(g)                                                           (decay)
    v'  = beta * (v[n, 0, h] - S @ k^)                                         (delta rule, [V])
    S   = S + outer(v', k^)                                                    (rank-1 update)
    o[n, 0, h] = (scale * S @ q^).to(v.dtype)                                  ([V])
    state[state_indices[n], h] = S                                             (in place)

This is the definition, one step of the sequential fp32 recurrence, batched over (n, h);
slots of the pool not named in state_indices are left untouched.
"""
import torch
import torch.nn.functional as F

L2_EPS = 1e-6


def reference(q, k, v, state, state_indices, A_log, a, dt_bias, b, scale):
    HQK, HV = q.shape[2], v.shape[2]
    idx = state_indices.long()
    qf = q[:, 0].float()
    kf = k[:, 0].float()
    qf = qf * torch.rsqrt((qf * qf).sum(-1, keepdim=True) + L2_EPS)
    kf = kf * torch.rsqrt((kf * kf).sum(-1, keepdim=True) + L2_EPS)
    qf = qf.repeat_interleave(HV // HQK, dim=1)                        # [B, HV, K]
    kf = kf.repeat_interleave(HV // HQK, dim=1)
    vf = v[:, 0].float()                                               # [B, HV, V]
    g = -torch.exp(A_log.float()) * F.softplus(a[:, 0].float() + dt_bias.float())   # [B, HV]
    beta = torch.sigmoid(b[:, 0].float())
    S = state[idx] * torch.exp(g)[:, :, None, None]                    # [B, HV, V, K]
    u = torch.einsum("nhvk,nhk->nhv", S, kf)                           # S @ k^
    vn = beta[:, :, None] * (vf - u)
    S = S + vn[:, :, :, None] * kf[:, :, None, :]
    o = scale * torch.einsum("nhvk,nhk->nhv", S, qf)
    state[idx] = S
    return o[:, None].to(v.dtype)


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """The pool slots and the gate inputs; q, k, v and the pool come from `init`.

    state_indices: B distinct slots of the NS-slot pool, in random order (continuous batching).
    A_log = log(U(1, 16)) and dt_bias = softplus^-1(dt), dt log-uniform in [1e-3, 1e-1] (the
    Mamba-2 / GDN initialisation ranges); a ~ N(1.3, 1.5^2) and b ~ N(0.4, 1.4^2) in the input
    dtype, spread as pre-activation projections are. With these, exp(g) covers ~0.02 to ~1
    and beta ~0.05 to ~0.95.
    """
    B, NS, HV = axes["B"], axes["NS"], axes["HV"]
    dtype = dtypes["dtype"]
    f32 = dict(generator=generator, device=device, dtype=torch.float32)
    out = {"state_indices": torch.randperm(NS, generator=generator, device=device)[:B].to(torch.int32)}
    out["A_log"] = torch.log(torch.rand((HV,), **f32) * 15.0 + 1.0)
    dt = torch.exp(torch.rand((HV,), **f32) * (torch.log(torch.tensor(0.1)) - torch.log(torch.tensor(1e-3))).item()
                   + torch.log(torch.tensor(1e-3)).item())
    out["dt_bias"] = dt + torch.log(-torch.expm1(-dt))                 # softplus^-1(dt)
    out["a"] = (torch.randn((B, 1, HV), **f32) * 1.5 + 1.3).to(dtype)
    out["b"] = (torch.randn((B, 1, HV), **f32) * 1.4 + 0.4).to(dtype)
    return out
