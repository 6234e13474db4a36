"""Naive fused MoE experts: one plain Triton GEMM per active expert, driven from the host.

    for every token t and slot j < K, with e = topk_ids[t, j]:
        h = silu(x[t] @ w1[e, :I].T) * (x[t] @ w1[e, I:].T)
        y[t] += topk_weights[t, j] * (h @ w2[e].T)

The host groups the pairs by expert (argsort, and one copy of the per-expert counts to the
host), then for every expert that received pairs: gathers its tokens' rows of x with
index_select, runs a tiled Triton GEMM (32x128x64 tiles, fp32 accumulator) for gate/up,
a Triton elementwise kernel for silu(gate) * up, the same GEMM for the down projection,
and writes the weighted rows into an fp32 [T*K, H] buffer that torch sums over K. Correct,
with fp32 accumulation everywhere, but it launches several kernels per expert, round-trips
the 2I-wide intermediate through memory and synchronises with the host.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _matmul_nt_kernel(A, B, C, M, N, K, stride_am, stride_bn, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C[m, n] = sum_k A[m, k] * B[n, k] (fp32 accumulation, stored in C's dtype)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(A + rm[:, None] * stride_am + kk[None, :],
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(B + rn[:, None] * stride_bn + kk[None, :],
                    mask=(rn[:, None] < N) & (kk[None, :] < K), other=0.0)
        acc = tl.dot(a, tl.trans(b), acc)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _silu_mul_kernel(GU, Hout, n_rows, I, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Hout[r, c] = silu(GU[r, c]) * GU[r, I + c], computed in fp32."""
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    m = (r[:, None] < n_rows) & (c[None, :] < I)
    g = tl.load(GU + r[:, None] * 2 * I + c[None, :], mask=m, other=0.0).to(tl.float32)
    u = tl.load(GU + r[:, None] * 2 * I + I + c[None, :], mask=m, other=0.0).to(tl.float32)
    h = g * tl.sigmoid(g) * u
    tl.store(Hout + r[:, None] * I + c[None, :], h.to(Hout.dtype.element_ty), mask=m)


def _matmul_nt(a, b):
    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 128))
    _matmul_nt_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                            BLOCK_M=32, BLOCK_N=128, BLOCK_K=64, num_warps=4)
    return c


def run(x, w1, w2, topk_weights, topk_ids):
    T, H = x.shape
    E, two_i, _ = w1.shape
    I = two_i // 2
    K = topk_ids.shape[1]
    x = x.contiguous()
    flat = topk_ids.reshape(-1).long()
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=E).tolist()
    wts = topk_weights.reshape(-1).float()[order]
    terms = torch.empty((T * K, H), dtype=torch.float32, device=x.device)   # one row per pair
    start = 0
    for e, n in enumerate(counts):
        if n == 0:
            continue
        pairs = order[start:start + n]
        w_e = wts[start:start + n]
        start += n
        xs = x.index_select(0, pairs // K)
        gu = _matmul_nt(xs, w1[e])                         # [n, 2I]
        h = torch.empty((n, I), dtype=x.dtype, device=x.device)
        _silu_mul_kernel[(triton.cdiv(n, 16), triton.cdiv(I, 128))](gu, h, n, I, BLOCK_R=16,
                                                                    BLOCK_C=128, num_warps=4)
        o = _matmul_nt(h, w2[e])                           # [n, H]
        terms[pairs] = o.float() * w_e[:, None]
    return terms.view(T, K, H).sum(dim=1).to(x.dtype)
