"""Append new K/V tokens to a paged FP8 KV cache, expert Triton implementation.

For every token i with s = slot_mapping[i] >= 0, and every kv head h:

    key_cache[s // PS, s % PS, h, :]   = clamp(key[i, h, :]   * (1 / k_scale), +-448) -> e4m3
    value_cache[s // PS, s % PS, h, :] = clamp(value[i, h, :] * (1 / v_scale), +-448) -> e4m3

Padding tokens (slot -1) write nothing; no other slot of the caches is touched.

Design (a memory-bound row scatter: one bf16 read and one fp8 write per element):
  * the work is cut into tiles of TB consecutive tokens; each tile writes both K and V for
    all heads as one [TB, Hkv, D] tile per tensor: a token's Hkv x D row is contiguous in the
    source and in its destination page slot, so one slot lookup per token serves
    2 * Hkv * D elements; the TB slots are fetched with one vector load, and padding tokens
    (slot < 0) are masked off before any load of key or value, so they cost only their slot
    load and write nothing;
  * TB = TILE / (next_pow2(Hkv) * next_pow2(D)) tokens (TILE = 2048 elements, so 2 tokens
    for Hkv = 8, 4 for Hkv = 4), lowered until there are >= 2 tiles per SM;
  * persistent, cp.async-pipelined programs when there is more than one resident wave of
    tiles: a grid of PROGS_PER_SM programs per SM walks tiles pid, pid + grid, ... in a
    `tl.range(..., num_stages=STAGES)` loop. Triton's pipeliner turns the slot loads and the
    K/V loads into cp.async copies into shared memory, the slots issued further ahead than
    the K/V rows they unmask, so while tile i is converted and stored, the K/V of the next
    STAGES - 1 tiles (and their slots before them) are already in flight: the slot -> K/V
    dependency is paid once per program instead of once per tile, bytes in flight are held
    in shared memory instead of registers (8 programs x 2 tiles x 8 KB = 128 KB per SM), and
    there is no block launch / retire after the first wave. (Round 1's persist_pipe kept
    the next tile in registers; it measured 23 us against 18.4: the register double buffer
    is not a reliable pipeline.) With a fixed, interleaved tile walk every program gets
    ceil or floor(n_tiles / grid) tiles, so the SMs finish within one tile of each other.
    No program waits on another one (no spin-waits; residency is not needed for
    correctness). Small launches (the decode step, T = 256: 256 one-token tiles) keep one
    program per tile with the non-persistent kernel (no pipeline to fill);
  * the quantization is fused into the copy (no separate quant kernel, no bf16 staging),
    and each scale is loaded and inverted once per program (a multiply per element);
  * the destination address is built from separate block, page and head strides (vLLM's
    block_stride / page_stride / head_stride), so the same kernel serves NHD and HND pages
    while each head's D-vector stays one contiguous store;
  * page offsets are int64 (production pools exceed 2^31 elements): the slot stays int64
    through the page split and the block stride; each tile's first-token offset into
    key / value is int64, the offsets inside the tile are int32;
  * contiguous D columns with divisibility-16 strides give 16-byte bf16 copies (cp.async.cg
    16 in the persistent kernel) and 16-byte fp8 stores per thread; the sources are
    streamed with evict_first (they are dead after this kernel); the head and dim masks are
    compiled out when Hkv and D are powers of two;
  * num_warps follows the tile size: TB * Hkv * D / (32 * 16), i.e. 16 elements (two 16-byte
    loads) per thread per tensor and tile, clamped to [1, 16] (4 warps for both prefill
    shapes, 1 warp for the decode step's 2 x 128 row);
  * on sm_90+ both kernels are launched with programmatic dependent launch (the decode
    step's append is a few microseconds of work behind a launch).
Launch configuration (H200, 132 SMs): llama8b prefill TB 2 and qwen3 chunked prefill TB 4:
4096 tiles, 4 warps, persistent grid 1056 (8 per SM), num_stages 3, 16 KB of shared memory
per program; decode TB 1, 1 warp, 256 programs of the non-persistent kernel.
Dtypes come from the pointers, so the kernel runs bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
FP8_MAX = tl.constexpr(448.0)   # a constexpr global: usable inside @triton.jit

TILE = 2048            # elements of one tensor's [TB, Hkv, D] tile (next_pow2 of Hkv and D)
ELEMS_PER_THREAD = 16  # elements of one tensor per thread -> num_warps
MIN_TILES_PER_SM = 2   # lower TB until there are at least this many tiles per SM
PROGS_PER_SM = 8       # persistent grid: programs per SM (4 warps, 16 KB shared memory each)
STAGES = 3             # pipeline depth: K/V of the next STAGES - 1 tiles in flight


@triton.jit
def _kv_append_fp8_kernel(
    K, V, KC, VC, SLOT, KS, VS, n_tokens,
    stride_kt, stride_kh, stride_vt, stride_vh,
    block_stride, page_stride, head_stride,      # cache strides in elements (both caches)
    page_size, n_heads, head_dim,
    TB: tl.constexpr,          # tokens per program
    HB: tl.constexpr,          # next_pow2(n_heads)
    BD: tl.constexpr,          # next_pow2(head_dim)
    EVEN_H: tl.constexpr,      # HB == n_heads
    EVEN_D: tl.constexpr,      # BD == head_dim
    USE_PDL: tl.constexpr,
):
    """Tokens [pid * TB, pid * TB + TB): for each with slot_mapping[tok] >= 0, write
    clamp(key[tok] / k_scale) and clamp(value[tok] / v_scale), as fp8, to page
    slot // page_size, row slot % page_size."""
    pid = tl.program_id(0)
    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    tok0 = pid * TB
    t = tl.arange(0, TB)
    h = tl.arange(0, HB)
    d = tl.max_contiguous(tl.multiple_of(tl.arange(0, BD), BD), BD)
    # one vector load of the TB slots; tokens past the end read as padding
    slot = tl.load(SLOT + tok0 + t, mask=tok0 + t < n_tokens, other=-1).to(tl.int64)
    valid = slot >= 0                             # padding tokens: nothing loaded or written
    mask = valid[:, None, None]
    if not EVEN_H:
        mask = mask & (h < n_heads)[None, :, None]
    if not EVEN_D:
        mask = mask & (d < head_dim)[None, None, :]
    tok64 = tok0.to(tl.int64)
    k_src = K + tok64 * stride_kt
    v_src = V + tok64 * stride_vt
    k_off = t[:, None, None] * stride_kt + (h[:, None] * stride_kh + d[None, :])[None, :, :]
    v_off = t[:, None, None] * stride_vt + (h[:, None] * stride_vh + d[None, :])[None, :, :]
    k = tl.load(k_src + k_off, mask=mask, other=0.0, eviction_policy="evict_first")
    v = tl.load(v_src + v_off, mask=mask, other=0.0, eviction_policy="evict_first")
    inv_k = 1.0 / tl.load(KS)                     # once per program
    inv_v = 1.0 / tl.load(VS)
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()
    blk = (slot // page_size)[:, None, None]
    off = (slot % page_size)[:, None, None]
    dst = blk * block_stride + off * page_stride + h[None, :, None] * head_stride + d[None, None, :]
    kq = tl.clamp(k.to(tl.float32) * inv_k, -FP8_MAX, FP8_MAX)
    vq = tl.clamp(v.to(tl.float32) * inv_v, -FP8_MAX, FP8_MAX)
    tl.store(KC + dst, kq.to(KC.dtype.element_ty), mask=mask)
    tl.store(VC + dst, vq.to(VC.dtype.element_ty), mask=mask)


@triton.jit
def _kv_append_fp8_persistent_kernel(
    K, V, KC, VC, SLOT, KS, VS, n_tokens, n_tiles,
    stride_kt, stride_kh, stride_vt, stride_vh,
    block_stride, page_stride, head_stride,      # cache strides in elements (both caches)
    page_size, n_heads, head_dim,
    TB: tl.constexpr,          # tokens per tile
    HB: tl.constexpr,          # next_pow2(n_heads)
    BD: tl.constexpr,          # next_pow2(head_dim)
    EVEN_H: tl.constexpr,      # HB == n_heads
    EVEN_D: tl.constexpr,      # BD == head_dim
    STAGES: tl.constexpr,      # software-pipeline depth of the tile loop (cp.async)
    USE_PDL: tl.constexpr,
):
    """Tiles pid, pid + grid, ... of TB tokens: for each token with slot_mapping[tok] >= 0,
    write clamp(key[tok] / k_scale) and clamp(value[tok] / v_scale), as fp8, to page
    slot // page_size, row slot % page_size; the loop is pipelined STAGES deep."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    t = tl.arange(0, TB)
    h = tl.arange(0, HB)
    d = tl.max_contiguous(tl.multiple_of(tl.arange(0, BD), BD), BD)
    inv_k = 1.0 / tl.load(KS)                     # once per program
    inv_v = 1.0 / tl.load(VS)
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()
    k_off = t[:, None, None] * stride_kt + (h[:, None] * stride_kh + d[None, :])[None, :, :]
    v_off = t[:, None, None] * stride_vt + (h[:, None] * stride_vh + d[None, :])[None, :, :]
    hd = h[None, :, None] * head_stride + d[None, None, :]
    for tile in tl.range(pid, n_tiles, nprog, num_stages=STAGES):
        tok0 = tile * TB
        # one vector load of the TB slots; tokens past the end read as padding
        slot = tl.load(SLOT + tok0 + t, mask=tok0 + t < n_tokens, other=-1).to(tl.int64)
        valid = slot >= 0                         # padding tokens: nothing loaded or written
        mask = valid[:, None, None]
        if not EVEN_H:
            mask = mask & (h < n_heads)[None, :, None]
        if not EVEN_D:
            mask = mask & (d < head_dim)[None, None, :]
        tok64 = tok0.to(tl.int64)
        k = tl.load(K + tok64 * stride_kt + k_off, mask=mask, other=0.0,
                    eviction_policy="evict_first")
        v = tl.load(V + tok64 * stride_vt + v_off, mask=mask, other=0.0,
                    eviction_policy="evict_first")
        blk = (slot // page_size)[:, None, None]
        off = (slot % page_size)[:, None, None]
        dst = blk * block_stride + off * page_stride + hd
        kq = tl.clamp(k.to(tl.float32) * inv_k, -FP8_MAX, FP8_MAX)
        vq = tl.clamp(v.to(tl.float32) * inv_v, -FP8_MAX, FP8_MAX)
        tl.store(KC + dst, kq.to(KC.dtype.element_ty), mask=mask)
        tl.store(VC + dst, vq.to(VC.dtype.element_ty), mask=mask)


_pdl_ok = {}
_n_sm = {}


def _sm_count(t):
    if _INTERPRET or not t.is_cuda:
        return 4
    dev = t.device.index
    n = _n_sm.get(dev)
    if n is None:
        n = _n_sm[dev] = torch.cuda.get_device_properties(t.device).multi_processor_count
    return n


def run(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale):
    T, H, D = key.shape
    if T == 0:
        return None
    assert key_cache.stride() == value_cache.stride(), "key and value caches must share strides"
    assert key.stride(-1) == 1 and value.stride(-1) == 1 and key_cache.stride(-1) == 1
    hb, bd = triton.next_power_of_2(H), triton.next_power_of_2(D)
    n_sm = _sm_count(key)
    tb = max(1, TILE // (hb * bd))
    while tb > 1 and triton.cdiv(T, tb) < MIN_TILES_PER_SM * n_sm:
        tb //= 2
    num_warps = max(1, min(16, (tb * hb * bd) // (32 * ELEMS_PER_THREAD)))
    n_tiles = triton.cdiv(T, tb)
    max_progs = PROGS_PER_SM * n_sm
    persistent = n_tiles > max_progs              # more than one resident wave of tiles
    cache_args = (key_cache.stride(0), key_cache.stride(1), key_cache.stride(2),
                  key_cache.shape[1], H, D)
    strides = (key.stride(0), key.stride(1), value.stride(0), value.stride(1))
    ptrs = (key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale, T)
    kw = dict(TB=tb, HB=hb, BD=bd, EVEN_H=hb == H, EVEN_D=bd == D, num_warps=num_warps)
    if persistent:
        kernel = _kv_append_fp8_persistent_kernel
        args = ptrs + (n_tiles,) + strides + cache_args
        grid = (max_progs,)
        kw.update(STAGES=STAGES, num_stages=STAGES)
    else:
        kernel = _kv_append_fp8_kernel
        args = ptrs + strides + cache_args
        grid = (n_tiles,)
    if _INTERPRET or not key.is_cuda:
        kernel[grid](*args, USE_PDL=False, **kw)
        return None
    dev = key.device.index
    pdl = _pdl_ok.get(dev)
    if pdl is None:
        pdl = torch.cuda.get_device_capability(key.device)[0] >= 9
        if pdl:
            try:
                kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
                _pdl_ok[dev] = True
                return None
            except Exception:
                pdl = False
        _pdl_ok[dev] = pdl
    if pdl:
        kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
    else:
        kernel[grid](*args, USE_PDL=False, **kw)
    return None
