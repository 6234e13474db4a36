"""Causal GQA varlen prefill attention, forward, as one Triton flash-attention kernel,
with the base-2 softmax ablated.

Gold-set ablation `exp_not_exp2`: identical to tasks/flash_attention_prefill/expert.py except
that the softmax runs in the natural-exp domain: the scores are multiplied by the plain sm_scale
(no log2(e) factor folded in), P and the rescale factor use tl.exp, and the LSE is m + ln(l)
directly (no base conversion).

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
- Online softmax with natural exp: the scores are multiplied by sm_scale, the running max m and
  sum l are kept in fp32, acc is rescaled by exp(m_old - m_new).
- Causal block skipping: an unmasked stage over the KV tiles strictly below the diagonal block,
  then a masked stage over the diagonal block only; KV tiles above it are never visited.
- P is cast to the input dtype before the P.V tensor-core dot; acc stays fp32 and is divided by l
  once in the epilogue, which also writes lse = m + ln l.
- On sm_90+ K/V (and Q) tiles come through TMA tensor descriptors over the [tokens, heads*D]
  views, pipelined by num_stages. Rows read past a sequence's end are harmless: they are either
  causally masked (keys) or never stored (queries); the tensor's end is zero-filled by TMA.
"""

import os

import torch
import triton
import triton.language as tl

try:
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # older triton
    TensorDescriptor = None

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


@triton.jit
def _kv_stage(acc, l_i, m_i, q, K_base, V_base, desc_k, desc_v, kv_row0, kv_col,
              stride_kt, stride_vt, seq_len, start_m, sm_scale, offs_m, offs_n, offs_d,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              DIAG: tl.constexpr, USE_TMA: tl.constexpr):
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
        if USE_TMA:
            k = desc_k.load([kv_row0 + start_n, kv_col])
        else:
            kv_pos = start_n + offs_n
            k_ptrs = K_base + kv_pos[:, None] * stride_kt + offs_d[None, :]
            if DIAG:
                k = tl.load(k_ptrs, mask=kv_pos[:, None] < seq_len, other=0.0)
            else:
                k = tl.load(k_ptrs)
        qk = tl.dot(q, tl.trans(k))
        if DIAG:
            causal = offs_m[:, None] >= (start_n + offs_n)[None, :]
            qk = tl.where(causal, qk * sm_scale, float("-inf"))
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.exp(qk - m_ij[:, None])
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * sm_scale)
            p = tl.exp(qk * sm_scale - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if USE_TMA:
            v = desc_v.load([kv_row0 + start_n, kv_col])
        else:
            kv_pos = start_n + offs_n
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
def _fa_prefill_fwd(Q, K, V, O, LSE, CU_SEQLENS, desc_q, desc_k, desc_v, sm_scale,
                    stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh,
                    stride_ot, stride_oh, stride_lt, num_seqs, GROUP, T_BUCKET,
                    HEAD_DIM: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, USE_TMA: tl.constexpr):
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

    if USE_TMA:
        q = desc_q.load([seq_start + start_m * BLOCK_M, h * HEAD_DIM])
    else:
        q_ptrs = Q + row0 * stride_qt + h * stride_qh + offs_m[:, None] * stride_qt + offs_d[None, :]
        q = tl.load(q_ptrs, mask=offs_m[:, None] < seq_len, other=0.0)

    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    # stage 1: unmasked KV tiles strictly below the diagonal block
    acc, l_i, m_i = _kv_stage(acc, l_i, m_i, q, K_base, V_base, desc_k, desc_v,
                              seq_start, kvh * HEAD_DIM, stride_kt, stride_vt, seq_len, start_m,
                              sm_scale, offs_m, offs_n, offs_d, BLOCK_M, BLOCK_N, False, USE_TMA)
    # stage 2: the masked diagonal block
    acc, l_i, m_i = _kv_stage(acc, l_i, m_i, q, K_base, V_base, desc_k, desc_v,
                              seq_start, kvh * HEAD_DIM, stride_kt, stride_vt, seq_len, start_m,
                              sm_scale, offs_m, offs_n, offs_d, BLOCK_M, BLOCK_N, True, USE_TMA)

    # epilogue: deferred normalisation and the natural-log LSE
    o = acc / l_i[:, None]
    lse = m_i + tl.log(l_i)
    row_ok = offs_m < seq_len
    o_ptrs = O + row0 * stride_ot + h * stride_oh + offs_m[:, None] * stride_ot + offs_d[None, :]
    tl.store(o_ptrs, o.to(O.dtype.element_ty), mask=row_ok[:, None])
    tl.store(LSE + row0 * stride_lt + h + offs_m * stride_lt, lse, mask=row_ok)


def _desc_pre_hook(nargs):
    bm, bn, d = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["HEAD_DIM"]
    if not isinstance(nargs["desc_q"], torch.Tensor):
        nargs["desc_q"].block_shape = [bm, d]
        nargs["desc_k"].block_shape = [bn, d]
        nargs["desc_v"].block_shape = [bn, d]


def _configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_M": 32, "BLOCK_N": 16, "USE_TMA": False}, num_warps=4,
                              num_stages=1)]
    if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9 \
            and TensorDescriptor is not None:
        # sm_90: BLOCK_M 128 x BLOCK_N 64, 8 warps, 2 TMA stages. Capping registers at 128 (no
        # spills) lets two CTAs (2 x 96 KB smem, 2 x 32K regs) share an SM, so one CTA's softmax
        # can overlap the other's wgmma; on an H200 the autotuner picked it on all 4 workloads.
        return [triton.Config({"BLOCK_M": 128, "BLOCK_N": bn, "USE_TMA": True}, num_warps=8,
                              num_stages=s, maxnreg=r, pre_hook=_desc_pre_hook)
                for bn, s, r in [(64, 2, 128), (64, 2, None), (128, 3, None)]]
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": 64, "USE_TMA": False}, num_warps=w,
                          num_stages=s)
            for bm, w in [(128, 8), (64, 4)] for s in [2, 3]]


