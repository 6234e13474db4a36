"""Naive Triton GPTQ int4 x 16-bit GEMM.

    W[k, n] = (q[k, n] - 8) * S[k // 128, n],  q[8j + i, n] = nibble i of Wq[j, n]
    C = A @ W

One program per 32 x 64 output tile in row-major tile order. Each K step of 32 gathers, for
every row k of the weight tile, its packed word Wq[k // 8, n] and shifts out nibble k % 8,
subtracts the zero point, multiplies by the scale of its group, casts to A's dtype and
accumulates a tl.dot in fp32. One fixed config; no split-K, no autotuning.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _w4a16_naive_kernel(a_ptr, wq_ptr, s_ptr, c_ptr, M, N, K,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    cty = a_ptr.dtype.element_ty
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
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        wmask = (kk[:, None] < K) & (rn[None, :] < N)
        words = tl.load(wq_ptr + (kk // 8)[:, None] * N + rn[None, :], mask=wmask, other=0)
        q = (words >> ((kk % 8) * 4)[:, None]) & 0xF
        s = tl.load(s_ptr + (kk // 128)[:, None] * N + rn[None, :], mask=wmask, other=0.0)
        w = ((q - 8).to(tl.float32) * s.to(tl.float32)).to(cty)
        acc = tl.dot(a, w, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def run(A, Wq, S):
    A, Wq, S = A.contiguous(), Wq.contiguous(), S.contiguous()
    M, K = A.shape
    N = Wq.shape[1]
    C = torch.empty((M, N), dtype=A.dtype, device=A.device)
    BM, BN, BK = 32, 64, 32
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    _w4a16_naive_kernel[grid](A, Wq, S, C, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=4)
    return C
