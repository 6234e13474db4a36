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
  * persistent, software-pipelined programs: the grid is at most PROGS_PER_SM programs per SM
    (the fewest iterations that cap allows, then the fewest programs for them, so
    programs get equal tile counts up to the last one; 342 programs x 6 tiles on both prefill
    shapes), each walking tiles pid,
    pid + grid, ...; while a program waits for tile i's K/V it already holds tile i+1's K/V
    loads in flight and tile i+2's slots: the slots of the next tile are prefetched one
    iteration ahead, so the slot -> K/V-load dependency is off the critical path, and each
    program keeps two tiles of loads in flight with no program launch / retire in between
    (no wave tail beyond one tile); num_stages = 1 (the pipelining is explicit);
  * TB = TILE / (next_pow2(Hkv) * next_pow2(D)) tokens (TILE = 4096 elements: 4 tokens for
    Hkv = 8, 8 for Hkv = 4), lowered until there are >= 2 tiles per SM; the decode step
    (T = 256) thus runs one token per program (one tile each, the loop body never runs);
  * the quantization is fused into the copy (no separate quant kernel, no bf16 staging),
    and each scale is loaded and inverted once per program (a multiply per element);
  * the destination address is built from separate block, page and head strides (vLLM's
    block_stride / page_stride / head_stride), so the same kernel serves NHD and HND pages
    while each head's D-vector stays one contiguous store;
  * page offsets are int64 (production pools exceed 2^31 elements): the slot stays int64
    through the page split and the block stride; each tile's first-token offset into
    key / value is int64, the offsets inside the tile are int32;
  * contiguous D columns with divisibility-16 strides give 16-byte bf16 loads and 8-byte
    fp8 stores per thread; the K and V loads are both issued before either store, and the
    sources are streamed with evict_first (they are dead after this kernel); the head and
    dim masks are compiled out when Hkv and D are powers of two;
  * num_warps follows the tile size: TB * Hkv * D / (32 * 16), i.e. 16 elements (two 16-byte
    loads) per thread per tensor and tile, clamped to [1, 16] (8 warps for both prefill
    shapes, 1 warp for the decode step's 2 x 128 row); PROGS_PER_SM = 3, what fits with the
    ~68 registers per thread that two live tiles take (24 warps per SM, each program holding
    two 16 KB K+V tiles: ~96 KB of loads in flight per SM);
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

TILE = 4096            # elements of one tensor's [TB, Hkv, D] tile (next_pow2 of Hkv and D)
ELEMS_PER_THREAD = 16  # elements of one tensor per thread and tile -> num_warps
MIN_TILES_PER_SM = 2   # lower TB until there are at least this many tiles per SM
PROGS_PER_SM = 3       # persistent grid: at most this many programs per SM (register-bound)


@triton.jit
def _load_slots(SLOT, tok0, n_tokens, TB: tl.constexpr):
    t = tl.arange(0, TB)
    # tokens past the end (and tiles past the last one) read as padding
    return tl.load(SLOT + tok0 + t, mask=tok0 + t < n_tokens, other=-1).to(tl.int64)


@triton.jit
def _tile_mask(slot, n_heads, head_dim, HB: tl.constexpr, BD: tl.constexpr,
               EVEN_H: tl.constexpr, EVEN_D: tl.constexpr):
    h = tl.arange(0, HB)
    d = tl.arange(0, BD)
    valid = slot >= 0                             # padding tokens: nothing loaded or written
    mask = valid[:, None, None]
    if not EVEN_H:
        mask = mask & (h < n_heads)[None, :, None]
    if not EVEN_D:
        mask = mask & (d < head_dim)[None, None, :]
    return mask


@triton.jit
def _load_tile(X, tok0, stride_t, stride_h, mask,
               TB: tl.constexpr, HB: tl.constexpr, BD: tl.constexpr):
    t = tl.arange(0, TB)
    h = tl.arange(0, HB)
    d = tl.max_contiguous(tl.multiple_of(tl.arange(0, BD), BD), BD)
    src = X + tok0.to(tl.int64) * stride_t
    offs = t[:, None, None] * stride_t + (h[:, None] * stride_h + d[None, :])[None, :, :]
    return tl.load(src + offs, mask=mask, other=0.0, eviction_policy="evict_first")


@triton.jit
def _store_tile(KC, VC, k, v, inv_k, inv_v, slot, mask,
                block_stride, page_stride, head_stride, page_size,
                HB: tl.constexpr, BD: tl.constexpr):
    h = tl.arange(0, HB)
    d = tl.max_contiguous(tl.multiple_of(tl.arange(0, BD), BD), BD)
    blk = (slot // page_size)[:, None, None]
    off = (slot % page_size)[:, None, None]
    dst = blk * block_stride + off * page_stride + h[None, :, None] * head_stride + d[None, None, :]
    kq = tl.clamp(k.to(tl.float32) * inv_k, -FP8_MAX, FP8_MAX)
    vq = tl.clamp(v.to(tl.float32) * inv_v, -FP8_MAX, FP8_MAX)
    tl.store(KC + dst, kq.to(KC.dtype.element_ty), mask=mask)
    tl.store(VC + dst, vq.to(VC.dtype.element_ty), mask=mask)


@triton.jit
def _kv_append_fp8_kernel(
    K, V, KC, VC, SLOT, KS, VS, n_tokens, n_tiles,
    stride_kt, stride_kh, stride_vt, stride_vh,
    block_stride, page_stride, head_stride,      # cache strides in elements (both caches)
    page_size, n_heads, head_dim,
    TB: tl.constexpr,          # tokens per tile
    HB: tl.constexpr,          # next_pow2(n_heads)
    BD: tl.constexpr,          # next_pow2(head_dim)
    EVEN_H: tl.constexpr,      # HB == n_heads
    EVEN_D: tl.constexpr,      # BD == head_dim
    USE_PDL: tl.constexpr,
):
    """Tiles pid, pid + grid, ... of TB tokens: for each token with slot_mapping[tok] >= 0,
    write clamp(key[tok] / k_scale) and clamp(value[tok] / v_scale), as fp8, to page
    slot // page_size, row slot % page_size. Tile i+1's K/V loads and tile i+2's slot load
    are issued before tile i is stored."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    # prologue: tile pid (grid <= n_tiles, so it exists) and the next tile's slots
    tok_c = pid * TB
    slot_c = _load_slots(SLOT, tok_c, n_tokens, TB)
    mask_c = _tile_mask(slot_c, n_heads, head_dim, HB, BD, EVEN_H, EVEN_D)
    k_c = _load_tile(K, tok_c, stride_kt, stride_kh, mask_c, TB, HB, BD)
    v_c = _load_tile(V, tok_c, stride_vt, stride_vh, mask_c, TB, HB, BD)
    slot_n = _load_slots(SLOT, tok_c + nprog * TB, n_tokens, TB)
    inv_k = 1.0 / tl.load(KS)                     # once per program
    inv_v = 1.0 / tl.load(VS)
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()
    for tile in range(pid + nprog, n_tiles, nprog):
        tok_n = tile * TB
        mask_n = _tile_mask(slot_n, n_heads, head_dim, HB, BD, EVEN_H, EVEN_D)
        k_n = _load_tile(K, tok_n, stride_kt, stride_kh, mask_n, TB, HB, BD)
        v_n = _load_tile(V, tok_n, stride_vt, stride_vh, mask_n, TB, HB, BD)
        slot_nn = _load_slots(SLOT, tok_n + nprog * TB, n_tokens, TB)
        _store_tile(KC, VC, k_c, v_c, inv_k, inv_v, slot_c, mask_c,
                    block_stride, page_stride, head_stride, page_size, HB, BD)
        slot_c = slot_n
        mask_c = mask_n
        k_c = k_n
        v_c = v_n
        slot_n = slot_nn
    _store_tile(KC, VC, k_c, v_c, inv_k, inv_v, slot_c, mask_c,
                block_stride, page_stride, head_stride, page_size, HB, BD)


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
    n_tiles = triton.cdiv(T, tb)
    # balanced persistent grid: as few iterations as the cap allows, then as few programs
    iters = triton.cdiv(n_tiles, PROGS_PER_SM * n_sm)
    grid = (triton.cdiv(n_tiles, iters),)
    num_warps = max(1, min(16, (tb * hb * bd) // (32 * ELEMS_PER_THREAD)))
    args = (key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale, T, n_tiles,
            key.stride(0), key.stride(1), value.stride(0), value.stride(1),
            key_cache.stride(0), key_cache.stride(1), key_cache.stride(2),
            key_cache.shape[1], H, D)
    kw = dict(TB=tb, HB=hb, BD=bd, EVEN_H=hb == H, EVEN_D=bd == D,
              num_warps=num_warps, num_stages=1)
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
