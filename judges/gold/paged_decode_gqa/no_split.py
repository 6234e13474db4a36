"""GQA decode attention over a paged KV cache: one Triton kernel, KV splitting ablated.

Gold-set ablation `no_split`: the kernel of tasks/paged_decode_gqa/expert.py without its split-KV
work items and combine kernel. The grid is always (B, Hkv): one program walks its sequence's
whole KV range, however few (sequence, kv head) pairs there are, and writes o and the LSE
itself. Everything else (grouped tensor-core tile, exp2 online softmax, vector page gather,
pipelined loads) is the expert's.

Computes, for each sequence b (n_b tokens, token j in pool page
kv_indices[kv_indptr[b] + j // PS], slot j % PS) and query head h (kv head g = h // G):

    s[j]      = sm_scale * q[b, h] . k[b, j, g]
    lse[b, h] = ln(sum_j exp(s[j]))                        (float32, natural log)
    o[b, h]   = sum_j exp(s[j] - lse[b, h]) * v[b, j, g]   (q's dtype)

Design:
- One program per (sequence, kv head): the G query heads of the kv head form one [BLOCK_H, D]
  tile (G padded to >= 16 rows), so every K/V tile loaded serves the whole group through two
  tensor-core dots (Q.K^T and P.V).
- Online softmax in the exp2 domain (sm_scale * log2 e folded into one multiplier), running max
  and sum in fp32, P cast to the input dtype for the P.V dot, one division at the end.
- Paged gather by vector: per BLOCK_N-token tile, one vector load of the page ids
  (kv_indices[start + offs // PS]) gives the token rows; K and V rows are 16-byte vectors along
  D (contiguity hints), 64-bit addressing, loads pipelined by num_stages.
"""

import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
LOG2E = 1.4426950408889634


@triton.jit
def _paged_decode_kernel(
    Q, K, V, O, LSE, KV_INDPTR, KV_INDICES, LAST_LEN, qk_scale,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    stride_ob, stride_oh, stride_lb,
    PAGE_SIZE: tl.constexpr, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """Sequence b = program_id(0), kv head program_id(1): attention of the GROUP query heads
    over all the sequence's tokens; writes o and the natural-log LSE."""
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    p0 = tl.load(KV_INDPTR + b).to(tl.int64)
    p1 = tl.load(KV_INDPTR + b + 1).to(tl.int64)
    seq_len = ((p1 - p0 - 1) * PAGE_SIZE + tl.load(LAST_LEN + b)).to(tl.int32)

    offs_h = tl.arange(0, BLOCK_H)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.max_contiguous(tl.multiple_of(tl.arange(0, HEAD_DIM), HEAD_DIM), HEAD_DIM)
    head = kvh * GROUP + offs_h
    h_ok = offs_h < GROUP
    b64 = b.to(tl.int64)
    q = tl.load(Q + b64 * stride_qb + head[:, None] * stride_qh + offs_d[None, :],
                mask=h_ok[:, None], other=0.0)                 # [BLOCK_H, D], rows >= GROUP zero
    k_head = K + kvh * stride_kh
    v_head = V + kvh * stride_vh

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, HEAD_DIM], dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        tok = start + offs_n
        valid = tok < seq_len
        # one vector load of the tile's page ids, then per-token rows of the pool
        page = tl.load(KV_INDICES + p0 + tok // PAGE_SIZE, mask=valid, other=0).to(tl.int64)
        slot = tok % PAGE_SIZE
        k_row = page * stride_kp + slot * stride_kt
        v_row = page * stride_vp + slot * stride_vt
        k = tl.load(k_head + k_row[:, None] + offs_d[None, :], mask=valid[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k))                            # [BLOCK_H, BLOCK_N] fp32
        s = tl.where(valid[None, :], qk * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_head + v_row[:, None] + offs_d[None, :], mask=valid[:, None], other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new

    o = acc / l_i[:, None]
    tl.store(O + b64 * stride_ob + head[:, None] * stride_oh + offs_d[None, :],
             o.to(O.dtype.element_ty), mask=h_ok[:, None])
    tl.store(LSE + b64 * stride_lb + head, (m_i + tl.math.log2(l_i)) * 0.6931471805599453,
             mask=h_ok)


def _configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_N": 16}, num_warps=4, num_stages=1)]
    return [triton.Config({"BLOCK_N": 64}, num_warps=4, num_stages=2),
            triton.Config({"BLOCK_N": 64}, num_warps=4, num_stages=3),
            triton.Config({"BLOCK_N": 32}, num_warps=4, num_stages=4)]


_kernel_tuned = triton.autotune(
    configs=_configs(), key=["PAGE_SIZE", "GROUP", "HEAD_DIM"])(_paged_decode_kernel)


def run(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    B, Hq, D = q.shape
    NP, PS, Hkv, _ = k_cache.shape
    G = Hq // Hkv
    o = torch.empty_like(q)
    lse = torch.empty((B, Hq), dtype=torch.float32, device=q.device)
    if B == 0:
        return o, lse
    assert q.stride(-1) == 1 and k_cache.stride(-1) == 1 and v_cache.stride(-1) == 1
    _kernel_tuned[(B, Hkv)](
        q, k_cache, v_cache, o, lse, kv_indptr, kv_indices, kv_last_page_len,
        float(sm_scale) * LOG2E,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        o.stride(0), o.stride(1), lse.stride(0),
        PAGE_SIZE=PS, GROUP=G, HEAD_DIM=D, BLOCK_H=max(16, triton.next_power_of_2(G)))
    return o, lse
