"""Depthwise causal conv1d + bias + SiLU with conv states, plain Triton implementation.

For x: [B, D, L], weight: [D, W], bias: [D], initial_states: [B, D, W - 1]:

    xc                    = concat(initial_states, x)            (a padded copy made in torch)
    y[b, d, t]            = silu( bias[d] + sum_i weight[d, i] * xc[b, d, t + i] )   (fp32)
    final_states[b, d, :] = xc[b, d, L:]                          (a torch slice copy)

One program per (row = (b, d), block of 1024 time steps), 4 warps; the W taps are W loads of
the padded row at shifted offsets.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _conv_naive_kernel(XC, Wt, Bias, Y, L, LC, D, W: tl.constexpr, BLOCK: tl.constexpr):
    """Row (b, d) of the padded input xc (length LC = L + W - 1), time block pid_1:
    y[row, t] = silu(bias[d] + sum_i w[d, i] * xc[row, t + i])."""
    row = tl.program_id(0)
    d = row % D
    t = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = t < L
    acc = tl.zeros([BLOCK], dtype=tl.float32) + tl.load(Bias + d).to(tl.float32)
    for i in range(W):
        w = tl.load(Wt + d * W + i).to(tl.float32)
        xv = tl.load(XC + row * LC + t + i, mask=mask, other=0.0).to(tl.float32)
        acc += w * xv
    y = acc / (1.0 + tl.exp(-acc))
    tl.store(Y + row * L + t, y.to(Y.dtype.element_ty), mask=mask)


def run(x, weight, bias, initial_states):
    B, D, L = x.shape
    W = weight.shape[-1]
    xc = torch.cat([initial_states, x], dim=-1).contiguous()    # [B, D, L + W - 1]
    y = torch.empty((B, D, L), dtype=x.dtype, device=x.device)
    BLOCK = 1024
    grid = (B * D, triton.cdiv(L, BLOCK))
    _conv_naive_kernel[grid](xc, weight.contiguous(), bias.contiguous(), y, L, L + W - 1, D,
                             W=W, BLOCK=BLOCK, num_warps=4)
    final_states = xc[..., L:].contiguous()
    return y, final_states
