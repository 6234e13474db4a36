# Frozen copy of tasks/gdn_chunk_prefill/naive.py as judges/gold/gdn_chunk_prefill/labels.toml labels it (this task's gold set
# is frozen, judges/splits.toml). The shipped naive has since split its row tile across programs
# (the same sequential recurrence; one program per sequence timed out at the bench shapes).
"""Gated delta rule prefill as one plain Triton kernel that steps the recurrence token by token.

For each packed sequence n and v-head h (q/k head h // (Hv // Hqk)), from S = state[n, h]
([V, K] float32), for every token t of the sequence:
    S <- exp(g_t) S;  u = (v_t - S k_t) beta_t;  S <- S + u k_t^T;  o_t = scale * S q_t
One program per sequence keeps every head's state in one [Hv * V, K] register tile and walks the
tokens in order; no chunking, no tensor cores. Returns o (q's dtype) and final_state (float32).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _gdn_sequential(Q, K_ptr, V_ptr, G, BETA, S0, O, FINAL, CU, scale, Hqk, Hv, K, V,
                    BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """Token-by-token gated delta rule for one sequence, all v-heads at once (rows r = h * V + j)."""
    n = tl.program_id(0)
    bos = tl.load(CU + n)
    eos = tl.load(CU + n + 1)
    offs_r = tl.arange(0, BLOCK_R)
    offs_k = tl.arange(0, BLOCK_K)
    mask_r = offs_r < Hv * V
    mask_k = offs_k < K
    mask_rk = mask_r[:, None] & mask_k[None, :]
    h = offs_r // V
    hk = h // (Hv // Hqk)
    s_ptrs = (n * Hv * V + offs_r).to(tl.int64)[:, None] * K + offs_k[None, :]
    S = tl.load(S0 + s_ptrs, mask=mask_rk, other=0.0)
    for t in range(bos, eos):
        decay = tl.exp(tl.load(G + t * Hv + h, mask=mask_r, other=0.0))
        beta = tl.load(BETA + t * Hv + h, mask=mask_r, other=0.0)
        qk_rows = (t * Hqk + hk)[:, None] * K + offs_k[None, :]
        kt = tl.load(K_ptr + qk_rows, mask=mask_rk, other=0.0).to(tl.float32)
        qt = tl.load(Q + qk_rows, mask=mask_rk, other=0.0).to(tl.float32)
        vt = tl.load(V_ptr + t * Hv * V + offs_r, mask=mask_r, other=0.0).to(tl.float32)
        S = S * decay[:, None]
        u = (vt - tl.sum(S * kt, axis=1)) * beta
        S = S + u[:, None] * kt
        o = tl.sum(S * qt, axis=1) * scale
        tl.store(O + t * Hv * V + offs_r, o.to(O.dtype.element_ty), mask=mask_r)
    tl.store(FINAL + s_ptrs, S, mask=mask_rk)


def run(q, k, v, g, beta, state, cu_seqlens, scale):
    T, Hqk, K = q.shape
    Hv, V = v.shape[1], v.shape[2]
    N = cu_seqlens.numel() - 1
    o = torch.empty(T, Hv, V, device=q.device, dtype=q.dtype)
    final = torch.empty(N, Hv, V, K, device=q.device, dtype=torch.float32)
    # every head's [V, K] state of a sequence in one program: fine for the smoke shapes; at the
    # bench shapes (Hv * V = 1024-4096 rows of K = 128) it is far past the register file and slow
    _gdn_sequential[(N,)](q, k, v, g, beta, state, o, final, cu_seqlens, scale, Hqk, Hv, K, V,
                          BLOCK_R=triton.next_power_of_2(Hv * V), BLOCK_K=triton.next_power_of_2(K))
    return o, final
