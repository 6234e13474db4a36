"""Eager PyTorch baseline: the chunked WY form of the gated delta rule (like fla's
naive_chunk_gated_delta_rule, written for this task's packed varlen layout), for timing against
the experts when the token-by-token reference is too slow to be a fair eager baseline. Not a
design under test. All arithmetic in fp32 (matmuls follow torch's TF32 setting).

Per sequence and chunk of 64 tokens (vectorised over v-heads), with gc the chunk-local cumsum
of g: T = (I + strict_tril(beta k k^T exp(gc_i - gc_j)))^-1 by a triangular solve,
W = T (beta exp(gc) k), U = T (beta v), v_new = U - W h, o = scale ((q h) exp(gc) +
(q k^T exp(gc_i - gc_j))[j <= i] v_new), h <- exp(gc_last) h + k^T (v_new exp(gc_last - gc)).
A Python loop walks the chunks (T / 64 iterations of ~20 small kernels).
"""

import torch

BT = 64


@torch.no_grad()
def run(q, k, v, g, beta, state, cu_seqlens, scale):
    T, Hqk, K = q.shape
    Hv, V = v.shape[1], v.shape[2]
    rep = Hv // Hqk
    cu = cu_seqlens.tolist()
    o = torch.empty(T, Hv, V, dtype=q.dtype, device=q.device)
    final = torch.empty(len(cu) - 1, Hv, V, K, dtype=torch.float32, device=q.device)
    eye = torch.eye(BT, device=q.device)
    for n in range(len(cu) - 1):
        h = state[n].float().transpose(-1, -2).clone()                          # [Hv, K, V]
        for c0 in range(cu[n], cu[n + 1], BT):
            sl = slice(c0, min(cu[n + 1], c0 + BT))
            m = sl.stop - sl.start
            qc = q[sl].float().repeat_interleave(rep, 1).transpose(0, 1)         # [Hv, m, K]
            kc = k[sl].float().repeat_interleave(rep, 1).transpose(0, 1)
            vc = v[sl].float().transpose(0, 1)                                   # [Hv, m, V]
            bc = beta[sl].float().t()                                            # [Hv, m]
            gc = torch.cumsum(g[sl].float().t(), dim=-1)
            diff = gc[:, :, None] - gc[:, None, :]
            strict = torch.ones(m, m, dtype=torch.bool, device=q.device).tril(-1)
            incl = torch.ones(m, m, dtype=torch.bool, device=q.device).tril()
            A = torch.where(strict, (kc @ kc.transpose(1, 2)) * bc[..., None] * torch.exp(diff.masked_fill(~strict, 0)), 0.0)
            Tm = torch.linalg.solve_triangular(eye[:m, :m] + A, eye[:m, :m].expand(Hv, m, m),
                                               upper=False, unitriangular=True)
            w = Tm @ (kc * (bc * torch.exp(gc))[..., None])
            u = Tm @ (vc * bc[..., None])
            vn = u - w @ h
            s = torch.where(incl, (qc @ kc.transpose(1, 2)) * torch.exp(diff.masked_fill(~incl, 0)), 0.0)
            o[sl] = (((qc @ h) * torch.exp(gc)[..., None] + s @ vn) * scale).transpose(0, 1).to(q.dtype)
            gl = gc[:, -1]
            h = h * torch.exp(gl)[:, None, None] + kc.transpose(1, 2) @ (vn * torch.exp(gl[:, None] - gc)[..., None])
        final[n] = h.transpose(-1, -2)
    return o, final
