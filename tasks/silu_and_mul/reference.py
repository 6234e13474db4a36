"""SwiGLU activation: SiLU of the gate half times the up half.

    gate = x[:, :I],  up = x[:, I:2I]                       x: [T, 2I]
    out[t, i] = to_dtype( silu(float(gate[t, i])) * float(up[t, i]) ),  silu(a) = a * sigmoid(a)

computed in fp32 and rounded once to x's dtype (bfloat16 on the GPU, float16 under the CPU
interpreter). This is vLLM's / FlashInfer's `silu_and_mul` on the output of a fused gate-up
projection.
"""
import torch
import torch.nn.functional as F


def reference(x):
    d = x.shape[-1] // 2
    return (F.silu(x[..., :d].float()) * x[..., d:].float()).to(x.dtype)
