"""Per-token-group (1x128) dynamic FP8 quantization, DeepSeek-V3 / DeepGEMM activation format.

For x: [T, K] (K = 128 * G) and every token t, group g:

    xf      = x[t, 128 g : 128 (g + 1)].float()
    s[t, g] = max(amax(|xf|), 1e-10) / 448
    q[t, 128 g + i] = clamp(xf[i] / s[t, g], -448, 448).to(float8_e4m3fn)

q is [T, K] float8_e4m3fn. The scales are returned in the layout their consumer reads: [T, G]
row-major when scale_col_major == 0; when it is 1, a [G, ceil(T / 4) * 4] buffer whose row g
holds the scales of group g for all tokens (column-major [T, G] with T padded to a multiple of
4 elements = 16 bytes, DeepGEMM's TMA-aligned SFA layout). The padding is not part of the result
(`canonicalize` drops it).
"""
import torch

GROUP = 128
FP8_MAX = 448.0


def reference(x, scale_col_major):
    T, K = x.shape
    G = K // GROUP
    g = x.float().view(T, G, GROUP)
    s = g.abs().amax(dim=-1).clamp(min=1e-10) / FP8_MAX                     # [T, G]
    q = (g / s[..., None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).view(T, K)
    if int(scale_col_major):
        t_pad = (T + 3) // 4 * 4
        buf = torch.zeros((G, t_pad), dtype=torch.float32, device=x.device)
        buf[:, :T] = s.t()
        return q, buf
    return q, s


def canonicalize(outputs: dict, inputs: dict) -> dict:
    """Drop the padding columns of a column-major scale buffer (their content is free)."""
    if int(inputs["scale_col_major"]):
        T = inputs["x"].shape[0]
        outputs = dict(outputs)
        outputs["s"] = outputs["s"][:, :T]
    return outputs


# Under the CPU interpreter the smoke x is built so that no fp8 rounding happens (make_inputs):
# swapping its elements between 128-wide groups (the harness's perturbation of timed inputs) would
# undo that, so there x stays as built. On the GPU it is perturbed like every input.
INTERPRETER_FIXED_INPUTS = {"x"}


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """x = randn scaled per row by exp(N(0, 1)) (token magnitudes spread over ~two decades, as
    real activations do), with channel outliers (1 in 512 elements x20) so a group's max is
    often set by one element, and the first group of the last row all zero (the 1e-10 clamp).

    params.exact_fp8 = 1 (smoke workloads only): every group is e4m3 values times
    c * 2^k (per row: c in {1.25, 1.5, 1.75}, k in [-6, 6]; at most 7 significant bits, exact
    in bf16 and fp16) with one element of magnitude exactly 448 * c * 2^k, so s = c * 2^k
    exactly and x / s is an e4m3 value: no fp8 rounding happens. (x * fl(1 / s) lands on or
    just above that value, since fl(1 / c) > 1 / c for these c, so a reciprocal multiply needs
    no rounding carry either.) The CPU interpreter's fp32 -> fp8 cast rounds 2-4 % of inexact
    values wrongly; with exact values the smoke check stays as strict as the GPU's, and since
    c is not a power of two a power-of-two (UE8M0) scale still fails."""
    T, K = axes["T"], axes["K"]
    if K % GROUP:
        raise ValueError(f"K={K} is not a multiple of {GROUP}")
    G = K // GROUP
    if int(params.get("exact_fp8", 0)):
        q = torch.randn((T, G, GROUP), generator=generator, device=device, dtype=torch.float32)
        q = q.mul_(100.0).clamp_(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).float()
        where = torch.randint(0, GROUP, (T, G, 1), generator=generator, device=device)
        sign = torch.randint(0, 2, (T, G, 1), generator=generator, device=device).float() * 2 - 1
        q.scatter_(2, where, sign * FP8_MAX)
        k = torch.randint(-6, 7, (T, 1, 1), generator=generator, device=device).float()
        c = torch.tensor([1.25, 1.5, 1.75], device=device)[
            torch.randint(0, 3, (T, 1, 1), generator=generator, device=device)]
        x = (q * (c * torch.exp2(k))).view(T, K)
    else:
        x = torch.randn((T, K), generator=generator, device=device, dtype=torch.float32)
        row = torch.randn((T, 1), generator=generator, device=device, dtype=torch.float32).exp_()
        outlier = torch.rand((T, K), generator=generator, device=device, dtype=torch.float32) < 1 / 512
        x = torch.where(outlier, x * 20.0, x) * row
    x[-1, :GROUP] = 0.0
    return {"x": x.to(dtypes["dtype"])}
