"""Append new K/V tokens to a paged FP8 KV cache: the expert Triton implementation, the joint
K/V program ablated.

Gold-set ablation `split_kv_launches`: identical to tasks/kv_cache_append_fp8/expert.py except
that the kernel writes one tensor: run() launches it once for (key, key_cache, k_scale) and
once for (value, value_cache, v_scale), so every token's slot is looked up (and its padding
test made) by two programs, one per launch.

For every token i with s = slot_mapping[i] >= 0, and every kv head h:

    key_cache[s // PS, s % PS, h, :]   = clamp(key[i, h, :]   * (1 / k_scale), +-448) -> e4m3
    value_cache[s // PS, s % PS, h, :] = clamp(value[i, h, :] * (1 / v_scale), +-448) -> e4m3

Padding tokens (slot -1) write nothing; no other slot of the caches is touched.

Design (a memory-bound row scatter: one bf16 read and one fp8 write per element):
  * two launches (K, then V) of one program per token, each writing one tensor's Hkv x D row
    for all heads: the row is contiguous in the source and in the destination page slot, so
    one slot lookup serves Hkv * D elements; padding tokens return right after that lookup;
  * the quantization is fused into the copy (no separate quant kernel, no bf16 staging),
    and the scale is loaded and inverted once per program (a multiply per element);
  * the destination address is built from separate block, page and head strides (vLLM's
    block_stride / page_stride / head_stride), so the same kernel serves NHD and HND pages
    while each head's D-vector stays one contiguous store;
  * page and token offsets are int64 (production pools exceed 2^31 elements);
  * contiguous D columns with divisibility-16 strides give 16-byte bf16 loads and 8-byte
    fp8 stores per thread, and the source is streamed with evict_first;
  * num_warps follows the row size (1 warp for Hkv * D = 256, 4 for 1024);
  * on sm_90+ the kernel is launched with programmatic dependent launch.
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
def _cache_append_fp8_kernel(
    SRC, CACHE, SLOT, SCALE,
    stride_t, stride_h,
    block_stride, page_stride, head_stride,      # cache strides in elements
    page_size, n_heads, head_dim,
    HB: tl.constexpr,          # next_pow2(n_heads)
    BD: tl.constexpr,          # next_pow2(head_dim)
    USE_PDL: tl.constexpr,
):
    """Token tok: unless slot_mapping[tok] < 0, write clamp(src[tok] / scale), as fp8, to page
    slot // page_size, row slot % page_size of the cache."""
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
    x = tl.load(SRC + tok64 * stride_t + h[:, None] * stride_h + d[None, :], mask=mask,
                other=0.0, eviction_policy="evict_first")
    inv = 1.0 / tl.load(SCALE)                    # once per program
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()
    dst = blk * block_stride + off * page_stride + h[:, None] * head_stride + d[None, :]
    xq = tl.clamp(x.to(tl.float32) * inv, -FP8_MAX, FP8_MAX)
    tl.store(CACHE + dst, xq.to(CACHE.dtype.element_ty), mask=mask)


_pdl_ok = {}


def _launch(grid, args, kw, device):
    if _INTERPRET or device.type != "cuda":
        _cache_append_fp8_kernel[grid](*args, USE_PDL=False, **kw)
        return
    dev = device.index
    pdl = _pdl_ok.get(dev)
    if pdl is None:
        pdl = torch.cuda.get_device_capability(device)[0] >= 9
        if pdl:
            try:
                _cache_append_fp8_kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
                _pdl_ok[dev] = True
                return
            except Exception:
                pdl = False
        _pdl_ok[dev] = pdl
    if pdl:
        _cache_append_fp8_kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
    else:
        _cache_append_fp8_kernel[grid](*args, USE_PDL=False, **kw)


def run(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale):
    T, H, D = key.shape
    if T == 0:
        return None
    hb, bd = triton.next_power_of_2(H), triton.next_power_of_2(D)
    num_warps = max(1, min(4, (hb * bd) // 256))
    kw = dict(HB=hb, BD=bd, num_warps=num_warps)
    grid = (T,)
    for src, cache, scale in ((key, key_cache, k_scale), (value, value_cache, v_scale)):
        assert src.stride(-1) == 1 and cache.stride(-1) == 1
        args = (src, cache, slot_mapping, scale, src.stride(0), src.stride(1),
                cache.stride(0), cache.stride(1), cache.stride(2), cache.shape[1], H, D)
        _launch(grid, args, kw, key.device)
    return None