_fa_prefill_fwd_tuned = triton.autotune(
    configs=_configs(), key=["HEAD_DIM", "T_BUCKET"])(_fa_prefill_fwd)


def _descs(q, k, v, use_tma, bm=16, bn=16):
    if not use_tma:
        return q, k, v
    T, Hq, D = q.shape
    Hkv = k.shape[1]
    return (TensorDescriptor(q, [T, Hq * D], [Hq * D, 1], [bm, D]),
            TensorDescriptor(k, [T, Hkv * D], [k.stride(0), 1], [bn, D]),
            TensorDescriptor(v, [T, Hkv * D], [v.stride(0), 1], [bn, D]))


def launch(q, k, v, cu_seqlens, sm_scale, config=None):
    """Launch the kernel (no host sync); config = dict(BLOCK_M, BLOCK_N, USE_TMA, num_warps,
    num_stages) bypasses the autotuner (used for tuning sweeps)."""
    T, Hq, D = q.shape
    Hkv = k.shape[1]
    B = cu_seqlens.numel() - 1
    o = torch.empty_like(q)
    lse = torch.empty((T, Hq), dtype=torch.float32, device=q.device)
    if T == 0 or B <= 0:
        return o, lse
    args = (q, k, v, o, lse, cu_seqlens)
    scalars = (float(sm_scale),
               q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
               o.stride(0), o.stride(1), lse.stride(0), B, Hq // Hkv, triton.next_power_of_2(T))
    # every sequence gets cdiv(len, BLOCK_M) <= len // BLOCK_M + 1 tile slots: T // BLOCK_M + B
    if config is None:
        use_tma = _fa_prefill_fwd_tuned.configs[0].kwargs["USE_TMA"]
        dq, dk, dv = _descs(q, k, v, use_tma)
        grid = lambda meta: (Hq, T // meta["BLOCK_M"] + B)
        _fa_prefill_fwd_tuned[grid](*args, dq, dk, dv, *scalars, HEAD_DIM=D)
    else:
        c = dict(config)
        dq, dk, dv = _descs(q, k, v, c["USE_TMA"], c["BLOCK_M"], c["BLOCK_N"])
        _fa_prefill_fwd[(Hq, T // c["BLOCK_M"] + B)](*args, dq, dk, dv, *scalars,
                                                       HEAD_DIM=D, **c)
    return o, lse


def run(q, k, v, cu_seqlens, sm_scale):
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    return launch(q, k, v, cu_seqlens, sm_scale)
