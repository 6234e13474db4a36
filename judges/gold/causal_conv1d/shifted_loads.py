"""Depthwise causal conv1d (width 4) + bias + SiLU with conv states: the expert Triton
implementation, register FIR ablated.

Gold-set ablation `shifted_loads`: identical to tasks/causal_conv1d/expert.py except that the
4 operands of each output are 4 loads of the [BD, BL] tile at time offsets t - 3 + i (one per
tap, the history of the sequence's first steps from initial_states), instead of one aligned
load per 8-step group split into columns in registers: every input is loaded 4 times (the
extra loads are L1/L2 hits).

For x: [B, D, L], weight: [D, 4], bias: [D], initial_states: [B, D, 3] and
xc = concat(initial_states, x) along time:

    y[b, d, t]            = silu( bias[d] + sum_{i<4} weight[d, i] * xc[b, d, t + i] )   (fp32, rounded once)
    final_states[b, d, :] = x[b, d, L-3:]

Design (a memory-bound stream: one read of x, one write of y):
  * a program owns a [BD channels x BL time steps] tile of one sequence and walks CPP such
    tiles along time; the 4 taps and the bias of its BD channels are loaded and upcast to fp32
    once, before the walk, and reused for every tile;
  * the time offsets of the tile are contiguous and aligned (multiple_of / max_contiguous
    hints, row strides multiples of 16), so the unshifted load and the store of y are 16-byte
    vectors;
  * tap i of every output of the tile is a load of the tile shifted by i - 3 time steps (the
    tap loop is unrolled); the unshifted load (tap 3) is the aligned one;
  * the history of the first tile of a sequence comes from initial_states inside the kernel
    (no concatenated copy of x), and the program whose tile holds the last 3 inputs writes
    final_states straight from its registers;
  * fp32 accumulation, bias and SiLU (z * sigmoid(z)) fused before the single rounding to the
    output dtype;
  * 4 warps per [8 x 512] tile: 32 elements (four 16-byte vectors) per thread.
Dtypes come from the pointers, so the same code runs bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

BLOCK_D = 8          # channels per tile
BLOCK_L = 512        # time steps per tile
NUM_WARPS = 4


@triton.jit
def _causal_conv1d_fwd_kernel(
    X, Wt, Bias, Init, Y, Final,
    D, L, n_dblk, n_lblk,
    stride_xb, stride_xd,            # x and y share strides (both contiguous [B, D, L])
    stride_wd,
    stride_sb, stride_sd,            # initial_states and final_states share strides
    BD: tl.constexpr, BL: tl.constexpr, CPP: tl.constexpr,
):
    """Program (b * n_dblk + d-block, time-chunk): y and, for the last chunk, final_states of
    channels [d0, d0 + BD) of sequence b over tiles [c * BL, c * BL + BL) for its CPP tiles c."""
    out_ty = Y.dtype.element_ty
    pid = tl.program_id(0)
    pid_l = tl.program_id(1)
    b = pid // n_dblk
    d = (pid % n_dblk) * BD + tl.arange(0, BD)
    dmask = d < D

    # the 4 taps and the bias of these channels: loaded and upcast once per program
    w_row = Wt + d * stride_wd
    w0 = tl.load(w_row + 0, mask=dmask, other=0.0).to(tl.float32)[:, None]
    w1 = tl.load(w_row + 1, mask=dmask, other=0.0).to(tl.float32)[:, None]
    w2 = tl.load(w_row + 2, mask=dmask, other=0.0).to(tl.float32)[:, None]
    w3 = tl.load(w_row + 3, mask=dmask, other=0.0).to(tl.float32)[:, None]
    bias = tl.load(Bias + d, mask=dmask, other=0.0).to(tl.float32)[:, None]

    # row bases (int64: B * D * L may exceed 2^31), the [1, BL] time offsets
    row = b.to(tl.int64) * stride_xb + d.to(tl.int64) * stride_xd           # [BD]
    srow = b.to(tl.int64) * stride_sb + d.to(tl.int64) * stride_sd          # [BD]
    t_in = tl.max_contiguous(tl.multiple_of(tl.arange(0, BL), BL), BL)[None, :]   # [1, BL]
    dm2 = dmask[:, None]
    x_row = X + row[:, None]
    y_row = Y + row[:, None]

    for c in range(0, CPP):
        blk = pid_l * CPP + c
        if blk < n_lblk:
            l0 = blk * BL
            t = l0 + t_in                                                   # [1, BL]
            m = dm2 & (t < L)
            z = tl.zeros([BD, BL], dtype=tl.float32) + bias
            for i in tl.static_range(4):
                ts = t + (i - 3)                                            # tap i reads x[t - 3 + i]
                xs = tl.load(x_row + ts, mask=m & (ts >= 0), other=0.0).to(tl.float32)
                if l0 == 0:
                    if i < 3:
                        # steps before the chunk come from the carried conv state
                        xs += tl.load(Init + srow[:, None] + (ts + 3), mask=m & (ts < 0),
                                      other=0.0).to(tl.float32)
                if i == 0:
                    z += w0 * xs
                elif i == 1:
                    z += w1 * xs
                elif i == 2:
                    z += w2 * xs
                else:
                    z += w3 * xs
                    if l0 + BL > L - 3:
                        # this tile holds (some of) the last 3 inputs: the final conv state
                        tl.store(Final + srow[:, None] + (t - (L - 3)), xs.to(Final.dtype.element_ty),
                                 mask=m & (t >= L - 3))
            yv = z * tl.sigmoid(z)
            tl.store(y_row + t, yv.to(out_ty), mask=m)


_n_sm = {}


def _sm_count(t):
    if _INTERPRET or not t.is_cuda:
        return 4
    dev = t.device.index
    n = _n_sm.get(dev)
    if n is None:
        n = _n_sm[dev] = torch.cuda.get_device_properties(t.device).multi_processor_count
    return n


def run(x, weight, bias, initial_states):
    B, D, L = x.shape
    W = weight.shape[-1]
    assert W == 4, "this kernel is specialised for width 4"
    assert L >= W - 1, "L must be at least W - 1"
    x = x.contiguous()
    weight = weight.contiguous()
    bias = bias.contiguous()
    initial_states = initial_states.contiguous()
    y = torch.empty_like(x)
    final_states = torch.empty_like(initial_states)
    n_dblk = triton.cdiv(D, BLOCK_D)
    n_lblk = triton.cdiv(L, BLOCK_L)
    # tiles per program: enough programs to fill every SM many times over (short programs keep
    # the last wave small), up to 4 tiles so the taps are reused across tiles
    n_tiles = B * n_dblk * n_lblk
    cpp = max(1, min(4, n_lblk, n_tiles // (_sm_count(x) * 64)))
    grid = (B * n_dblk, triton.cdiv(n_lblk, cpp))
    _causal_conv1d_fwd_kernel[grid](
        x, weight, bias, initial_states, y, final_states,
        D, L, n_dblk, n_lblk,
        x.stride(0), x.stride(1), weight.stride(0),
        initial_states.stride(0), initial_states.stride(1),
        BD=BLOCK_D, BL=BLOCK_L, CPP=cpp, num_warps=NUM_WARPS,
    )
    return y, final_states
