"""Append new K/V tokens to a paged FP8 KV cache: the expert Triton implementation, the
quantize-in-the-copy fusion ablated.

Gold-set ablation `separate_quant`: identical in grid, strides, hints and launch to
tasks/kv_cache_append_fp8/expert.py, except that quantization and scatter are two kernels: the
first quantizes each token's key and value rows into fp8 staging tensors [T, Hkv, D]; the
second reads the staged fp8 rows back and copies them into the page slots.

For every token i with s = slot_mapping[i] >= 0, and every kv head h:

    kq[i, h, :] = clamp(key[i, h, :]   * (1 / k_scale), +-448) -> e4m3        (kernel 1)
    vq[i, h, :] = clamp(value[i, h, :] * (1 / v_scale), +-448) -> e4m3
    key_cache[s // PS, s % PS, h, :]   = kq[i, h, :]                          (kernel 2)
    value_cache[s // PS, s % PS, h, :] = vq[i, h, :]

Padding tokens (slot -1) write nothing; no other slot of the caches is touched.

Design:
  * kernel 1 (quantize): one program per token, key and value rows of all heads, each scale
    loaded and inverted once per program (a multiply per element); padding tokens return
    right after the slot lookup; writes fp8 staging tensors kq, vq;
  * kernel 2 (scatter): one program per token copies the staged K and V rows of all heads:
    a token's Hkv x D row is contiguous in the source and in the destination page slot, so
    one slot lookup serves 2 * Hkv * D elements; padding tokens return right after it;
  * the destination address is built from separate block, page and head strides (vLLM's
    block_stride / page_stride / head_stride), so the same kernel serves NHD and HND pages
    while each head's D-vector stays one contiguous store;
  * page and token offsets are int64 (production pools exceed 2^31 elements);
  * contiguous D columns with divisibility-16 strides give vector loads and stores;
    num_warps follows the row size (1 warp for Hkv * D = 256, 4 for 1024);
  * on sm_90+ both kernels are launched with programmatic dependent launch.
Dtypes come from the pointers, so the kernels run bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
FP8_MAX = tl.constexpr(448.0)   # a constexpr global: usable inside @triton.jit


@triton.jit
def _kv_quant_kernel(
    K, V, KQ, VQ, SLOT, KS, VS,
    stride_kt, stride_kh, stride_vt, stride_vh,
    stride_qt, stride_qh,                        # strides of the contiguous staging tensors
    n_heads, head_dim,
    HB: tl.constexpr,          # next_pow2(n_heads)
    BD: tl.constexpr,          # next_pow2(head_dim)
    USE_PDL: tl.constexpr,
):
    """Token tok: unless slot_mapping[tok] < 0, kq[tok] = clamp(key[tok] / k_scale) and
    vq[tok] = clamp(value[tok] / v_scale), as fp8."""
    tok = tl.program_id(0)
    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    slot = tl.load(SLOT + tok)
    if slot < 0:                                  # padding token: never scattered
        return
    h = tl.arange(0, HB)
    d = tl.max_contiguous(tl.multiple_of(tl.arange(0, BD), BD), BD)
    mask = (h < n_heads)[:, None] & (d < head_dim)[None, :]
    tok64 = tok.to(tl.int64)
    k = tl.load(K + tok64 * stride_kt + h[:, None] * stride_kh + d[None, :], mask=mask,
                other=0.0, eviction_policy="evict_first")
    v = tl.load(V + tok64 * stride_vt + h[:, None] * stride_vh + d[None, :], mask=mask,
                other=0.0, eviction_policy="evict_first")
    inv_k = 1.0 / tl.load(KS)                     # once per program
    inv_v = 1.0 / tl.load(VS)
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()
    q_offs = tok64 * stride_qt + h[:, None] * stride_qh + d[None, :]
    kq = tl.clamp(k.to(tl.float32) * inv_k, -FP8_MAX, FP8_MAX)
    vq = tl.clamp(v.to(tl.float32) * inv_v, -FP8_MAX, FP8_MAX)
    tl.store(KQ + q_offs, kq.to(KQ.dtype.element_ty), mask=mask)
    tl.store(VQ + q_offs, vq.to(VQ.dtype.element_ty), mask=mask)


@triton.jit
def _kv_scatter_kernel(
    KQ, VQ, KC, VC, SLOT,
    stride_qt, stride_qh,
    block_stride, page_stride, head_stride,      # cache strides in elements (both caches)
    page_size, n_heads, head_dim,
    HB: tl.constexpr,
    BD: tl.constexpr,
    USE_PDL: tl.constexpr,
):
    """Token tok: unless slot_mapping[tok] < 0, copy the staged fp8 rows kq[tok] and vq[tok] to
    page slot // page_size, row slot % page_size."""
    tok = tl.program_id(0)
    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    slot = tl.load(SLOT + tok).to(tl.int64)
    if slot < 0:                                  # padding token: nothing to write
        return
    blk = slot // page_size
    off = slot % page_size
    h = tl.arange(0, HB)
    d = tl.max_contiguous(tl.multiple_of(tl.arange(0, BD), BD), BD)
    mask = (h < n_heads)[:, None] & (d < head_dim)[None, :]
    q_offs = tok.to(tl.int64) * stride_qt + h[:, None] * stride_qh + d[None, :]
    kq = tl.load(KQ + q_offs, mask=mask, eviction_policy="evict_first")
    vq = tl.load(VQ + q_offs, mask=mask, eviction_policy="evict_first")
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()
    dst = blk * block_stride + off * page_stride + h[:, None] * head_stride + d[None, :]
    tl.store(KC + dst, kq, mask=mask)
    tl.store(VC + dst, vq, mask=mask)


_pdl_ok = {}


def _launch(kernel, grid, args, kw, device):
    if _INTERPRET or device.type != "cuda":
        kernel[grid](*args, USE_PDL=False, **kw)
        return
    dev = device.index
    pdl = _pdl_ok.get(dev)
    if pdl is None:
        pdl = torch.cuda.get_device_capability(device)[0] >= 9
        if pdl:
            try:
                kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
                _pdl_ok[dev] = True
                return
            except Exception:
                pdl = False
        _pdl_ok[dev] = pdl
    if pdl:
        kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
    else:
        kernel[grid](*args, USE_PDL=False, **kw)


def run(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale):
    T, H, D = key.shape
    if T == 0:
        return None
    assert key_cache.stride() == value_cache.stride(), "key and value caches must share strides"
    assert key.stride(-1) == 1 and value.stride(-1) == 1 and key_cache.stride(-1) == 1
    hb, bd = triton.next_power_of_2(H), triton.next_power_of_2(D)
    num_warps = max(1, min(4, (hb * bd) // 256))
    kw = dict(HB=hb, BD=bd, num_warps=num_warps)
    grid = (T,)
    # fp8 staging tensors for the quantized rows
    kq = torch.empty((T, H, D), dtype=key_cache.dtype, device=key.device)
    vq = torch.empty((T, H, D), dtype=value_cache.dtype, device=key.device)
    _launch(_kv_quant_kernel, grid,
            (key, value, kq, vq, slot_mapping, k_scale, v_scale,
             key.stride(0), key.stride(1), value.stride(0), value.stride(1),
             kq.stride(0), kq.stride(1), H, D), kw, key.device)
    _launch(_kv_scatter_kernel, grid,
            (kq, vq, key_cache, value_cache, slot_mapping, kq.stride(0), kq.stride(1),
             key_cache.stride(0), key_cache.stride(1), key_cache.stride(2),
             key_cache.shape[1], H, D), kw, key.device)
    return None
