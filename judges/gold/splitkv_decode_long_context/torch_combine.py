"""Long-context GQA decode over a paged KV cache: flash-decoding (split-KV) in Triton, the LSE
combine in torch.

Gold-set ablation `torch_combine`: the split kernel of tasks/splitkv_decode_long_context/expert.py
(every chunk, even a sequence's only one, writes an fp32 partial), with the combine kernel
replaced by eager torch operations on the host side (a gather of each sequence's chunk
partials, then the same exact exp2/LSE-weighted merge). With a single kernel there is nothing
to chain, so there is no programmatic dependent launch either.

Computes, for each sequence b (n_b tokens, token j in pool page
kv_indices[kv_indptr[b] + j // PS], slot j % PS) and query head h (kv head g = h // G):

    s[j]      = sm_scale * q[b, h] . k[b, j, g]
    lse[b, h] = ln(sum_j exp(s[j]))                        (float32, natural log)
    o[b, h]   = sum_j exp(s[j] - lse[b, h]) * v[b, j, g]   (q's dtype)

With B = 1-8 and Hkv = 2-8 there are only 8-32 (sequence, kv head) pairs for 132 SMs, so each
sequence's KV range is split over many programs (flash-decoding) and merged exactly by LSE.

Design:
- Split plan (host, no device sync): the chunk size CHUNK is chosen from the total token count
  (kv_indices.numel() * PS), Hkv and the GPU's SM count (multi_processor_count) so that the
  grid holds about four chunks of work per SM (two waves of two resident programs), never
  under MIN_TILES 64-token tiles per chunk. A sequence is cut into cdiv(n_b, CHUNK) equal
  chunks. Sequence b owns the work-item slots from kv_indptr[b] * PS // CHUNK + b on; a program
  inverts that monotone map by binary search over kv_indptr. Grid: (item slots, Hkv), so the
  split index is folded into axis 0 together with the sequence. Slots past a sequence's chunks
  exit at once. The workspace is sized by the slot count (>= total chunks).
- Split kernel: one program per (sequence, chunk, kv head). The G query heads of the kv head
  form one [BLOCK_H, D] tile (G padded to >= 16 rows), so each K/V tile loaded serves the whole
  group through tensor-core dots (Q.K^T, P.V). Online softmax in the exp2 domain
  (sm_scale * log2 e folded into one multiplier), fp32 running max / sum / accumulator, P cast
  to the input dtype for the P.V dot. It writes an fp32 partial o_c (already divided by its
  sum) and an fp32 base-2 lse_c per (chunk, q-head).
- Combine (torch): the chunk partials of every sequence are gathered into [B, max_chunks, Hq]
  (max_chunks read on the host), masked to -inf past a sequence's chunk count, and merged as
  w_c = exp2(lse_c - max), o = sum w_c o_c / sum w_c, lse = (max + log2 sum w_c) * ln 2.
- Paged gather by vector: per BLOCK_N-token tile, one vector load of the page ids
  (kv_indices[start + offs // PS]) gives the token rows; K/V rows are 16-byte vectors along D,
  64-bit addressing, loads pipelined by num_stages (autotuned with 64- or 32-token tiles).
"""

import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453

# chunking: CHUNK = a multiple of ALIGN tokens, at least MIN_TILES * ALIGN, sized so the grid has
# about CTAS_PER_SM programs of real work per SM
ALIGN = 16 if _INTERPRET else 64
MIN_TILES = 1 if _INTERPRET else 4
CTAS_PER_SM = 4


@triton.jit
def _seq_info(KV_INDPTR, LAST_LEN, b, chunk, PAGE_SIZE: tl.constexpr):
    """First page-table entry, length, number of chunks and first item slot of sequence b."""
    p0 = tl.load(KV_INDPTR + b).to(tl.int64)
    p1 = tl.load(KV_INDPTR + b + 1).to(tl.int64)
    seq_len = (p1 - p0 - 1) * PAGE_SIZE + tl.load(LAST_LEN + b)
    n_chunks = tl.cdiv(seq_len, chunk)
    first = (p0 * PAGE_SIZE) // chunk + b
    return p0, seq_len, n_chunks, first


@triton.jit
def _find_seq(KV_INDPTR, item, num_seqs, chunk, PAGE_SIZE: tl.constexpr):
    """Largest b with kv_indptr[b] * PS // chunk + b <= item (sequence b owns item slots
    kv_indptr[b] * PS // chunk + b ... kv_indptr[b+1] * PS // chunk + b, >= its chunk count)."""
    lo = tl.full([], 0, tl.int32)
    hi = tl.full([], 0, tl.int32) + num_seqs
    while lo < hi:
        mid = (lo + hi) // 2
        first = (tl.load(KV_INDPTR + mid).to(tl.int64) * PAGE_SIZE) // chunk + mid
        if first <= item:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@triton.jit
