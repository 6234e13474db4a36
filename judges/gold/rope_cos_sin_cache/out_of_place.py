"""Rotary embedding of q and k from a cos/sin cache: the expert, in-place rotated-dims-only store ablated.

Gold-set ablation `out_of_place`: the expert (tasks/rope_cos_sin_cache/expert.py) except that the
kernel writes into fresh output tensors allocated by run: it stores the rotated first RD dims of
every head and copies the pass-through dims RD..D-1 across (read and written), and run then
copies the outputs back into q and k (the caller still sees q and k updated in place).

For positions: [T] int64, q: [T, Hq, D], k: [T, Hk, D] (bf16 or fp16) and cos_sin_cache:
[P, RD] fp32 (cos | sin halves), for each token t with c = cache[pos[t], :RD/2] and
s = cache[pos[t], RD/2:], every head's pairs (x1, x2) of its first RD dims become
(x1 c - x2 s, x2 c + x1 s), computed in fp32; the pairs are the two halves (NeoX) or the
even/odd dims (GPT-J). Dims RD..D-1 keep their values.

Design:
  * one program per token rotates all of that token's q heads and k heads, so the token's
    position and its cos/sin row are loaded once (a gather by position from the cache) and
    reused for Hq + Hk heads; q and k are handled in the same launch;
  * each of q and k is one 2-D register tile [next_pow2(heads), RD] (heads padded and masked),
    addressed as token * stride_t + head * stride_h + dim with 64-bit token offsets;
  * NeoX: the two halves are two contiguous [heads, RD/2] vector loads; GPT-J: one contiguous
    [heads, RD] load, de-interleaved in registers with tl.reshape + tl.split and re-interleaved
    with tl.join before one contiguous store (no stride-2 accesses);
  * rotation math in fp32, one rounding at the store;
  * out of place: results go to q_out / k_out (torch.empty_like), the pass-through dims are
    copied by the kernel as a [heads, D - RD] tile, and run copies q_out / k_out into q / k;
  * num_warps from the tile size (about 8 elements per thread, one 16-byte bf16 vector).
Dtypes come from the pointers, so the same code runs bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rotate_heads(src, dst, stride_sh, stride_dh, n_heads, n_dims, cos, sin,
                  H_P: tl.constexpr, HALF: tl.constexpr, HALF_P: tl.constexpr,
                  TAIL_P: tl.constexpr, IS_NEOX: tl.constexpr):
    """Rotate the first 2*HALF dims of n_heads heads at `src` (one token) into `dst`, and copy
    dims 2*HALF..n_dims-1 unchanged. cos, sin: [HALF_P] fp32 (zero beyond HALF)."""
    dtype = dst.dtype.element_ty
    heads = tl.arange(0, H_P)
    head_mask = heads < n_heads
    if IS_NEOX:
        d = tl.max_contiguous(tl.multiple_of(tl.arange(0, HALF_P), HALF_P), HALF_P)
        mask = head_mask[:, None] & (d < HALF)[None, :]
        s1 = src + heads[:, None] * stride_sh + d[None, :]
        d1 = dst + heads[:, None] * stride_dh + d[None, :]
        x1 = tl.load(s1, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(s1 + HALF, mask=mask, other=0.0).to(tl.float32)
        c = cos[None, :]
        s = sin[None, :]
        tl.store(d1, (x1 * c - x2 * s).to(dtype), mask=mask)
        tl.store(d1 + HALF, (x2 * c + x1 * s).to(dtype), mask=mask)
    else:
        d = tl.max_contiguous(tl.multiple_of(tl.arange(0, 2 * HALF_P), 2 * HALF_P), 2 * HALF_P)
        mask = head_mask[:, None] & (d < 2 * HALF)[None, :]
        x = tl.load(src + heads[:, None] * stride_sh + d[None, :], mask=mask,
                    other=0.0).to(tl.float32)
        x1, x2 = tl.split(tl.reshape(x, (H_P, HALF_P, 2)))      # even dims, odd dims
        c = cos[None, :]
        s = sin[None, :]
        out = tl.join(x1 * c - x2 * s, x2 * c + x1 * s)          # [H_P, HALF_P, 2]
        tl.store(dst + heads[:, None] * stride_dh + d[None, :],
                 tl.reshape(out, (H_P, 2 * HALF_P)).to(dtype), mask=mask)
    if TAIL_P > 0:
        j = 2 * HALF + tl.arange(0, TAIL_P)
        tmask = head_mask[:, None] & (j < n_dims)[None, :]
        tail = tl.load(src + heads[:, None] * stride_sh + j[None, :], mask=tmask, other=0.0)
        tl.store(dst + heads[:, None] * stride_dh + j[None, :], tail, mask=tmask)


@triton.jit
def _rope_qk_kernel(
    POS, Q, K, QO, KO, CACHE,
    stride_qt, stride_qh, stride_kt, stride_kh,
    stride_qot, stride_qoh, stride_kot, stride_koh, stride_cache,
    n_qh, n_kh, n_dims,
    HQ_P: tl.constexpr, HK_P: tl.constexpr,
    HALF: tl.constexpr, HALF_P: tl.constexpr, TAIL_P: tl.constexpr,
    IS_NEOX: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    pos = tl.load(POS + t).to(tl.int64)
    i = tl.arange(0, HALF_P)
    imask = i < HALF
    row = CACHE + pos * stride_cache
    cos = tl.load(row + i, mask=imask, other=0.0)
    sin = tl.load(row + HALF + i, mask=imask, other=0.0)
    _rotate_heads(Q + t * stride_qt, QO + t * stride_qot, stride_qh, stride_qoh, n_qh, n_dims,
                  cos, sin, HQ_P, HALF, HALF_P, TAIL_P, IS_NEOX)
    _rotate_heads(K + t * stride_kt, KO + t * stride_kot, stride_kh, stride_koh, n_kh, n_dims,
                  cos, sin, HK_P, HALF, HALF_P, TAIL_P, IS_NEOX)


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
    q_out = torch.empty_like(q)
    k_out = torch.empty_like(k)
    half = rd // 2
    half_p = triton.next_power_of_2(half)
    tail_p = triton.next_power_of_2(D - rd) if D > rd else 0
    hq_p = triton.next_power_of_2(Hq)
    hk_p = triton.next_power_of_2(Hk)
    # ~8 elements of the larger (q) tile per thread; a power of two between 2 and 16
    num_warps = max(2, min(16, hq_p * 2 * half_p // 512))
    _rope_qk_kernel[(T,)](
        positions, q, k, q_out, k_out, cache,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1),
        q_out.stride(0), q_out.stride(1), k_out.stride(0), k_out.stride(1), cache.stride(0),
        Hq, Hk, D,
        HQ_P=hq_p, HK_P=hk_p, HALF=half, HALF_P=half_p, TAIL_P=tail_p, IS_NEOX=bool(is_neox),
        num_warps=num_warps)
    q.copy_(q_out)
    k.copy_(k_out)
    return None
