"""Fused residual add + RMSNorm, in place (vLLM / FlashInfer `fused_add_rms_norm` semantics).

    r[t, h]        = float(x[t, h]) + float(residual[t, h])                (fp32)
    residual[t, h] <- r[t, h].to(dtype)
    rstd[t]        = rsqrt( mean_h(r[t, h]^2) + eps )                      (from the fp32 r)
    x[t, h]        <- (r[t, h] * rstd[t]).to(dtype) * w[h]                 (HF-Llama casting)

x, residual: [T, H]; w: [H]; all one dtype (bfloat16 on the GPU, float16 under the CPU
interpreter). Nothing is returned: the op overwrites residual with the rounded sum and x with
the normalized output. This is vLLM's `RMSNorm.forward_native` with a residual: the statistics
come from the unrounded fp32 sum, the normalized row is rounded to dtype before the multiply by
w, and that product is rounded to dtype again.
"""
import torch


def reference(x, residual, w, eps):
    r = x.float() + residual.float()
    residual.copy_(r.to(residual.dtype))
    rstd = torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + eps)
    x.copy_((r * rstd).to(x.dtype) * w)
    return None


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """w = 1 + 0.1 * randn, like a trained norm weight; x and residual come from `init` (randn)."""
    H = axes["H"]
    w = torch.randn((H,), generator=generator, device=device, dtype=torch.float32)
    w = w.mul_(0.1).add_(1.0).to(dtypes["dtype"])
    return {"w": w}
