"""Per-token-group (1x128) dynamic FP8 quantization: the expert Triton implementation, the
multi-group tile ablated.

Gold-set ablation `one_group_per_program`: identical to tasks/per_token_group_fp8_quant/expert.py
except that each program handles a single 128-element group: the grid has T * G programs of
one warp, each loading one 1-D group, instead of [BT tokens, BG groups, 128] tiles sized to the
SM count.

For x: [T, K] (K = 128 * G, bfloat16 on the GPU) computes, per token t and group g,

    s[t, g] = max(max_i |x[t, 128 g + i]|, 1e-10) / 448                 (fp32)
    q[t, 128 g + i] = clamp(x[t, 128 g + i] * (1 / s[t, g]), -448, 448) -> float8_e4m3fn

and writes s straight into the consumer's layout: [T, G] row-major, or (scale_col_major = 1)
the [G, ceil(T/4)*4] column-major, TMA-aligned buffer DeepGEMM reads.

Design (memory-bound: one read of x, one write of q, scales are 1/64 of the bytes):
  * one pass: a program loads its group once, upcasts to fp32 in registers, reduces the
    absolute max, and quantizes from the same registers;
  * one division per group (s and its reciprocal), then a multiply per element;
  * one group per program: program pid handles token pid // G, group pid % G (T * G programs,
    one warp each);
  * scales are stored through a (token stride, group stride) pair, so the column-major
    layout costs nothing extra: no transpose kernel;
  * contiguous, 16-byte-aligned columns (128-element groups) give 16-byte loads of x and
    8- to 16-byte fp8 stores per thread; x is streamed with evict_first;
  * on sm_90+ the kernel is launched with programmatic dependent launch (wait before the first
    load of x), which matters for the latency-bound decode shape;
  * an optional fused producer: `silu_and_mul_group_quant(gate_up)` runs the same kernel with
    x = silu(gate) * up computed in registers (SwiGLU output never written to HBM).
Dtypes come from the pointers, so the kernel runs bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
GROUP = 128
FP8_MAX = tl.constexpr(448.0)   # a constexpr global: usable inside @triton.jit


@triton.jit
def _group_quant_kernel(
    X, Q, S,
    G,
    stride_xt, stride_qt,        # row strides of x (or of gate_up) and q, in elements
    stride_st, stride_sg,        # scale strides: (G, 1) row-major, (1, T_pad) column-major
    up_offset,                   # FUSE_SILU: column offset of `up` inside a gate_up row
    GROUP_SIZE: tl.constexpr,
    FUSE_SILU: tl.constexpr,     # x = silu(gate) * up, rounded to the input dtype
    USE_PDL: tl.constexpr,
):
    """Group pid = t * G + g: s = max(amax|x|, 1e-10) / 448 stored at
    t * stride_st + g * stride_sg, and q = clamp(x * (1 / s), +-448) -> fp8 stored row-major."""
    in_dtype = X.dtype.element_ty
    pid = tl.program_id(0)
    t = pid // G
    g = pid % G
    c = tl.max_contiguous(tl.multiple_of(tl.arange(0, GROUP_SIZE), GROUP_SIZE), GROUP_SIZE)
    t64 = t.to(tl.int64)                                   # T * K can exceed 2^31
    col = g * GROUP_SIZE + c                               # [128]
    x_offs = t64 * stride_xt + col

    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    if FUSE_SILU:
        gate = tl.load(X + x_offs, eviction_policy="evict_first").to(tl.float32)
        up = tl.load(X + x_offs + up_offset, eviction_policy="evict_first").to(tl.float32)
        x = (gate * tl.sigmoid(gate)).to(in_dtype).to(tl.float32) * up
        x = x.to(in_dtype).to(tl.float32)
    else:
        x = tl.load(X + x_offs, eviction_policy="evict_first").to(tl.float32)
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()

    amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-10)   # scalar
    s = amax / FP8_MAX
    inv = 1.0 / s                                          # one division per group
    q = tl.clamp(x * inv, -FP8_MAX, FP8_MAX)
    tl.store(Q + t64 * stride_qt + col, q.to(Q.dtype.element_ty))
    tl.store(S + t64 * stride_st + g.to(tl.int64) * stride_sg, s)


_pdl_ok = {}


def _launch(x_like, up_offset, fuse, T, K, col_major, q, s):
    G = K // GROUP
    grid = (T * G,)
    if col_major:
        st, sg = 1, s.stride(0)
    else:
        st, sg = s.stride(0), 1
    args = (x_like, q, s, G, x_like.stride(0), q.stride(0), st, sg, up_offset)
    kw = dict(GROUP_SIZE=GROUP, FUSE_SILU=fuse, num_warps=1)
    if _INTERPRET or not q.is_cuda:
        _group_quant_kernel[grid](*args, USE_PDL=False, **kw)
        return
    dev = q.device.index
    pdl = _pdl_ok.get(dev)
    if pdl is None:
        pdl = torch.cuda.get_device_capability(q.device)[0] >= 9
        if pdl:
            try:
                _group_quant_kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
                _pdl_ok[dev] = True
                return
            except Exception:
                pdl = False
        _pdl_ok[dev] = pdl
    if pdl:
        _group_quant_kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
    else:
        _group_quant_kernel[grid](*args, USE_PDL=False, **kw)


def _outputs(T, K, col_major, device):
    G = K // GROUP
    q = torch.empty((T, K), dtype=torch.float8_e4m3fn, device=device)
    if col_major:
        s = torch.empty((G, triton.cdiv(T, 4) * 4), dtype=torch.float32, device=device)
    else:
        s = torch.empty((T, G), dtype=torch.float32, device=device)
    return q, s


def run(x, scale_col_major):
    T, K = x.shape
    assert K % GROUP == 0, "K must be a multiple of 128"
    if x.stride(-1) != 1:
        x = x.contiguous()
    col_major = bool(int(scale_col_major))
    q, s = _outputs(T, K, col_major, x.device)
    if T > 0:
        _launch(x, 0, False, T, K, col_major, q, s)
    return q, s


def silu_and_mul_group_quant(gate_up, scale_col_major=0):
    """Fused producer: quantize silu(gate_up[:, :K]) * gate_up[:, K:] (K = gate_up.shape[1] // 2),
    with the SwiGLU result rounded to gate_up's dtype as an unfused silu_and_mul would."""
    T, K2 = gate_up.shape
    K = K2 // 2
    assert K % GROUP == 0, "K must be a multiple of 128"
    if gate_up.stride(-1) != 1:
        gate_up = gate_up.contiguous()
    col_major = bool(int(scale_col_major))
    q, s = _outputs(T, K, col_major, gate_up.device)
    if T > 0:
        _launch(gate_up, K, True, T, K, col_major, q, s)
    return q, s
