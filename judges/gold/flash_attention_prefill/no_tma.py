"""Causal GQA varlen prefill attention, forward, as one Triton flash-attention kernel,
with TMA and the tuned Hopper configs ablated.

Gold-set ablation `no_tma`: identical to tasks/flash_attention_prefill/expert.py except that Q,
K and V are always read with (masked) pointer loads: no tensor descriptors and no descriptor
block-shape hook, and instead of the autotuned device-dependent config list the kernel is
launched with one plain config on every device (BLOCK_M 64, BLOCK_N 64, 4 warps, 2 stages).

Computes, for each packed sequence b (tokens cu_seqlens[b]:cu_seqlens[b+1], q_len == kv_len,
causal mask aligned at position 0), each query head h (kv head h // (Hq // Hkv)) and position i:

    s[i, j]   = sm_scale * q[i, h] . k[j, kvh]                 (j <= i)
    lse[i, h] = ln(sum_j exp(s[i, j]))                          (float32)
    o[i, h]   = sum_j exp(s[i, j] - lse[i, h]) * v[j, kvh]      (q's dtype)

Design:
- One program per (BLOCK_M query tile, sequence, q-head); the Q tile stays on chip for the whole
  KV loop. The grid is (Hq, T // BLOCK_M + B): axis 1 enumerates the query tiles of all packed
  sequences (sequence b owns slots cu_seqlens[b] // BLOCK_M + b onwards; a program finds its
  sequence by binary search over cu_seqlens, so the host never reads the lengths and the launch
  needs no device sync). Axis 1 is walked in reverse so each sequence's heaviest causal tiles
  start first; the q-heads of one tile are adjacent so the GQA group shares K/V through L2.
- Online softmax in the exp2 domain: sm_scale*log2(e) is folded into one multiplier, the running
  max m and sum l are kept in fp32, acc is rescaled by exp2(m_old - m_new).
- Causal block skipping: an unmasked stage over the KV tiles strictly below the diagonal block,
  then a masked stage over the diagonal block only; KV tiles above it are never visited.
- P is cast to the input dtype before the P.V tensor-core dot; acc stays fp32 and is divided by l
  once in the epilogue, which also writes lse = (m + log2 l) * ln 2.
- Q, K and V tiles are read with pointer loads; loads that can cross the sequence end (Q, the
  diagonal K/V block) are masked.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _kv_stage(acc, l_i, m_i, q, K_base, V_base,
              stride_kt, stride_vt, seq_len, start_m, qk_scale, offs_m, offs_n, offs_d,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, DIAG: tl.constexpr):
    if DIAG:
        # the diagonal block: keys start_m*BLOCK_M .. min(+BLOCK_M, seq_len), causally masked
        lo = start_m * BLOCK_M
        hi = tl.minimum(lo + BLOCK_M, seq_len)
    else:
        # off-diagonal blocks: every key is <= every query of the tile, no mask at all
        lo = 0
        hi = start_m * BLOCK_M
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        kv_pos = start_n + offs_n
        k_ptrs = K_base + kv_pos[:, None] * stride_kt + offs_d[None, :]
        if DIAG:
            k = tl.load(k_ptrs, mask=kv_pos[:, None] < seq_len, other=0.0)
        else:
            k = tl.load(k_ptrs)
        qk = tl.dot(q, tl.trans(k))
        if DIAG:
            causal = offs_m[:, None] >= (start_n + offs_n)[None, :]
            qk = tl.where(causal, qk * qk_scale, float("-inf"))
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.math.exp2(qk - m_ij[:, None])
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v_ptrs = V_base + kv_pos[:, None] * stride_vt + offs_d[None, :]
        if DIAG:
            v = tl.load(v_ptrs, mask=kv_pos[:, None] < seq_len, other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def _find_seq(CU_SEQLENS, tile, num_seqs, BLOCK_M: tl.constexpr):
    """Largest b with cu_seqlens[b] // BLOCK_M + b <= tile (sequence b owns the tile slots
    cu_seqlens[b] // BLOCK_M + b .. cu_seqlens[b + 1] // BLOCK_M + b, i.e. >= cdiv(len, BLOCK_M))."""
    lo = tl.full([], 0, tl.int32)
    hi = tl.full([], 0, tl.int32) + num_seqs
    while lo < hi:
        mid = (lo + hi) // 2
        first = tl.load(CU_SEQLENS + mid) // BLOCK_M + mid
        if first <= tile:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@triton.jit
