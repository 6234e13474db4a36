"""Rotary embedding of q and k from a cos/sin cache, in place: the expert, q/k fusion ablated.

Gold-set ablation `separate_qk`: the expert (tasks/rope_cos_sin_cache/expert.py) except that q
and k are rotated by two launches of a one-tensor kernel: the first rotates all q heads, the
second all k heads, and each launch loads the token's position and cos/sin row again.

For positions: [T] int64, q: [T, Hq, D], k: [T, Hk, D] (bf16 or fp16) and cos_sin_cache:
[P, RD] fp32 (cos | sin halves), for each token t with c = cache[pos[t], :RD/2] and
s = cache[pos[t], RD/2:], every head's pairs (x1, x2) of its first RD dims become
(x1 c - x2 s, x2 c + x1 s), computed in fp32 and stored in place; the pairs are the two halves
(NeoX) or the even/odd dims (GPT-J). Dims RD..D-1 are not touched.

Design:
  * two launches per call (q, then k); in each, one program per token rotates all of that
    token's heads of the one tensor, so the position and cos/sin row (a gather by position from
    the cache) are loaded once per token per tensor and reused for its heads;
  * each tensor is one 2-D register tile [next_pow2(heads), RD] (heads padded and masked),
    addressed as token * stride_t + head * stride_h + dim with 64-bit token offsets;
  * NeoX: the two halves are two contiguous [heads, RD/2] vector loads; GPT-J: one contiguous
    [heads, RD] load, de-interleaved in registers with tl.reshape + tl.split and re-interleaved
    with tl.join before one contiguous store (no stride-2 accesses);
  * rotation math in fp32, one rounding at the store; only the first RD dims are loaded and
    stored, in place through the input pointers;
  * num_warps from each launch's tile size (about 8 elements per thread).
Dtypes come from the pointers, so the same code runs bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rotate_heads(base, stride_h, n_heads, cos, sin,
                  H_P: tl.constexpr, HALF: tl.constexpr, HALF_P: tl.constexpr,
                  IS_NEOX: tl.constexpr):
    """Rotate the first 2*HALF dims of n_heads heads starting at `base` (one token), in place.
    cos, sin: [HALF_P] fp32 (zero beyond HALF)."""
    dtype = base.dtype.element_ty
    heads = tl.arange(0, H_P)
    head_mask = heads < n_heads
    if IS_NEOX:
        d = tl.max_contiguous(tl.multiple_of(tl.arange(0, HALF_P), HALF_P), HALF_P)
        mask = head_mask[:, None] & (d < HALF)[None, :]
        p1 = base + heads[:, None] * stride_h + d[None, :]
        p2 = p1 + HALF
        x1 = tl.load(p1, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(p2, mask=mask, other=0.0).to(tl.float32)
        c = cos[None, :]
        s = sin[None, :]
        tl.store(p1, (x1 * c - x2 * s).to(dtype), mask=mask)
        tl.store(p2, (x2 * c + x1 * s).to(dtype), mask=mask)
    else:
        d = tl.max_contiguous(tl.multiple_of(tl.arange(0, 2 * HALF_P), 2 * HALF_P), 2 * HALF_P)
        mask = head_mask[:, None] & (d < 2 * HALF)[None, :]
        p = base + heads[:, None] * stride_h + d[None, :]
        x = tl.load(p, mask=mask, other=0.0).to(tl.float32)
        x1, x2 = tl.split(tl.reshape(x, (H_P, HALF_P, 2)))      # even dims, odd dims
        c = cos[None, :]
        s = sin[None, :]
        out = tl.join(x1 * c - x2 * s, x2 * c + x1 * s)          # [H_P, HALF_P, 2]
        tl.store(p, tl.reshape(out, (H_P, 2 * HALF_P)).to(dtype), mask=mask)


@triton.jit
def _rope_kernel(
    POS, X, CACHE,
    stride_xt, stride_xh, stride_cache,
    n_heads,
    H_P: tl.constexpr,
    HALF: tl.constexpr, HALF_P: tl.constexpr,
    IS_NEOX: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    pos = tl.load(POS + t).to(tl.int64)
    i = tl.arange(0, HALF_P)
    imask = i < HALF
    row = CACHE + pos * stride_cache
    cos = tl.load(row + i, mask=imask, other=0.0)
    sin = tl.load(row + HALF + i, mask=imask, other=0.0)
    _rotate_heads(X + t * stride_xt, stride_xh, n_heads, cos, sin, H_P, HALF, HALF_P, IS_NEOX)


def run(positions, q, k, cos_sin_cache, is_neox):
    T, Hq, D = q.shape
    Hk = k.shape[1]
    rd = cos_sin_cache.shape[-1]
    assert rd % 2 == 0 and rd <= D and k.shape[0] == T and k.shape[2] == D
    if T == 0:
        return None
    if q.stride(-1) != 1 or k.stride(-1) != 1:
        qc, kc = q.contiguous(), k.contiguous()
        run(positions, qc, kc, cos_sin_cache, is_neox)
        q.copy_(qc)
        k.copy_(kc)
        return None
    cache = cos_sin_cache if cos_sin_cache.stride(-1) == 1 else cos_sin_cache.contiguous()
    positions = positions.contiguous()
    half = rd // 2
    half_p = triton.next_power_of_2(half)
    for x in (q, k):
        n_heads = x.shape[1]
        if n_heads == 0:
            continue
        h_p = triton.next_power_of_2(n_heads)
        # ~8 elements of the tile per thread; a power of two between 2 and 16
        num_warps = max(2, min(16, h_p * 2 * half_p // 512))
        _rope_kernel[(T,)](
            positions, x, cache,
            x.stride(0), x.stride(1), cache.stride(0),
            n_heads,
            H_P=h_p, HALF=half, HALF_P=half_p, IS_NEOX=bool(is_neox),
            num_warps=num_warps)
    return None
