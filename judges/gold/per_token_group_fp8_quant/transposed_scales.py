"""Per-token-group (1x128) dynamic FP8 quantization: the expert Triton implementation, the
in-kernel consumer scale layout ablated.

Gold-set ablation `transposed_scales`: identical to tasks/per_token_group_fp8_quant/expert.py
except that the kernel always writes the scales as a row-major [T, G] matrix; for
scale_col_major = 1, run() then copies its transpose into the [G, ceil(T/4)*4] buffer with a
torch transpose + copy (an extra kernel and an extra round trip of the scales).

For x: [T, K] (K = 128 * G, bfloat16 on the GPU) computes, per token t and group g,

    s[t, g] = max(max_i |x[t, 128 g + i]|, 1e-10) / 448                 (fp32)
    q[t, 128 g + i] = clamp(x[t, 128 g + i] * (1 / s[t, g]), -448, 448) -> float8_e4m3fn

and returns s as [T, G] row-major, or (scale_col_major = 1) as the [G, ceil(T/4)*4]
column-major, TMA-aligned buffer DeepGEMM reads, filled by a host-side transpose copy.

Design (memory-bound: one read of x, one write of q, scales are 1/64 of the bytes):
  * one pass: a program loads its groups once, upcasts to fp32 in registers, reduces the
    absolute max per group, and quantizes from the same registers;
  * one division per group (s and its reciprocal), then a multiply per element;
  * many groups per program: a 3-D [BT tokens, BG groups, 128] tile, reduced along the last
    axis, so each program moves 1-8 KB of x and the grid has enough programs for 132 SMs
    (the decode shape shrinks the tile instead of leaving SMs idle);
  * the kernel stores scales row-major ([T, G], row stride G); the column-major layout is
    produced afterwards by torch (s_cm[:, :T].copy_(s_rm.t()));
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
    T, G, n_g_tiles,
    stride_xt, stride_qt,        # row strides of x (or of gate_up) and q, in elements
    stride_st,                   # row stride of the row-major [T, G] scales
    up_offset,                   # FUSE_SILU: column offset of `up` inside a gate_up row
    GROUP_SIZE: tl.constexpr,
    BT: tl.constexpr,            # tokens per program
    BG: tl.constexpr,            # groups per program
    FUSE_SILU: tl.constexpr,     # x = silu(gate) * up, rounded to the input dtype
    USE_PDL: tl.constexpr,
):
    """For a [BT, BG] tile of (token, group) pairs: s = max(amax|x|, 1e-10) / 448 stored at
    s[t, g] (row-major [T, G]), and q = clamp(x * (1 / s), +-448) -> fp8 stored row-major."""
    in_dtype = X.dtype.element_ty
    pid = tl.program_id(0)
    tile_t = pid // n_g_tiles
    tile_g = pid % n_g_tiles
    t = tile_t * BT + tl.arange(0, BT)                     # [BT]
    g = tile_g * BG + tl.arange(0, BG)                     # [BG]
    c = tl.max_contiguous(tl.multiple_of(tl.arange(0, GROUP_SIZE), GROUP_SIZE), GROUP_SIZE)
    t64 = t.to(tl.int64)                                   # T * K can exceed 2^31
    mask_tg = (t < T)[:, None] & (g < G)[None, :]          # [BT, BG]
    mask = mask_tg[:, :, None]
    col = (g * GROUP_SIZE)[None, :, None] + c[None, None, :]   # [1, BG, 128]
    x_offs = t64[:, None, None] * stride_xt + col

    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    if FUSE_SILU:
        gate = tl.load(X + x_offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        up = tl.load(X + x_offs + up_offset, mask=mask, other=0.0,
                     eviction_policy="evict_first").to(tl.float32)
        x = (gate * tl.sigmoid(gate)).to(in_dtype).to(tl.float32) * up
        x = x.to(in_dtype).to(tl.float32)
    else:
        x = tl.load(X + x_offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()

    amax = tl.maximum(tl.max(tl.abs(x), axis=2), 1e-10)   # [BT, BG]
    s = amax / FP8_MAX
    inv = 1.0 / s                                          # one division per group
    q = tl.clamp(x * inv[:, :, None], -FP8_MAX, FP8_MAX)
    tl.store(Q + t64[:, None, None] * stride_qt + col, q.to(Q.dtype.element_ty), mask=mask)
    s_offs = t64[:, None] * stride_st + g[None, :]
    tl.store(S + s_offs, s, mask=mask_tg)


_sm_count = {}
_pdl_ok = {}


def _num_sms(device):
    if device.type != "cuda":
        # CPU interpreter: size the grid for one virtual SM, so the small smoke shapes still
        # take the multi-row / persistent / multi-chunk paths the GPU uses at full size
        return 1
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sm_count:
        _sm_count[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sm_count[idx]


def _config(T, G, n_sm):
    """(BT, BG, num_warps): up to 32 groups (8 KB of bf16) per program, fewer when the grid
    would not give every SM ~4 programs; BG divides G (no masked lanes)."""
    total = T * G
    gpp = 32
    while gpp > 4 and triton.cdiv(total, gpp) < 4 * n_sm:
        gpp //= 2
    bg = 1
    while bg * 2 <= gpp and G % (bg * 2) == 0:
        bg *= 2
    bt = min(gpp // bg, triton.next_power_of_2(T))
    num_warps = max(1, min(8, (bt * bg * GROUP) // 512))
    return bt, bg, num_warps


def _launch(x_like, up_offset, fuse, T, K, q, s):
    """Quantize into q and the row-major [T, G] scales s."""
    G = K // GROUP
    bt, bg, num_warps = _config(T, G, _num_sms(q.device))
    n_g_tiles = triton.cdiv(G, bg)
    grid = (triton.cdiv(T, bt) * n_g_tiles,)
    args = (x_like, q, s, T, G, n_g_tiles, x_like.stride(0), q.stride(0), s.stride(0), up_offset)
    kw = dict(GROUP_SIZE=GROUP, BT=bt, BG=bg, FUSE_SILU=fuse, num_warps=num_warps)
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


def _quantize(x_like, up_offset, fuse, T, K, col_major):
    G = K // GROUP
    q = torch.empty((T, K), dtype=torch.float8_e4m3fn, device=x_like.device)
    s = torch.empty((T, G), dtype=torch.float32, device=x_like.device)
    if T > 0:
        _launch(x_like, up_offset, fuse, T, K, q, s)
    if col_major:
        s_cm = torch.empty((G, triton.cdiv(T, 4) * 4), dtype=torch.float32, device=x_like.device)
        s_cm[:, :T].copy_(s.t())                # transpose kernel after the quant kernel
        s = s_cm
    return q, s


def run(x, scale_col_major):
    T, K = x.shape
    assert K % GROUP == 0, "K must be a multiple of 128"
    if x.stride(-1) != 1:
        x = x.contiguous()
    return _quantize(x, 0, False, T, K, bool(int(scale_col_major)))


def silu_and_mul_group_quant(gate_up, scale_col_major=0):
    """Fused producer: quantize silu(gate_up[:, :K]) * gate_up[:, K:] (K = gate_up.shape[1] // 2),
    with the SwiGLU result rounded to gate_up's dtype as an unfused silu_and_mul would."""
    T, K2 = gate_up.shape
    K = K2 // 2
    assert K % GROUP == 0, "K must be a multiple of 128"
    if gate_up.stride(-1) != 1:
        gate_up = gate_up.contiguous()
    return _quantize(gate_up, K, True, T, K, bool(int(scale_col_major)))