def _fa_prefill_fwd(Q, K, V, O, LSE, CU_SEQLENS, qk_scale,
                    stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh,
                    stride_ot, stride_oh, stride_lt, num_seqs, GROUP,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    tl.static_assert(BLOCK_M % BLOCK_N == 0)
    # grid: (Hq, tile slots of all sequences); slots are walked in reverse so that within each
    # sequence the heavy (late) causal tiles start first, and the q-heads of one tile run together
    h = tl.program_id(0)
    tile = tl.num_programs(1) - 1 - tl.program_id(1)
    seq = _find_seq(CU_SEQLENS, tile, num_seqs, BLOCK_M)
    seq_start = tl.load(CU_SEQLENS + seq)
    seq_len = tl.load(CU_SEQLENS + seq + 1) - seq_start
    start_m = tile - (seq_start // BLOCK_M + seq)
    if start_m * BLOCK_M >= seq_len:
        return
    kvh = h // GROUP

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # query positions inside the sequence
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row0 = seq_start.to(tl.int64)
    K_base = K + row0 * stride_kt + kvh * stride_kh
    V_base = V + row0 * stride_vt + kvh * stride_vh

    q_ptrs = Q + row0 * stride_qt + h * stride_qh + offs_m[:, None] * stride_qt + offs_d[None, :]
    q = tl.load(q_ptrs, mask=offs_m[:, None] < seq_len, other=0.0)

    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    # stage 1: unmasked KV tiles strictly below the diagonal block
    acc, l_i, m_i = _kv_stage(acc, l_i, m_i, q, K_base, V_base, stride_kt, stride_vt, seq_len,
                              start_m, qk_scale, offs_m, offs_n, offs_d, BLOCK_M, BLOCK_N, False)
    # stage 2: the masked diagonal block
    acc, l_i, m_i = _kv_stage(acc, l_i, m_i, q, K_base, V_base, stride_kt, stride_vt, seq_len,
                              start_m, qk_scale, offs_m, offs_n, offs_d, BLOCK_M, BLOCK_N, True)

    # epilogue: deferred normalisation and the natural-log LSE
    o = acc / l_i[:, None]
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
    row_ok = offs_m < seq_len
    o_ptrs = O + row0 * stride_ot + h * stride_oh + offs_m[:, None] * stride_ot + offs_d[None, :]
    tl.store(o_ptrs, o.to(O.dtype.element_ty), mask=row_ok[:, None])
    tl.store(LSE + row0 * stride_lt + h + offs_m * stride_lt, lse, mask=row_ok)


# The one config, on every device.
_BLOCK_M, _BLOCK_N, _NUM_WARPS, _NUM_STAGES = 64, 64, 4, 2


def run(q, k, v, cu_seqlens, sm_scale):
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    T, Hq, D = q.shape
    Hkv = k.shape[1]
    B = cu_seqlens.numel() - 1
    o = torch.empty_like(q)
    lse = torch.empty((T, Hq), dtype=torch.float32, device=q.device)
    if T == 0 or B <= 0:
        return o, lse
    # every sequence gets cdiv(len, BLOCK_M) <= len // BLOCK_M + 1 tile slots: T // BLOCK_M + B
    grid = (Hq, T // _BLOCK_M + B)
    _fa_prefill_fwd[grid](q, k, v, o, lse, cu_seqlens, float(sm_scale) * LOG2E,
                          q.stride(0), q.stride(1), k.stride(0), k.stride(1),
                          v.stride(0), v.stride(1), o.stride(0), o.stride(1), lse.stride(0),
                          B, Hq // Hkv, HEAD_DIM=D, BLOCK_M=_BLOCK_M, BLOCK_N=_BLOCK_N,
                          num_warps=_NUM_WARPS, num_stages=_NUM_STAGES)
    return o, lse
