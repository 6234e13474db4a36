"""Naive Triton FP8 block-scaled GEMM.

    C[m, n] = sum_k (A[m, k] * As[m, k // 128]) * (B[n, k] * Bs[n // 128, k // 128])

One program per 64x64 output tile in row-major tile order. Each K step of 64 loads the e4m3
tiles with masked pointer loads, dequantizes them to fp32 with their group scales, rounds them
to C's dtype and accumulates a tl.dot into an fp32 accumulator. One fixed config, no
persistence, TMA, split-K or autotuning; written to be obviously correct.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _fp8_gemm_naive_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, M, N, K,
                           stride_as, stride_bs, stride_cm,
                           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    out_ty = c_ptr.dtype.element_ty
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
        g = k0 // 128
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rn[:, None] * K + kk[None, :], mask=(rn[:, None] < N) & (kk[None, :] < K), other=0.0)
        a_s = tl.load(as_ptr + rm * stride_as + g, mask=rm < M, other=0.0)
        b_s = tl.load(bs_ptr + (rn // 128) * stride_bs + g, mask=rn < N, other=0.0)
        a_deq = (a.to(tl.float32) * a_s[:, None]).to(out_ty)
        b_deq = (b.to(tl.float32) * b_s[:, None]).to(out_ty)
        acc = tl.dot(a_deq, tl.trans(b_deq), acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(out_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def run(A, As, B, Bs, C):
    A, As, B, Bs = A.contiguous(), As.contiguous(), B.contiguous(), Bs.contiguous()
    M, K = A.shape
    N = B.shape[0]
    out = C if C.is_contiguous() else torch.empty_like(C, memory_format=torch.contiguous_format)
    BM, BN, BK = 64, 64, 64
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    _fp8_gemm_naive_kernel[grid](A, As, B, Bs, out, M, N, K, As.stride(0), Bs.stride(0), out.stride(0),
                                 BM=BM, BN=BN, BK=BK, num_warps=4)
    if out is not C:
        C.copy_(out)
    return None
