"""DeepSeek MLA decode (absorbed weights) over a paged latent cache: a plain Triton kernel.

For every sequence b (L_b tokens; token j in page kv_indices[kv_indptr[b] + j // PS], slot
j % PS) and head h:

    s[j]      = sm_scale * (q_nope[b, h] . ckv[j] + q_pe[b, h] . kpe[j])
    lse[b, h] = ln(sum_j exp(s[j]))
    o[b, h]   = sum_j exp(s[j] - lse[b, h]) * ckv[j]

One program per (sequence, head) walks the sequence in blocks of BLOCK_N tokens, gathering
each token's row through the page table; scores are elementwise products reduced with tl.sum
and the output is accumulated the same way, with an online softmax in natural exp.
"""

import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


@triton.jit
def _mla_decode_naive(QN, QP, CKV, KPE, KV_INDPTR, KV_INDICES, KV_LAST, O, LSE, sm_scale, H,
                      PS: tl.constexpr, DC: tl.constexpr, DR: tl.constexpr, BLOCK_N: tl.constexpr):
    """o[b, h], lse[b, h] for b = program_id(0), h = program_id(1)."""
    b = tl.program_id(0)
    h = tl.program_id(1)
    page_base = tl.load(KV_INDPTR + b)
    n_pages = tl.load(KV_INDPTR + b + 1) - page_base
    seq_len = (n_pages - 1) * PS + tl.load(KV_LAST + b)
    offs_c = tl.arange(0, DC)
    offs_r = tl.arange(0, DR)
    offs_n = tl.arange(0, BLOCK_N)
    qn = tl.load(QN + (b * H + h) * DC + offs_c).to(tl.float32)
    qp = tl.load(QP + (b * H + h) * DR + offs_r).to(tl.float32)
    m = -float("inf")
    l = 0.0
    acc = tl.zeros([DC], dtype=tl.float32)
    for n0 in range(0, seq_len, BLOCK_N):
        tok = n0 + offs_n
        ok = tok < seq_len
        page = tl.load(KV_INDICES + page_base + tok // PS, mask=ok, other=0)
        row = page.to(tl.int64) * PS + tok % PS
        ckv = tl.load(CKV + row[:, None] * DC + offs_c[None, :], mask=ok[:, None], other=0.0).to(tl.float32)
        kpe = tl.load(KPE + row[:, None] * DR + offs_r[None, :], mask=ok[:, None], other=0.0).to(tl.float32)
        s = (tl.sum(ckv * qn[None, :], 1) + tl.sum(kpe * qp[None, :], 1)) * sm_scale
        s = tl.where(ok, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, 0))
        p = tl.exp(s - m_new)
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, 0)
        acc = acc * alpha + tl.sum(p[:, None] * ckv, 0)
        m = m_new
    tl.store(O + (b * H + h) * DC + offs_c, (acc / l).to(O.dtype.element_ty))
    tl.store(LSE + b * H + h, m + tl.log(l))


def run(q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    q_nope, q_pe = q_nope.contiguous(), q_pe.contiguous()
    B, H, DC = q_nope.shape
    DR = q_pe.shape[2]
    PS = ckv_cache.shape[1]
    o = torch.empty((B, H, DC), dtype=q_nope.dtype, device=q_nope.device)
    lse = torch.empty((B, H), dtype=torch.float32, device=q_nope.device)
    if B * H == 0:
        return o, lse
    _mla_decode_naive[(B, H)](q_nope, q_pe, ckv_cache.contiguous(), kpe_cache.contiguous(), kv_indptr,
                              kv_indices, kv_last_page_len, o, lse, float(sm_scale), H,
                              PS=PS, DC=DC, DR=DR, BLOCK_N=32, num_warps=4)
    return o, lse
