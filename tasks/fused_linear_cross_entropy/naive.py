"""Fused linear + cross-entropy (LM head, mean CE loss, dx and dW), plain Triton implementation.

Computes, for x: [BT, H], W: [V, H] and targets y: [BT]:

    z    = x @ W^T                                   (full [BT, V] logits, fp32)
    loss = mean_t(logsumexp(z[t]) - z[t, y[t]])
    g    = (softmax(z[t]) - onehot(y[t])) / BT        ([BT, V], in x's dtype)
    dx   = g @ W,   dW = g^T @ x

Unfused: one simple 64x64-tile GEMM kernel (strides select the transposes) materialises the
whole fp32 logits matrix, a row kernel makes three passes per row (max, sum of exp, gradient)
and writes g to a second full-size buffer, two more GEMM launches give dx and dW, and a last
kernel averages the row losses. No chunking, no fused epilogue, no autotuning, no TMA.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _gemm_naive_kernel(A, B, C, M, N, K, sam, sak, sbk, sbn, scm,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BN)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(A + rm[:, None] * sam + kk[None, :] * sak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(B + kk[:, None] * sbk + rn[None, :] * sbn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * scm + rn[None, :], acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _ce_naive_kernel(Z, G, Y, LOSS, V, inv_bt, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    zrow = Z + row.to(tl.int64) * V
    grow = G + row.to(tl.int64) * V
    tgt = tl.load(Y + row)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for c0 in range(0, V, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(zrow + cols, mask=cols < V, other=float("-inf")))
    mx = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    zt = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, V, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        z = tl.load(zrow + cols, mask=cols < V, other=float("-inf"))
        s += tl.exp(z - mx)
        zt += tl.where(cols == tgt, z, 0.0)
    lse = mx + tl.log(tl.sum(s, axis=0))
    tl.store(LOSS + row, lse - tl.sum(zt, axis=0))
    for c0 in range(0, V, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        z = tl.load(zrow + cols, mask=cols < V, other=0.0)
        p = tl.exp(z - lse)
        g = tl.where(cols == tgt, p - 1.0, p) * inv_bt
        tl.store(grow + cols, g.to(G.dtype.element_ty), mask=cols < V)


@triton.jit
def _mean_naive_kernel(LOSS, OUT, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i0 in range(0, n, BLOCK):
        i = i0 + tl.arange(0, BLOCK)
        acc += tl.load(LOSS + i, mask=i < n, other=0.0)
    tl.store(OUT, tl.sum(acc, axis=0) / n)


def _mm(A, B, C, M, N, K, sam, sak, sbk, sbn, scm):
    BM, BN, BK = 64, 64, 32
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    _gemm_naive_kernel[grid](A, B, C, M, N, K, sam, sak, sbk, sbn, scm, BM=BM, BN=BN, BK=BK,
                             num_warps=4)


def run(x, W, y):
    x = x.contiguous()
    W = W.contiguous()
    y = y.contiguous()
    BT, H = x.shape
    V = W.shape[0]
    dev = x.device
    z = torch.empty((BT, V), dtype=torch.float32, device=dev)
    g = torch.empty((BT, V), dtype=x.dtype, device=dev)
    row_loss = torch.empty((BT,), dtype=torch.float32, device=dev)
    loss = torch.empty((), dtype=torch.float32, device=dev)
    dx = torch.empty_like(x)
    dW = torch.empty_like(W)
    _mm(x, W, z, BT, V, H, H, 1, 1, H, V)            # z = x @ W^T   (B[k, n] = W[n, k])
    _ce_naive_kernel[(BT,)](z, g, y, row_loss, V, 1.0 / BT, BLOCK=1024, num_warps=4)
    _mm(g, W, dx, BT, H, V, V, 1, H, 1, H)           # dx = g @ W
    _mm(g, x, dW, V, H, BT, 1, V, H, 1, H)           # dW = g^T @ x  (A[m, k] = g[k, m])
    _mean_naive_kernel[(1,)](row_loss, loss, BT, BLOCK=1024)
    return loss, dx, dW
