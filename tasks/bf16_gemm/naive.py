"""Naive Triton GEMM for a dense linear layer: C = A @ B^T.

    C[m, n] = sum_k A[m, k] * B[n, k]     A: [M, K], B: [N, K], C: [M, N]

One program per 64x64 output tile in plain row-major tile order, a masked K loop of tl.dot
with an fp32 accumulator, one fixed config: no grouping, persistence, TMA, split-K or autotune.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _gemm_naive_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm,
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
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :],
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rn[:, None] * stride_bn + kk[None, :],
                    mask=(rn[:, None] < N) & (kk[None, :] < K), other=0.0)
        acc = tl.dot(a, tl.trans(b), acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def run(A, B):
    A = A.contiguous()
    B = B.contiguous()
    M, K = A.shape
    N = B.shape[0]
    C = torch.empty((M, N), dtype=A.dtype, device=A.device)
    BM, BN, BK = 64, 64, 32
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    _gemm_naive_kernel[grid](A, B, C, M, N, K, A.stride(0), B.stride(0), C.stride(0),
                             BM=BM, BN=BN, BK=BK, num_warps=4)
    return C
