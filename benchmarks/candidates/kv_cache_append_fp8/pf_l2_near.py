"""Append new K/V tokens to a paged FP8 KV cache, expert Triton implementation.

For every token i with s = slot_mapping[i] >= 0, and every kv head h:

    key_cache[s // PS, s % PS, h, :]   = clamp(key[i, h, :]   * (1 / k_scale), +-448) -> e4m3
    value_cache[s // PS, s % PS, h, :] = clamp(value[i, h, :] * (1 / v_scale), +-448) -> e4m3

Padding tokens (slot -1) write nothing; no other slot of the caches is touched.

Design (a memory-bound row scatter: one bf16 read and one fp8 write per element):
  * each program writes both K and V for all heads of TB consecutive tokens, as one
    [TB, Hkv, D] tile per tensor: a token's Hkv x D row is contiguous in the source and in its
    destination page slot, so one slot lookup per token serves 2 * Hkv * D elements; the TB
    slots are fetched with one vector load, and padding tokens (slot < 0) are masked off
    before any load of key or value, so they cost only their slot load and write nothing;
  * several tokens per program amortise the per-program work (slot load, scale loads,
    program launch and retire) over TB rows: TB = TILE / (next_pow2(Hkv) * next_pow2(D))
    tokens (TILE = 2048 elements, so 2 tokens for Hkv = 8, 4 for Hkv = 4), lowered until the
    grid keeps >= 2 programs per SM; the decode step (T = 256) thus stays at one token per
    program;
  * L2 prefetch half a resident wave ahead: a program's life is two dependent memory trips
    (slot, then the K/V rows it unmasks), so the rows of a tile cannot be requested before
    its slots arrive, and with only ~2.6 waves of programs per launch that serial
    latency shows as ramp, tail and idle residency. Program p therefore also loads the slots
    of tile p + PF (PF = PF_WAVES x RESIDENT_PER_SM x SMs tiles, PF_WAVES = 0.5: half the
    programs resident at once) and issues `prefetch.global.L2` for that tile's K and V rows
    (one per 32-byte sector, only for rows whose slot is >= 0, so padding rows are never
    fetched), and prefetches the slot_mapping sector of tile p + 2 PF. The program that later
    runs tile p + PF finds its slots and rows in L2 or already in flight, so its life is
    two L2 trips instead of two HBM trips. The shorter distance (against one whole wave in
    the sibling candidate) means ~80 % of the tiles instead of ~60 % are prefetched (all but
    the first PF), the first wave already requests the second half-wave's rows, and the
    prefetched-but-unread footprint in L2 is only ~6 MB, at the cost of a lead of about half
    a program lifetime. The prefetch is issued after the program's own K/V loads, so it
    never delays them; it is compiled out when no tile lies PF ahead (the decode step) and
    under TRITON_INTERPRET=1 (no inline PTX there);
  * the quantization is fused into the copy (no separate quant kernel, no bf16 staging),
    and each scale is loaded and inverted once per program (a multiply per element);
  * the destination address is built from separate block, page and head strides (vLLM's
    block_stride / page_stride / head_stride), so the same kernel serves NHD and HND pages
    while each head's D-vector stays one contiguous store;
  * page offsets are int64 (production pools exceed 2^31 elements): the slot stays int64
    through the page split and the block stride; the program's first-token offset into
    key / value (and the prefetched tile's) is int64, the offsets inside the tile are int32;
  * contiguous D columns with divisibility-16 strides give 16-byte bf16 loads and 16-byte
    fp8 stores per thread; the K and V loads are both issued before either store, and the
    sources are streamed with evict_first (they are dead after this kernel); the head and
    dim masks are compiled out when Hkv and D are powers of two;
  * num_warps follows the tile size: TB * Hkv * D / (32 * 16), i.e. 16 elements (two 16-byte
    loads) per thread per tensor, clamped to [1, 16] (4 warps for both prefill shapes, 1 warp
    for the decode step's 2 x 128 row);
  * on sm_90+ the kernel is launched with programmatic dependent launch (the decode step's
    append is a few microseconds of work behind a launch).
Launch configuration (H200, 132 SMs): llama8b prefill TB 2, 4 warps, 4096 programs, prefetch
distance 792 tiles; qwen3 chunked prefill TB 4, 4 warps, 4096 programs, distance 792;
decode TB 1, 1 warp, 256 programs, no prefetch (same kernel as before).
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
PROGS_PER_SM = 2       # lower TB until the grid has at least this many programs per SM
RESIDENT_PER_SM = 12   # ~the 4-warp programs resident per SM (40 registers)
PF_WAVES = 0.5         # prefetch distance in resident waves
SECTOR = 32            # bytes covered by one prefetch.global.L2


@triton.jit
def _prefetch_l2(ptr, pred):
    """prefetch.global.L2 of the sector holding each address where pred is true."""
    return tl.inline_asm_elementwise(
        "{\n.reg .pred p;\nsetp.ne.b32 p, $2, 0;\n@p prefetch.global.L2 [$1];\nmov.b32 $0, 0;\n}",
        "=r,l,r", [ptr.to(tl.int64), pred.to(tl.int32)], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _kv_append_fp8_kernel(
    K, V, KC, VC, SLOT, KS, VS, n_tokens, pf_tokens,
    stride_kt, stride_kh, stride_vt, stride_vh,
    block_stride, page_stride, head_stride,      # cache strides in elements (both caches)
    page_size, n_heads, head_dim,
    TB: tl.constexpr,          # tokens per program
    HB: tl.constexpr,          # next_pow2(n_heads)
    BD: tl.constexpr,          # next_pow2(head_dim)
    EVEN_H: tl.constexpr,      # HB == n_heads
    EVEN_D: tl.constexpr,      # BD == head_dim
    PREFETCH: tl.constexpr,    # look pf_tokens ahead (slots, then K/V rows into L2)
    PF_COLS: tl.constexpr,     # prefetched sectors per head row
    PF_ASM: tl.constexpr,      # emit the prefetch instructions (False under the interpreter)
    USE_PDL: tl.constexpr,
):
    """Tokens [pid * TB, pid * TB + TB): for each with slot_mapping[tok] >= 0, write
    clamp(key[tok] / k_scale) and clamp(value[tok] / v_scale), as fp8, to page
    slot // page_size, row slot % page_size. Then prefetch into L2 the valid rows of the
    tile pf_tokens ahead and the slots of the tile 2 * pf_tokens ahead."""
    pid = tl.program_id(0)
    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    tok0 = pid * TB
    t = tl.arange(0, TB)
    h = tl.arange(0, HB)
    d = tl.max_contiguous(tl.multiple_of(tl.arange(0, BD), BD), BD)
    # one vector load of the TB slots; tokens past the end read as padding
    slot = tl.load(SLOT + tok0 + t, mask=tok0 + t < n_tokens, other=-1).to(tl.int64)
    if PREFETCH:
        # the slots of the tile that will run one resident wave later (an L2 hit once this
        # launch is past its first wave), and an L2 prefetch of the slots one wave further
        ftok = tok0 + pf_tokens + t
        fslot = tl.load(SLOT + ftok, mask=ftok < n_tokens, other=-1)
        if PF_ASM:
            _prefetch_l2(SLOT + ftok + pf_tokens, ftok + pf_tokens < n_tokens)
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
    if PREFETCH:
        # K and V rows of the tile pf_tokens ahead whose slot is >= 0 (padding rows are
        # never fetched), one 32-byte sector per element, issued after this tile's loads
        c = tl.arange(0, PF_COLS) * (BD // PF_COLS)
        fmask = (fslot >= 0)[:, None, None]
        if not EVEN_H:
            fmask = fmask & (h < n_heads)[None, :, None]
        if not EVEN_D:
            fmask = fmask & (c < head_dim)[None, None, :]
        ftok64 = (tok0 + pf_tokens).to(tl.int64)
        fk = K + ftok64 * stride_kt + (t[:, None, None] * stride_kt
                                       + (h[:, None] * stride_kh + c[None, :])[None, :, :])
        fv = V + ftok64 * stride_vt + (t[:, None, None] * stride_vt
                                       + (h[:, None] * stride_vh + c[None, :])[None, :, :])
        if PF_ASM:
            _prefetch_l2(fk, fmask)
            _prefetch_l2(fv, fmask)
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


_mode = {}             # (device, prefetch) -> the (PF_ASM, USE_PDL) that compiled and launched
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
    min_progs = PROGS_PER_SM * n_sm
    while tb > 1 and triton.cdiv(T, tb) < min_progs:
        tb //= 2
    num_warps = max(1, min(16, (tb * hb * bd) // (32 * ELEMS_PER_THREAD)))
    n_progs = triton.cdiv(T, tb)
    pf_progs = max(1, int(PF_WAVES * RESIDENT_PER_SM * n_sm))
    prefetch = n_progs > pf_progs                 # some tile lies one wave ahead
    pf_cols = max(1, min(bd, (bd * key.element_size()) // SECTOR))
    args = (key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale, T,
            pf_progs * tb,
            key.stride(0), key.stride(1), value.stride(0), value.stride(1),
            key_cache.stride(0), key_cache.stride(1), key_cache.stride(2),
            key_cache.shape[1], H, D)
    kw = dict(TB=tb, HB=hb, BD=bd, EVEN_H=hb == H, EVEN_D=bd == D,
              PREFETCH=prefetch, PF_COLS=pf_cols, num_warps=num_warps)
    grid = (n_progs,)
    if _INTERPRET or not key.is_cuda:
        _kv_append_fp8_kernel[grid](*args, PF_ASM=False, USE_PDL=False, **kw)
        return None
    dev = key.device.index
    mode = _mode.get((dev, prefetch))
    if mode is None:
        # (PF_ASM, USE_PDL), best first: PDL needs sm_90 (prefetch.global.L2 is sm_80+); a
        # toolchain that rejects either falls back to the kernel without it
        sm90 = torch.cuda.get_device_capability(key.device)[0] >= 9
        modes = [(a, p) for p in (True, False) for a in (True, False) if sm90 or not p]
        for i, (asm, pdl) in enumerate(modes):
            try:
                _launch(grid, args, kw, asm, pdl)
            except Exception:
                if i == len(modes) - 1:
                    raise
                continue
            _mode[(dev, prefetch)] = (asm, pdl)
            return None
    _launch(grid, args, kw, *mode)
    return None


def _launch(grid, args, kw, asm, pdl):
    if pdl:
        _kv_append_fp8_kernel[grid](*args, PF_ASM=asm, USE_PDL=True, launch_pdl=True, **kw)
    else:
        _kv_append_fp8_kernel[grid](*args, PF_ASM=asm, USE_PDL=False, **kw)