def _splitkv_partial_kernel(
    Q, K, V, MID_O, MID_LSE, KV_INDPTR, KV_INDICES, LAST_LEN,
    qk_scale, num_seqs, chunk,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    stride_mi, stride_mh, stride_ml,
    PAGE_SIZE: tl.constexpr, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, ALIGN_N: tl.constexpr,
):
    """One (sequence, chunk) item x one kv head: attention of the GROUP query heads over the
    chunk's tokens, written as an fp32 partial (o_c, base-2 lse_c)."""
    item = tl.program_id(0)
    kvh = tl.program_id(1)
    b = _find_seq(KV_INDPTR, item, num_seqs, chunk, PAGE_SIZE)
    p0, seq_len, n_chunks, first = _seq_info(KV_INDPTR, LAST_LEN, b, chunk, PAGE_SIZE)
    c = item - first
    if c >= n_chunks:
        return
    # equal chunks of this sequence, a multiple of ALIGN_N tokens each (none of them empty)
    per = tl.cdiv(tl.cdiv(seq_len, n_chunks), ALIGN_N) * ALIGN_N
    lo = (c * per).to(tl.int32)                  # token offsets inside a sequence fit in int32
    hi = tl.minimum(lo + per, seq_len).to(tl.int32)

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
    for start in range(lo, hi, BLOCK_N):
        tok = start + offs_n
        valid = tok < hi
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
    lse2 = m_i + tl.math.log2(l_i)                             # base-2 LSE of the chunk
    it = item.to(tl.int64)
    tl.store(MID_O + it * stride_mi + head[:, None] * stride_mh + offs_d[None, :], o,
             mask=h_ok[:, None])
    tl.store(MID_LSE + it * stride_ml + head, lse2, mask=h_ok)


def _configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_N": 16}, num_warps=4, num_stages=1)]
    # 64-token tiles: K + V = 32 KB a stage at D = 128; 2-3 stages keep 64-96 KB in flight per
    # program, two programs per SM
    return [triton.Config({"BLOCK_N": 64}, num_warps=4, num_stages=2),
            triton.Config({"BLOCK_N": 64}, num_warps=4, num_stages=3),
            triton.Config({"BLOCK_N": 32}, num_warps=4, num_stages=4)]


_chunk_kernel_tuned = triton.autotune(
    configs=_configs(), key=["PAGE_SIZE", "GROUP", "HEAD_DIM", "chunk"])(_splitkv_partial_kernel)

_n_sm = {}


def _sm_count(device):
    if _INTERPRET or device.type != "cuda":
        return 2
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _n_sm:
        _n_sm[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _n_sm[idx]


def plan_chunk(total_tokens, n_kv_heads, n_sm):
    """Tokens per chunk: the work (total_tokens x Hkv, in ALIGN-token tiles) spread over about
    CTAS_PER_SM programs per SM, with at least MIN_TILES tiles per program."""
    tiles = n_kv_heads * triton.cdiv(total_tokens, ALIGN)
    per = max(MIN_TILES, triton.cdiv(tiles, n_sm * CTAS_PER_SM))
    return per * ALIGN


def _combine_torch(mid_o, mid_lse, kv_indptr, kv_last_page_len, chunk, PS, out_dtype):
    """Exact LSE merge of each sequence's chunk partials with torch operations."""
    B = kv_last_page_len.numel()
    n_pages = (kv_indptr[1:] - kv_indptr[:-1]).long()
    seq_len = (n_pages - 1) * PS + kv_last_page_len.long()
    n_chunks = (seq_len + chunk - 1) // chunk
    first = kv_indptr[:-1].long() * PS // chunk + torch.arange(B, device=mid_o.device)
    max_chunks = int(n_chunks.max().item())
    c = torch.arange(max_chunks, device=mid_o.device)
    valid = c[None, :] < n_chunks[:, None]                                 # [B, C]
    idx = torch.where(valid, first[:, None] + c[None, :], torch.zeros_like(first)[:, None])
    lse_c = mid_lse[idx].masked_fill(~valid[:, :, None], float("-inf"))    # [B, C, Hq]
    m = lse_c.max(dim=1, keepdim=True).values                              # [B, 1, Hq]
    w = torch.exp2(lse_c - m)                                              # [B, C, Hq]
    l = w.sum(dim=1)                                                       # [B, Hq]
    o = (w[..., None] * mid_o[idx]).sum(dim=1) / l[..., None]              # [B, Hq, D]
    lse = (m[:, 0] + torch.log2(l)) * LN2
    return o.to(out_dtype), lse


def run(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    B, Hq, D = q.shape
    NP, PS, Hkv, _ = k_cache.shape
    G = Hq // Hkv
    NI = kv_indices.numel()
    device = q.device
    if B == 0:
        return torch.empty_like(q), torch.empty((B, Hq), dtype=torch.float32, device=device)
    assert q.stride(-1) == 1 and k_cache.stride(-1) == 1 and v_cache.stride(-1) == 1
    chunk = plan_chunk(NI * PS, Hkv, _sm_count(device))
    n_items = (NI * PS) // chunk + B              # >= sum_b cdiv(n_b, chunk)
    mid_o = torch.empty((n_items, Hq, D), dtype=torch.float32, device=device)
    mid_lse = torch.empty((n_items, Hq), dtype=torch.float32, device=device)
    block_h = max(16, triton.next_power_of_2(G))

    args = (q, k_cache, v_cache, mid_o, mid_lse, kv_indptr, kv_indices, kv_last_page_len,
            float(sm_scale) * LOG2E, B, chunk,
            q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
            v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
            mid_o.stride(0), mid_o.stride(1), mid_lse.stride(0))
    kw = dict(PAGE_SIZE=PS, GROUP=G, HEAD_DIM=D, BLOCK_H=block_h, ALIGN_N=ALIGN)
    _chunk_kernel_tuned[(n_items, Hkv)](*args, **kw)
    return _combine_torch(mid_o, mid_lse, kv_indptr, kv_last_page_len, chunk, PS, q.dtype)
