"""Long-context GQA decode attention over a paged KV cache: a plain Triton kernel.

Same computation as the reference: for each sequence b and query head h (kv head
h // (Hq // Hkv)), o[b, h] = softmax(sm_scale * q[b, h] . K_b^T) V_b over the sequence's tokens
(page kv_indices[kv_indptr[b] + j // PS], slot j % PS), and lse[b, h] = ln(sum exp(...)).

Deliberately straightforward: one program per (sequence, query head) walks the whole sequence
in 32-token tiles (page ids looked up per token), computes the scores with an elementwise
product and a row sum, and keeps an online softmax with natural exp. There is no splitting of
the KV range, so a batch of one sequence runs B * Hq programs, however long the context.
"""

import torch
import triton
import triton.language as tl

BLOCK_N = 32


@triton.jit
def _naive_decode(Q, K, V, O, LSE, KV_INDPTR, KV_INDICES, LAST_LEN, sm_scale,
                  stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                  stride_vp, stride_vt, stride_vh, stride_ob, stride_oh, stride_lb,
                  GROUP, PAGE_SIZE,
                  HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    g = h // GROUP
    p0 = tl.load(KV_INDPTR + b)
    n_pages = tl.load(KV_INDPTR + b + 1) - p0
    seq_len = (n_pages - 1) * PAGE_SIZE + tl.load(LAST_LEN + b)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + b * stride_qb + h * stride_qh + offs_d).to(tl.float32)

    m_i = -float("inf")
    l_i = 0.0
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        tok = start + offs_n
        ok = tok < seq_len
        page = tl.load(KV_INDICES + p0 + tok // PAGE_SIZE, mask=ok, other=0).to(tl.int64)
        k_rows = page * stride_kp + (tok % PAGE_SIZE) * stride_kt + g * stride_kh
        v_rows = page * stride_vp + (tok % PAGE_SIZE) * stride_vt + g * stride_vh
        k = tl.load(K + k_rows[:, None] + offs_d[None, :], mask=ok[:, None], other=0.0).to(tl.float32)
        v = tl.load(V + v_rows[:, None] + offs_d[None, :], mask=ok[:, None], other=0.0).to(tl.float32)
        s = tl.sum(q[None, :] * k, 1) * sm_scale
        s = tl.where(ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 0))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new)
        l_i = l_i * alpha + tl.sum(p, 0)
        acc = acc * alpha + tl.sum(p[:, None] * v, 0)
        m_i = m_new

    tl.store(O + b * stride_ob + h * stride_oh + offs_d, (acc / l_i).to(O.dtype.element_ty))
    tl.store(LSE + b * stride_lb + h, m_i + tl.log(l_i))


def run(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    B, Hq, D = q.shape
    _, PS, Hkv, _ = k_cache.shape
    o = torch.empty_like(q)
    lse = torch.empty((B, Hq), dtype=torch.float32, device=q.device)
    if B == 0:
        return o, lse
    _naive_decode[(B, Hq)](
        q, k_cache, v_cache, o, lse, kv_indptr, kv_indices, kv_last_page_len, float(sm_scale),
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        o.stride(0), o.stride(1), lse.stride(0), Hq // Hkv, PS,
        HEAD_DIM=D, BLOCK_N=BLOCK_N, num_warps=4)
    return o, lse
