"""Depthwise causal conv1d + bias + SiLU with conv states (causal_conv1d_fn, activation="silu").

x: [B, D, L], weight: [D, W], bias: [D], initial_states: [B, D, W - 1] (one dtype, e.g.
bfloat16). With xc = concat(initial_states, x, dim=-1) upcast to fp32 (length W - 1 + L):

    z[b, d, t]            = bias[d] + sum_{i < W} weight[d, i] * xc[b, d, t + i]     t in [0, L)
    y[b, d, t]            = (z * sigmoid(z)).to(x.dtype)                                 (SiLU)
    final_states[b, d, :] = xc[b, d, L:]          (the last W - 1 inputs, copied exactly)

This is the definition, tap by tap in fp32 (the same as F.silu(F.conv1d(xc, weight[:, None],
bias, groups=D))); every operand is upcast and y is rounded once.
"""
import torch


def reference(x, weight, bias, initial_states):
    L = x.shape[-1]
    W = weight.shape[-1]
    xc = torch.cat([initial_states, x], dim=-1).float()          # [B, D, W - 1 + L]
    wf = weight.float()
    z = bias.float()[None, :, None].expand(x.shape).contiguous()  # fp32 accumulator
    for i in range(W):
        z.addcmul_(wf[None, :, i, None], xc[..., i:i + L])       # weight[d, i] * xc[t + i]
    y = (z * torch.sigmoid(z)).to(x.dtype)
    final_states = xc[..., L:].to(x.dtype).contiguous()
    return y, final_states
