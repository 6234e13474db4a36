"""GPTQ int4-weight x 16-bit-activation GEMM (symmetric, zero point 8, group size 128).

    A:  [M, K]      activations (bfloat16 on the GPU, float16 under the CPU interpreter)
    Wq: [K / 8, N]  int32, GPTQ packing along K: bits 4i..4i+3 of Wq[j, n] hold the unsigned
                    4-bit code q[8 j + i, n] in 0..15 (i = 0 is the least significant nibble)
    S:  [K / 128, N] group scales, A's dtype
    W[k, n] = (q[k, n] - 8) * S[k // 128, n]          (Marlin's kU4B8 encoding)
    C = A @ W                                           [M, N], A's dtype

The reference materializes W in A's dtype (as the catalog formula does), multiplies with an fp32
accumulation and rounds C once.
"""
import torch

GROUP = 128
PACK = 8          # 4-bit codes per int32 word
ZERO = 8


def unpack_int4(Wq):
    """[K/8, N] int32 -> [K, N] int64 codes in 0..15 (row 8 j + i comes from nibble i of row j)."""
    shifts = torch.arange(PACK, device=Wq.device, dtype=torch.int64) * 4
    q = (Wq.to(torch.int64)[:, None, :] >> shifts[None, :, None]) & 0xF
    return q.reshape(Wq.shape[0] * PACK, Wq.shape[1])


def pack_int4(q):
    """[K, N] codes in 0..15 -> [K/8, N] int32, the inverse of unpack_int4."""
    K, N = q.shape
    q = q.to(torch.int64).reshape(K // PACK, PACK, N)
    shifts = torch.arange(PACK, device=q.device, dtype=torch.int64) * 4
    words = (q << shifts[None, :, None]).sum(dim=1)                 # < 2**32
    words = torch.where(words >= 2**31, words - 2**32, words)       # two's complement int32
    return words.to(torch.int32)


def reference(A, Wq, S):
    q = unpack_int4(Wq)
    W = ((q - ZERO).to(torch.float32) * S.float().repeat_interleave(GROUP, dim=0)).to(A.dtype)
    return A @ W


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """A ~ N(0, 1); codes uniform in 0..15; scales s0 * U(0.5, 1.5) per (group, column) with
    s0 = (21.5 K)**-0.5 (21.5 = E[(q - 8)^2]), so C ~ N(0, 1) for any K, while neighbouring
    groups' scales differ by up to 3x (a kernel that applies the wrong group's scale fails)."""
    M, N, K = axes["M"], axes["N"], axes["K"]
    if K % GROUP:
        raise ValueError(f"K={K} must be a multiple of {GROUP}")
    dtype = dtypes["dtype"]
    A = torch.randn((M, K), generator=generator, device=device, dtype=torch.float32).to(dtype)
    q = torch.randint(0, 16, (K, N), generator=generator, device=device, dtype=torch.int64)
    s0 = (21.5 * K) ** -0.5
    S = torch.rand((K // GROUP, N), generator=generator, device=device, dtype=torch.float32)
    S = ((S + 0.5) * s0).to(dtype)
    return {"A": A, "Wq": pack_int4(q), "S": S}
