"""Rotary embedding of q and k from a cos/sin cache, in place: plain Triton implementation.

For each token t, head h and i < RD/2, with c = cache[pos[t], i] and s = cache[pos[t], RD/2 + i],
the pair (x1, x2) (dims i and RD/2 + i for NeoX, 2i and 2i + 1 for GPT-J) becomes
(x1 c - x2 s, x2 c + x1 s), in fp32, stored in place. Dims RD..D-1 are not touched.
One program per (token, head), one launch for q and one for k; the cos/sin row is reloaded for
every head and GPT-J pairs are read with stride-2 loads.
"""
import triton
import triton.language as tl


@triton.jit
def _rope_naive_kernel(POS, X, CACHE, n_heads, stride_t, stride_h, stride_cache,
                       HALF: tl.constexpr, HALF_P: tl.constexpr, IS_NEOX: tl.constexpr):
    t = tl.program_id(0) // n_heads
    h = tl.program_id(0) % n_heads
    pos = tl.load(POS + t)
    i = tl.arange(0, HALF_P)
    mask = i < HALF
    c = tl.load(CACHE + pos * stride_cache + i, mask=mask, other=0.0)
    s = tl.load(CACHE + pos * stride_cache + HALF + i, mask=mask, other=0.0)
    base = X + t.to(tl.int64) * stride_t + h * stride_h
    if IS_NEOX:
        p1 = base + i
        p2 = base + HALF + i
    else:
        p1 = base + 2 * i
        p2 = base + 2 * i + 1
    x1 = tl.load(p1, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(p2, mask=mask, other=0.0).to(tl.float32)
    tl.store(p1, (x1 * c - x2 * s).to(X.dtype.element_ty), mask=mask)
    tl.store(p2, (x2 * c + x1 * s).to(X.dtype.element_ty), mask=mask)


def run(positions, q, k, cos_sin_cache, is_neox):
    T = q.shape[0]
    half = cos_sin_cache.shape[-1] // 2
    for x in (q, k):
        n_heads = x.shape[1]
        if T * n_heads == 0:
            continue
        _rope_naive_kernel[(T * n_heads,)](
            positions, x, cos_sin_cache, n_heads, x.stride(0), x.stride(1), cos_sin_cache.stride(0),
            HALF=half, HALF_P=triton.next_power_of_2(half), IS_NEOX=bool(is_neox), num_warps=1)
    return None
