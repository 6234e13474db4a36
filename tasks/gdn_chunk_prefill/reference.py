"""Gated delta rule (Qwen3-Next GDN) prefill over packed variable-length sequences, the definition.

Inputs: q, k [T, Hqk, K] (bf16, L2-normalised along K), v [T, Hv, V] (bf16), g [T, Hv] float32
(log decay, <= 0), beta [T, Hv] float32 (in (0, 1)), state [N, Hv, V, K] float32 (initial states,
"k-last": S[n, h] is a V x K matrix), cu_seqlens int64 [N + 1], scale (float). v-head h reads
q/k head h // (Hv // Hqk). For each sequence n (tokens cu_seqlens[n]:cu_seqlens[n+1]) and v-head
h, starting from S = state[n, h], token by token:

    S  <- exp(g_t) * S
    u  <- (v_t - S k_t) * beta_t                  (V-vector; S k_t contracts over K)
    S  <- S + u k_t^T                             (rank-1 update)
    o_t = scale * S q_t

Returns o [T, Hv, V] in q's dtype and final_state [N, Hv, V, K] float32 (S after the last token).

This is the recurrence itself in float32, one token per step (no chunking), vectorised over
sequences and heads: sequences are padded to the longest with g = 0, beta = 0, k = 0, which
leaves S unchanged. Contractions are elementwise multiplies and sums, never TF32 matmuls. On an
H200 one step is ~8 small kernels, launch-bound: roughly 0.4-0.6 s for 8192 steps and 1.5-2.5 s for
the 32768-token workload per call (the harness calls it four times per workload and solution);
its time says nothing about a chunked kernel; baselines/chunked_torch.py is the chunked eager
PyTorch form to time instead.
"""

import torch
import torch.nn.functional as F


# Not perturbed between timed calls: the sequence offsets, which must increase.
FIXED_INPUTS = {"cu_seqlens"}


@torch.no_grad()
def reference(q, k, v, g, beta, state, cu_seqlens, scale):
    T, Hqk, K = q.shape
    Hv, V = v.shape[1], v.shape[2]
    rep = Hv // Hqk
    cu = [int(c) for c in cu_seqlens.tolist()]
    N = len(cu) - 1
    Lmax = max([cu[i + 1] - cu[i] for i in range(N)] + [0])
    dev = q.device
    qf = torch.zeros(N, Lmax, Hv, K, dtype=torch.float32, device=dev)
    kf = torch.zeros_like(qf)
    vf = torch.zeros(N, Lmax, Hv, V, dtype=torch.float32, device=dev)
    decay = torch.ones(N, Lmax, Hv, dtype=torch.float32, device=dev)
    bf = torch.zeros(N, Lmax, Hv, dtype=torch.float32, device=dev)
    for n in range(N):
        s, e = cu[n], cu[n + 1]
        qf[n, : e - s] = q[s:e].float().repeat_interleave(rep, dim=1)
        kf[n, : e - s] = k[s:e].float().repeat_interleave(rep, dim=1)
        vf[n, : e - s] = v[s:e].float()
        decay[n, : e - s] = torch.exp(g[s:e].float())
        bf[n, : e - s] = beta[s:e].float()
    S = state.float().clone()                                   # [N, Hv, V, K]
    o = torch.empty(N, Lmax, Hv, V, dtype=torch.float32, device=dev)
    for t in range(Lmax):
        kt = kf[:, t, :, None, :]                                # [N, Hv, 1, K]
        S.mul_(decay[:, t, :, None, None])
        u = (vf[:, t] - (S * kt).sum(-1)) * bf[:, t, :, None]    # [N, Hv, V]
        S.addcmul_(u[..., None], kt)
        o[:, t] = (S * qf[:, t, :, None, :]).sum(-1)
    out = torch.empty(T, Hv, V, dtype=q.dtype, device=dev)
    for n in range(N):
        s, e = cu[n], cu[n + 1]
        out[s:e] = (o[n, : e - s] * scale).to(q.dtype)
    return out, S


def make_inputs(axes, dtypes, params, generator, device):
    """Qwen3-Next-like statistics. q, k: standard normal rows L2-normalised along K (the model
    normalises them before the op). v: standard normal. Gates as the model forms them,
    g = -exp(A_log) * softplus(a + dt_bias) and beta = sigmoid(b), with per-head A_log ~ U(-1.5, 3)
    and dt_bias ~ U(-5.5, -1.5) (the range of trained checkpoints), a ~ N(-0.1, 1.25) and
    b ~ N(1.5, 2) per token and head: heads range from forgetting within a token (g ~ -20) to
    remembering ~10^4 tokens (g ~ -1e-4). state: N(0, 1/K) when params.init_state, else zeros.
    cu_seqlens from the frozen params.seq_lens."""
    seq_lens = [int(n) for n in params["seq_lens"]]
    T, N = axes["T"], axes["N"]
    Hqk, Hv, K, V = axes["Hqk"], axes["Hv"], axes["K"], axes["V"]
    if len(seq_lens) != N or sum(seq_lens) != T:
        raise ValueError(f"seq_lens {seq_lens} do not match N={N}, T={T}")
    if Hv % Hqk:
        raise ValueError(f"Hv={Hv} is not a multiple of Hqk={Hqk}")
    dtype = dtypes["dtype"]

    def randn(*shape):
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32)

    def rand(*shape):
        return torch.rand(*shape, generator=generator, device=device, dtype=torch.float32)

    q = F.normalize(randn(T, Hqk, K), p=2.0, dim=-1).to(dtype)
    k = F.normalize(randn(T, Hqk, K), p=2.0, dim=-1).to(dtype)
    v = randn(T, Hv, V).to(dtype)
    A_log = -1.5 + 4.5 * rand(Hv)
    dt_bias = -5.5 + 4.0 * rand(Hv)
    a = -0.1 + 1.25 * randn(T, Hv)
    b = 1.5 + 2.0 * randn(T, Hv)
    g = -torch.exp(A_log) * F.softplus(a + dt_bias)
    beta = torch.sigmoid(b)
    if params.get("init_state", False):
        state = randn(N, Hv, V, K) * K ** -0.5
    else:
        state = torch.zeros(N, Hv, V, K, device=device, dtype=torch.float32)
    cu = [0]
    for n in seq_lens:
        cu.append(cu[-1] + n)
    cu_seqlens = torch.tensor(cu, dtype=torch.int64, device=device)
    return {"q": q, "k": k, "v": v, "g": g, "beta": beta, "state": state, "cu_seqlens": cu_seqlens}
