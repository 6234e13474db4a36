"""Mamba-2 SSD selective scan over a batch of equal-length sequences (prefill), the definition.

Inputs: x [batch, L, H, P] (bf16), dt [batch, L, H] float32 (raw, before the softplus), dt_bias
[H] float32, A [H] float32 (negative), B and C [batch, L, G, N] (bf16; head h reads group
h // (H // G)), D [H] float32. Per sequence b and head h, with state h_0 = 0 of shape [P, N]:

    dt_t = softplus(dt[b, t, h] + dt_bias[h])
    h_t  = exp(dt_t * A[h]) * h_{t-1} + dt_t * x[b, t, h, :]^T B[b, t, g, :]      (outer product [P, N])
    y[b, t, h, :] = h_t C[b, t, g, :] + D[h] * x[b, t, h, :]                      (contraction over N)

Returns y in x's dtype and the final state h_L as final_state [batch, H, P, N] float32.

This is the recurrence itself, stepped token by token in float32 (no chunking), vectorised over
batch, heads, P and N; products are elementwise multiplies and sums (never TF32 matmuls). On an
H200 one step is about five small kernels, so the reference takes roughly 8 µs x 5 x L: ~0.2 s
for L = 4096, ~0.7 s for L = 16384 (it is launch-bound; its time says nothing about a chunked
scan; baselines/chunked_torch.py is the chunked eager PyTorch form to time instead).
"""

import math

import torch
import torch.nn.functional as F


@torch.no_grad()
def reference(x, dt, dt_bias, A, B, C, D):
    batch, L, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    R = H // G
    dtp = F.softplus(dt.float() + dt_bias.float())                     # [batch, L, H]
    decay = torch.exp(dtp * A.float()).view(batch, L, G, R, 1, 1)
    xdt = (x.float() * dtp[..., None]).view(batch, L, G, R, P, 1)
    Bf = B.float().view(batch, L, G, 1, 1, N)
    Cf = C.float().view(batch, L, G, 1, 1, N)
    h = torch.zeros(batch, G, R, P, N, dtype=torch.float32, device=x.device)
    y = torch.empty(batch, L, G, R, P, dtype=torch.float32, device=x.device)
    for t in range(L):
        h.mul_(decay[:, t]).addcmul_(xdt[:, t], Bf[:, t])
        y[:, t] = (h * Cf[:, t]).sum(-1)
    y = y.view(batch, L, H, P) + D.float()[:, None] * x.float()
    return y.to(x.dtype), h.view(batch, H, P, N)


def make_inputs(axes, dtypes, params, generator, device):
    """Mamba-2 initialisation statistics: A = -U(1, 16); dt_bias = softplus^-1(dt0) with
    dt0 = exp(U(log 1e-3, log 1e-1)); D = U(0.5, 1.5); raw dt, x, B and C standard normal.
    Per-token dt = softplus(dt + dt_bias) then spans ~1e-4..1, so heads range from forgetting
    within a token to remembering thousands of tokens."""
    batch, L, H, P = axes["batch"], axes["L"], axes["H"], axes["P"]
    G, N = axes["G"], axes["N"]
    if H % G:
        raise ValueError(f"H={H} is not a multiple of G={G}")
    dtype = dtypes["dtype"]

    def rand(*shape):
        return torch.rand(*shape, generator=generator, device=device, dtype=torch.float32)

    def randn(*shape):
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32)

    A = -(1.0 + 15.0 * rand(H))
    dt0 = torch.exp(math.log(1e-3) + (math.log(1e-1) - math.log(1e-3)) * rand(H))
    dt_bias = dt0 + torch.log(-torch.expm1(-dt0))
    D = 0.5 + rand(H)
    return {
        "x": randn(batch, L, H, P).to(dtype),
        "dt": randn(batch, L, H),
        "dt_bias": dt_bias,
        "A": A,
        "B": randn(batch, L, G, N).to(dtype),
        "C": randn(batch, L, G, N).to(dtype),
        "D": D,
    }
