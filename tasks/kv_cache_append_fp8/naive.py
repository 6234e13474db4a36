"""Append new K/V tokens to a paged FP8 KV cache, plain Triton implementation.

For every token i with s = slot_mapping[i] >= 0 and kv head h:

    cache[s // PS, s % PS, h, :] = clamp(src[i, h, :] / scale, -448, 448) -> float8_e4m3fn

run for (key, key_cache, k_scale) and then for (value, value_cache, v_scale): two launches of
one program per (token, head), a per-element division by the scale, padding tokens masked off.
Assumes contiguous [T, Hkv, D] sources and contiguous [NB, PS, Hkv, D] caches.
"""
import triton
import triton.language as tl


@triton.jit
def _append_naive_kernel(SRC, CACHE, SLOT, SCALE, page_size, n_heads, head_dim,
                         BD: tl.constexpr):
    """(token, head): cache[slot // PS, slot % PS, head] = clamp(src[token, head] / scale) -> fp8,
    nothing when slot < 0."""
    tok = tl.program_id(0)
    h = tl.program_id(1)
    slot = tl.load(SLOT + tok)
    d = tl.arange(0, BD)
    slots = tl.zeros([BD], dtype=tl.int64) + slot     # the slot, broadcast over the row
    mask = (d < head_dim) & (slots >= 0)
    x = tl.load(SRC + (tok * n_heads + h) * head_dim + d, mask=mask, other=0.0).to(tl.float32)
    q = tl.clamp(x / tl.load(SCALE), -448.0, 448.0)
    blk = slot // page_size
    off = slot % page_size
    dst = ((blk * page_size + off) * n_heads + h) * head_dim + d
    tl.store(CACHE + dst, q.to(CACHE.dtype.element_ty), mask=mask)


def run(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale):
    T, H, D = key.shape
    if T == 0:
        return None
    PS = key_cache.shape[1]
    for src, cache, scale in ((key.contiguous(), key_cache, k_scale),
                              (value.contiguous(), value_cache, v_scale)):
        _append_naive_kernel[(T, H)](src, cache, slot_mapping, scale, PS, H, D,
                                     BD=triton.next_power_of_2(D), num_warps=4)
    return None
