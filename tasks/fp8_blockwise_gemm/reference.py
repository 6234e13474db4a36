"""DeepSeek-style FP8 GEMM with fine-grained (block-wise) scales: C = (A * As) @ (B * Bs)^T.

    A:  [M, K] float8_e4m3fn, As: [M, K/128] float32   (one scale per row and 128-wide K group)
    B:  [N, K] float8_e4m3fn, Bs: [ceil(N/128), K/128] float32   (one scale per 128x128 block)
    C[m, n] = sum_k  A[m, k] * As[m, k // 128]  *  B[n, k] * Bs[n // 128, k // 128]

K is a multiple of 128; M and N are arbitrary. The scales are dequantization factors (a stored
fp8 value times its scale is the real value). The op writes C: [M, N] in place (an `out`
tensor, bfloat16 on the GPU and float16 under the CPU interpreter, whose prior contents are
garbage); here the sum is taken in fp32 (no TF32) and rounded once to C's dtype.
"""
import torch

GROUP = 128
FP8_MAX = 448.0


def reference(A, As, B, Bs, C):
    K = A.shape[1]
    N = B.shape[0]
    a = A.float() * As.repeat_interleave(GROUP, dim=1)[:, :K]
    b_scale = Bs.repeat_interleave(GROUP, dim=0)[:N].repeat_interleave(GROUP, dim=1)[:, :K]
    b = B.float() * b_scale
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # a true fp32 product
    try:
        c = a @ b.T
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    C.copy_(c)
    return None


def _lognormal(shape, generator, device):
    """exp(0.5 z - 0.25), z ~ N(0, 1): positive factors with E[f^2] = 1 (outlier-ish spread)."""
    z = torch.randn(shape, generator=generator, device=device, dtype=torch.float32)
    return torch.exp(0.5 * z - 0.25)


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """Quantize random real-valued operands the way DeepSeek-V3 inference does.

    A_real = randn(M, K) * K**-0.25 * f_a[m, k // 128] and B_real = randn(N, K) * K**-0.25 *
    f_b[n // 128, k // 128], with f log-normal (E[f^2] = 1) so that neighbouring groups have
    scales that differ by tens of percent (a kernel that applies the wrong group's scale fails)
    while C stays of order 1 for any K. Each 1x128 group of A and each 128x128 block of B is
    scaled by amax / 448 and cast to e4m3 with torch (round to nearest even): the kernel gets
    fp8 values and fp32 scales and never has to cast anything to fp8, so the CPU interpreter's
    faulty fp32 -> fp8 conversion cannot touch the smoke check.
    """
    M, N, K = axes["M"], axes["N"], axes["K"]
    if K % GROUP:
        raise ValueError(f"K={K} must be a multiple of {GROUP}")
    kb = K // GROUP
    nb = -(-N // GROUP)
    scale = float(K) ** -0.25

    a = torch.randn((M, K), generator=generator, device=device, dtype=torch.float32) * scale
    a = a * _lognormal((M, kb), generator, device).repeat_interleave(GROUP, dim=1)
    ag = a.view(M, kb, GROUP)
    As = ag.abs().amax(dim=2).clamp_min(1e-12) / FP8_MAX                  # [M, kb]
    Aq = (ag / As[:, :, None]).clamp(-FP8_MAX, FP8_MAX).view(M, K).to(torch.float8_e4m3fn)

    b = torch.randn((N, K), generator=generator, device=device, dtype=torch.float32) * scale
    fb = _lognormal((nb, kb), generator, device)
    b = b * fb.repeat_interleave(GROUP, dim=0)[:N].repeat_interleave(GROUP, dim=1)
    pad = nb * GROUP - N
    bp = torch.cat([b, b.new_zeros((pad, K))]) if pad else b
    bg = bp.view(nb, GROUP, kb, GROUP)
    Bs = bg.abs().amax(dim=(1, 3)).clamp_min(1e-12) / FP8_MAX             # [nb, kb]
    Bq = (bg / Bs[:, None, :, None]).clamp(-FP8_MAX, FP8_MAX).view(nb * GROUP, K)[:N]
    Bq = Bq.contiguous().to(torch.float8_e4m3fn)
    return {"A": Aq, "As": As.contiguous(), "B": Bq, "Bs": Bs.contiguous()}
