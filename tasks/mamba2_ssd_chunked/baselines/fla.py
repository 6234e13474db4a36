"""Production baseline: the Mamba-2 SSD scan through fla-core's chunk_simple_gla
(flash-linear-attention). fla-core has no Mamba-2 kernel of its own, but its scalar-gated linear
attention (simple GLA) is the same recurrence: S_t = exp(g_t) S_{t-1} + k_t^T v_t,
o_t = scale * q_t S_t, with one scalar gate per token and head, chunked with tensor cores.
Not a design under test; it needs fla-core and a GPU (not meant for the Triton interpreter).

Mapping: q = C and k = dt * B (both expanded from G groups to H heads: simple GLA has no grouped
q/k), v = x, g = dt * A (log space; dt = softplus(dt + dt_bias)), scale = 1, zero initial state;
state_v_first=True makes fla's [V, K] state the task's [P, N]. y = o + D * x is added here. The
adapter's own work (softplus, the dt * B product rounded to bf16, the H-fold expansion of B and
C, and the D * x epilogue) is inside the timed call and counts against the baseline; rounding
dt * B to bf16 adds a 2^-9 relative error on k, within the task's tolerance.
"""

import torch.nn.functional as F

try:
    from fla.ops.simple_gla import chunk_simple_gla
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("fla-core is not installed: pip install fla-core") from exc


def run(x, dt, dt_bias, A, B, C, D):
    H = x.shape[2]
    R = H // B.shape[2]
    dtp = F.softplus(dt.float() + dt_bias.float())                    # [batch, L, H]
    g = dtp * A.float()                                                # log decay per token/head
    q = C.repeat_interleave(R, dim=2)                                  # [batch, L, H, N]
    k = (B.float().repeat_interleave(R, dim=2) * dtp[..., None]).to(x.dtype)
    o, final_state = chunk_simple_gla(q, k, x, g=g, scale=1.0, initial_state=None,
                                      output_final_state=True, state_v_first=True)
    y = (o.float() + D.float()[:, None] * x.float()).to(x.dtype)
    return y, final_state.float()
