"""Dense linear layer C = A @ B^T.

    C[m, n] = sum_k A[m, k] * B[n, k]      A: [M, K], B: [N, K], C: [M, N]

All three tensors share one dtype (bfloat16 on the GPU, float16 under the CPU interpreter);
the sum is accumulated in fp32 and rounded to that dtype once.
"""
import torch


def reference(A, B):
    return A @ B.T


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """A and B are randn scaled by K**-0.25 each, so C[m, n] ~ N(0, 1) for any K."""
    M, N, K = axes["M"], axes["N"], axes["K"]
    dtype = dtypes["dtype"]
    scale = float(K) ** -0.25
    A = torch.randn((M, K), generator=generator, device=device, dtype=torch.float32)
    A = A.mul_(scale).to(dtype)
    B = torch.randn((N, K), generator=generator, device=device, dtype=torch.float32)
    B = B.mul_(scale).to(dtype)
    return {"A": A, "B": B}
