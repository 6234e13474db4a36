"""RMSNorm forward with HF-Llama casting.

    xf      = x.float()
    rstd[t] = rsqrt( mean_h(xf[t, h]^2) + eps )
    y[t, h] = (xf[t, h] * rstd[t]).to(x.dtype) * w[h]        x, y: [T, H], w: [H]

x, w and y share one dtype (bfloat16 on the GPU, float16 under the CPU interpreter). The
statistics are computed in fp32; the normalized row is rounded to x's dtype before the
multiply by w, whose product is rounded to that dtype again (as `LlamaRMSNorm` does).
"""
import torch


def reference(x, w, eps):
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * rstd).to(x.dtype) * w


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """w = 1 + 0.1 * randn, like a trained norm weight (near one, not all ones); x comes from `init`."""
    H = axes["H"]
    w = torch.randn((H,), generator=generator, device=device, dtype=torch.float32)
    w = w.mul_(0.1).add_(1.0).to(dtypes["dtype"])
    return {"w": w}
