"""Append new K/V tokens to a paged FP8 KV cache: the expert Triton implementation, the
stride-generic cache addressing ablated.

Gold-set ablation `hardcoded_nhd`: identical to tasks/kv_cache_append_fp8/expert.py except that
the kernel receives no cache strides: the destination offset is the contiguous NHD formula
((block * PS + offset) * Hkv + head) * D + d, and run() requires contiguous caches.

For every token i with s = slot_mapping[i] >= 0, and every kv head h:

    key_cache[s // PS, s % PS, h, :]   = clamp(key[i, h, :]   * (1 / k_scale), +-448) -> e4m3
    value_cache[s // PS, s % PS, h, :] = clamp(value[i, h, :] * (1 / v_scale), +-448) -> e4m3

Padding tokens (slot -1) write nothing; no other slot of the caches is touched.

Design (a memory-bound row scatter: one bf16 read and one fp8 write per element):
  * one program per token writes both K and V for all heads: a token's Hkv x D row is
    contiguous in the source and in the destination page slot, so one slot lookup serves
    2 * Hkv * D elements; padding tokens return right after that lookup;
  * the quantization is fused into the copy (no separate quant kernel, no bf16 staging),
    and each scale is loaded and inverted once per program (a multiply per element);
  * the destination address assumes a contiguous [NB, PS, Hkv, D] (NHD) cache:
    ((blk * PS + off) * Hkv + h) * D + d, each head's D-vector one contiguous store;
  * page and token offsets are int64 (production pools exceed 2^31 elements);
  * contiguous D columns with divisibility-16 strides give 16-byte bf16 loads and 8-byte
    fp8 stores per thread; the K and V loads are both issued before either store, and the
    sources are streamed with evict_first (they are dead after this kernel);
  * num_warps follows the row size (1 warp for Hkv * D = 256, 4 for 1024);
  * on sm_90+ the kernel is launched with programmatic dependent launch (the decode step's
    append is a few microseconds of work behind a launch).
Dtypes come from the pointers, so the kernel runs bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
FP8_MAX = tl.constexpr(448.0)   # a constexpr global: usable inside @triton.jit


@triton.jit
def _kv_append_fp8_kernel(
    K, V, KC, VC, SLOT, KS, VS,
    stride_kt, stride_kh, stride_vt, stride_vh,
    page_size, n_heads, head_dim,
    HB: tl.constexpr,          # next_pow2(n_heads)
    BD: tl.constexpr,          # next_pow2(head_dim)
    USE_PDL: tl.constexpr,
):
    """Token tok: unless slot_mapping[tok] < 0, write clamp(key[tok] / k_scale) and
    clamp(value[tok] / v_scale), as fp8, to page slot // page_size, row slot % page_size."""
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
    tok64 = tok.to(tl.int64)
    k = tl.load(K + tok64 * stride_kt + h[:, None] * stride_kh + d[None, :], mask=mask,
                other=0.0, eviction_policy="evict_first")
    v = tl.load(V + tok64 * stride_vt + h[:, None] * stride_vh + d[None, :], mask=mask,
                other=0.0, eviction_policy="evict_first")
    inv_k = 1.0 / tl.load(KS)                     # once per program
    inv_v = 1.0 / tl.load(VS)
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()
    dst = ((blk * page_size + off) * n_heads + h[:, None]) * head_dim + d[None, :]
    kq = tl.clamp(k.to(tl.float32) * inv_k, -FP8_MAX, FP8_MAX)
    vq = tl.clamp(v.to(tl.float32) * inv_v, -FP8_MAX, FP8_MAX)
    tl.store(KC + dst, kq.to(KC.dtype.element_ty), mask=mask)
    tl.store(VC + dst, vq.to(VC.dtype.element_ty), mask=mask)


_pdl_ok = {}


def run(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale):
    T, H, D = key.shape
    if T == 0:
        return None
    assert key_cache.is_contiguous() and value_cache.is_contiguous(), "caches must be contiguous"
    assert key.stride(-1) == 1 and value.stride(-1) == 1
    hb, bd = triton.next_power_of_2(H), triton.next_power_of_2(D)
    num_warps = max(1, min(4, (hb * bd) // 256))
    args = (key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale,
            key.stride(0), key.stride(1), value.stride(0), value.stride(1),
            key_cache.shape[1], H, D)
    kw = dict(HB=hb, BD=bd, num_warps=num_warps)
    grid = (T,)
    if _INTERPRET or not key.is_cuda:
        _kv_append_fp8_kernel[grid](*args, USE_PDL=False, **kw)
        return None
    dev = key.device.index
    pdl = _pdl_ok.get(dev)
    if pdl is None:
        pdl = torch.cuda.get_device_capability(key.device)[0] >= 9
        if pdl:
            try:
                _kv_append_fp8_kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
                _pdl_ok[dev] = True
                return None
            except Exception:
                pdl = False
        _pdl_ok[dev] = pdl
    if pdl:
        _kv_append_fp8_kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
    else:
        _kv_append_fp8_kernel[grid](*args, USE_PDL=False, **kw)
    return None
