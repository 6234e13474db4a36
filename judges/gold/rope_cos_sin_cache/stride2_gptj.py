"""Rotary embedding of q and k from a cos/sin cache, in place: the expert, GPT-J de-interleave ablated.

Gold-set ablation `stride2_gptj`: identical to tasks/rope_cos_sin_cache/expert.py except for the
GPT-J (interleaved) style: the even and odd dims of each pair are read and written with two
stride-2 accesses (offsets 2*i and 2*i + 1) instead of one contiguous load that is
de-interleaved in registers and re-interleaved before one contiguous store. NeoX is unchanged.

For positions: [T] int64, q: [T, Hq, D], k: [T, Hk, D] (bf16 or fp16) and cos_sin_cache:
[P, RD] fp32 (cos | sin halves), for each token t with c = cache[pos[t], :RD/2] and
s = cache[pos[t], RD/2:], every head's pairs (x1, x2) of its first RD dims become
(x1 c - x2 s, x2 c + x1 s), computed in fp32 and stored in place; the pairs are the two halves
(NeoX) or the even/odd dims (GPT-J). Dims RD..D-1 are not touched.

Design:
  * one program per token rotates all of that token's q heads and k heads, so the token's
    position and its cos/sin row are loaded once (a gather by position from the cache) and
    reused for Hq + Hk heads; q and k are handled in the same launch;
  * each of q and k is one 2-D register tile [next_pow2(heads), RD/2] per half of the pairs
    (heads padded and masked), addressed as token * stride_t + head * stride_h + dim with
    64-bit token offsets;
  * NeoX: the two halves are two contiguous [heads, RD/2] vector loads; GPT-J: the first and
    second members of the pairs are two [heads, RD/2] loads of the even and the odd dims
    (stride 2), stored back the same way;
  * rotation math in fp32, one rounding at the store; only the first RD dims are loaded and
    stored, in place through the input pointers;
  * num_warps from the tile size (about 8 elements per thread, one 16-byte bf16 vector).
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
    i = tl.arange(0, HALF_P)
    mask = head_mask[:, None] & (i < HALF)[None, :]
    rows = base + heads[:, None] * stride_h
    if IS_NEOX:
        i = tl.max_contiguous(tl.multiple_of(i, HALF_P), HALF_P)
        p1 = rows + i[None, :]
        p2 = p1 + HALF
    else:
        p1 = rows + 2 * i[None, :]          # even dims
        p2 = rows + 2 * i[None, :] + 1      # odd dims
    x1 = tl.load(p1, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(p2, mask=mask, other=0.0).to(tl.float32)
    c = cos[None, :]
    s = sin[None, :]
    tl.store(p1, (x1 * c - x2 * s).to(dtype), mask=mask)
    tl.store(p2, (x2 * c + x1 * s).to(dtype), mask=mask)


@triton.jit
def _rope_qk_kernel(
    POS, Q, K, CACHE,
    stride_qt, stride_qh, stride_kt, stride_kh, stride_cache,
    n_qh, n_kh,
    HQ_P: tl.constexpr, HK_P: tl.constexpr,
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
    _rotate_heads(Q + t * stride_qt, stride_qh, n_qh, cos, sin, HQ_P, HALF, HALF_P, IS_NEOX)
    _rotate_heads(K + t * stride_kt, stride_kh, n_kh, cos, sin, HK_P, HALF, HALF_P, IS_NEOX)


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
    hq_p = triton.next_power_of_2(Hq)
    hk_p = triton.next_power_of_2(Hk)
    # ~8 elements of the larger (q) tile per thread; a power of two between 2 and 16
    num_warps = max(2, min(16, hq_p * 2 * half_p // 512))
    _rope_qk_kernel[(T,)](
        positions, q, k, cache,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), cache.stride(0),
        Hq, Hk,
        HQ_P=hq_p, HK_P=hk_p, HALF=half, HALF_P=half_p, IS_NEOX=bool(is_neox),
        num_warps=num_warps)
    return None
