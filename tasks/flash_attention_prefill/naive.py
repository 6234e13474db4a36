"""Causal GQA varlen prefill attention, forward: a plain Triton flash-attention kernel.

Same computation as the reference: per sequence (cu_seqlens), per q-head h (kv head
h // (Hq // Hkv)), o = softmax(sm_scale * q k^T + causal mask) v and lse = ln(sum exp(...)).

Deliberately straightforward: one program per (32-query tile, sequence, q-head), an online
softmax with natural exp, and a loop over *all* KV tiles of the sequence, each masked (causal and
sequence end) — no skipping of the tiles above the diagonal, no tuning.
"""

import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32


@triton.jit
def _naive_attn(Q, K, V, O, LSE, CU_SEQLENS, sm_scale,
                stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh,
                stride_ot, stride_oh, stride_lt, Hq, GROUP,
                HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    seq = pid_bh // Hq
    h = pid_bh % Hq
    kvh = h // GROUP
    seq_start = tl.load(CU_SEQLENS + seq)
    seq_len = tl.load(CU_SEQLENS + seq + 1) - seq_start
    if pid_m * BLOCK_M >= seq_len:
        return
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    tok_m = (seq_start + offs_m).to(tl.int64)
    q = tl.load(Q + tok_m[:, None] * stride_qt + h * stride_qh + offs_d[None, :],
                mask=offs_m[:, None] < seq_len, other=0.0)

    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        kv_pos = start_n + offs_n
        kv_ok = kv_pos < seq_len
        tok_n = (seq_start + kv_pos).to(tl.int64)
        k = tl.load(K + tok_n[:, None] * stride_kt + kvh * stride_kh + offs_d[None, :],
                    mask=kv_ok[:, None], other=0.0)
        v = tl.load(V + tok_n[:, None] * stride_vt + kvh * stride_vh + offs_d[None, :],
                    mask=kv_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = (offs_m[:, None] >= kv_pos[None, :]) & kv_ok[None, :]
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    o = acc / l_i[:, None]
    row_ok = offs_m < seq_len
    tl.store(O + tok_m[:, None] * stride_ot + h * stride_oh + offs_d[None, :],
             o.to(O.dtype.element_ty), mask=row_ok[:, None])
    tl.store(LSE + tok_m * stride_lt + h, m_i + tl.log(l_i), mask=row_ok)


def run(q, k, v, cu_seqlens, sm_scale):
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    T, Hq, D = q.shape
    Hkv = k.shape[1]
    B = cu_seqlens.numel() - 1
    o = torch.empty_like(q)
    lse = torch.empty((T, Hq), dtype=torch.float32, device=q.device)
    if T == 0 or B == 0:
        return o, lse
    max_seqlen = int((cu_seqlens[1:] - cu_seqlens[:-1]).max().item())
    grid = (triton.cdiv(max_seqlen, BLOCK_M), B * Hq)
    _naive_attn[grid](q, k, v, o, lse, cu_seqlens, float(sm_scale),
                      q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
                      o.stride(0), o.stride(1), lse.stride(0), Hq, Hq // Hkv,
                      HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4, num_stages=1)
    return o, lse
