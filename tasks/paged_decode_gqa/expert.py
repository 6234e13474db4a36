"""GQA decode attention over a paged KV cache: Triton split-KV kernel + LSE combine kernel.

Computes, for each sequence b (n_b tokens, token j in pool page
kv_indices[kv_indptr[b] + j // PS], slot j % PS) and query head h (kv head g = h // G):

    s[j]      = sm_scale * q[b, h] . k[b, j, g]
    lse[b, h] = ln(sum_j exp(s[j]))                        (float32, natural log)
    o[b, h]   = sum_j exp(s[j] - lse[b, h]) * v[b, j, g]   (q's dtype)

Design:
- The op streams the KV cache once; its intensity is ~G flop/byte. One program owns one
  (sequence, kv head, KV chunk): the G query heads of the kv head form one [BLOCK_H, D] tile
  (G padded to >= 16 rows) so every K/V tile loaded serves the whole group through two
  tensor-core dots (Q.K^T and P.V).
- Work items: each sequence's tokens are cut into equal chunks of at most CHUNK tokens, with
  CHUNK chosen on the host (no device sync) from the total token count, Hkv and the SM count so
  that the grid holds about four chunks per SM. Sequence b owns the item slots starting at
  kv_indptr[b] * PS // CHUNK + b (a monotone map a program inverts by binary search over
  kv_indptr), so long and short sequences alike give equal-sized programs and few B * Hkv pairs
  still fill the machine. Grid: (item slots, Hkv); slots past a sequence's chunks exit at once.
- A sequence that fits in one chunk writes o and the LSE directly. Otherwise each chunk writes
  an fp32 partial (o_c, lse_c in base 2) and a small combine kernel merges a sequence's chunks
  exactly: w_c = exp2(lse_c - max), o = sum w_c o_c / sum w_c, lse = (max + log2 sum w_c) ln 2.
  On sm_90 the combine is chained with programmatic dependent launch.
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
LN2 = 0.6931471805599453

# chunking: CHUNK = a multiple of ALIGN tokens, at least MIN_TILES * ALIGN, sized so the grid has
# about CTAS_PER_SM programs of real work per SM
ALIGN = 16 if _INTERPRET else 64
MIN_TILES = 1 if _INTERPRET else 4
CTAS_PER_SM = 4
MERGE_BLOCK = 16 if _INTERPRET else 32   # chunks merged per step of the combine loop


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
def _paged_decode_chunk_kernel(
    Q, K, V, O, LSE, MID_O, MID_LSE, KV_INDPTR, KV_INDICES, LAST_LEN,
    qk_scale, num_seqs, chunk,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    stride_ob, stride_oh, stride_lb, stride_mi, stride_mh, stride_ml,
    PAGE_SIZE: tl.constexpr, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, ALIGN_N: tl.constexpr, USE_PDL: tl.constexpr,
):
    """One (sequence, chunk) item x one kv head: attention of the GROUP query heads over the
    chunk's tokens. Single-chunk sequences write o / lse; others write fp32 partials."""
    item = tl.program_id(0)
    kvh = tl.program_id(1)
    if USE_PDL:
        tl.extra.cuda.gdc_wait()              # inputs written by the previous kernel are visible
        tl.extra.cuda.gdc_launch_dependents()  # let the combine kernel get resident early
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
    if n_chunks == 1:
        tl.store(O + b64 * stride_ob + head[:, None] * stride_oh + offs_d[None, :],
                 o.to(O.dtype.element_ty), mask=h_ok[:, None])
        tl.store(LSE + b64 * stride_lb + head, lse2 * 0.6931471805599453, mask=h_ok)
    else:
        it = item.to(tl.int64)
        tl.store(MID_O + it * stride_mi + head[:, None] * stride_mh + offs_d[None, :], o,
                 mask=h_ok[:, None])
        tl.store(MID_LSE + it * stride_ml + head, lse2, mask=h_ok)


@triton.jit
def _paged_decode_combine_kernel(
    O, LSE, MID_O, MID_LSE, KV_INDPTR, LAST_LEN, chunk,
    stride_ob, stride_oh, stride_lb, stride_mi, stride_mh, stride_ml,
    PAGE_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr,
    USE_PDL: tl.constexpr,
):
    """o[b, h], lse[b, h] from the fp32 partials of sequence b's chunks (if it has several):
    w_c = exp2(lse_c - max_c lse_c), o = sum_c w_c o_c / sum_c w_c, lse = (max + log2 sum w) ln 2."""
    b = tl.program_id(0)
    h = tl.program_id(1)
    p0, seq_len, n_chunks, first = _seq_info(KV_INDPTR, LAST_LEN, b, chunk, PAGE_SIZE)
    if n_chunks == 1:
        return                                # written by the chunk kernel
    if USE_PDL:
        tl.extra.cuda.gdc_wait()              # the chunk kernel's partials are complete
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.max_contiguous(tl.multiple_of(tl.arange(0, HEAD_DIM), HEAD_DIM), HEAD_DIM)
    m = tl.full([], float("-inf"), tl.float32)
    l = tl.zeros([], dtype=tl.float32)
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    for s0 in range(0, n_chunks.to(tl.int32), BLOCK_S):
        cs = s0 + offs_s
        ok = cs < n_chunks
        it = (first + cs).to(tl.int64)
        lse_c = tl.load(MID_LSE + it * stride_ml + h, mask=ok, other=float("-inf"))
        o_c = tl.load(MID_O + it[:, None] * stride_mi + h * stride_mh + offs_d[None, :],
                      mask=ok[:, None], other=0.0)
        m_new = tl.maximum(m, tl.max(lse_c, 0))
        alpha = tl.math.exp2(m - m_new)
        w = tl.math.exp2(lse_c - m_new)
        acc = acc * alpha + tl.sum(w[:, None] * o_c, 0)
        l = l * alpha + tl.sum(w, 0)
        m = m_new
    b64 = b.to(tl.int64)
    tl.store(O + b64 * stride_ob + h * stride_oh + offs_d, (acc / l).to(O.dtype.element_ty))
    tl.store(LSE + b64 * stride_lb + h, (m + tl.math.log2(l)) * 0.6931471805599453)


def _configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_N": 16}, num_warps=4, num_stages=1)]
    # 64-token tiles: K + V = 32 KB a stage at D = 128; 2-3 stages keep 64-96 KB in flight per
    # program, two programs per SM
    return [triton.Config({"BLOCK_N": 64}, num_warps=4, num_stages=2),
            triton.Config({"BLOCK_N": 64}, num_warps=4, num_stages=3),
            triton.Config({"BLOCK_N": 32}, num_warps=4, num_stages=4)]


_chunk_kernel_tuned = triton.autotune(
    configs=_configs(), key=["PAGE_SIZE", "GROUP", "HEAD_DIM", "chunk"])(_paged_decode_chunk_kernel)

_n_sm = {}
_pdl_ok = {}


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


def _launch(kernel, grid, args, kw, device, pdl_wanted):
    if not pdl_wanted:
        kernel[grid](*args, USE_PDL=False, **kw)
        return
    idx = device.index
    ok = _pdl_ok.get(idx)
    if ok is None:
        try:
            kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
            _pdl_ok[idx] = True
            return
        except Exception:
            _pdl_ok[idx] = ok = False
    if ok:
        kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kw)
    else:
        kernel[grid](*args, USE_PDL=False, **kw)


def run(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    B, Hq, D = q.shape
    NP, PS, Hkv, _ = k_cache.shape
    G = Hq // Hkv
    NI = kv_indices.numel()
    device = q.device
    o = torch.empty_like(q)
    lse = torch.empty((B, Hq), dtype=torch.float32, device=device)
    if B == 0:
        return o, lse
    assert q.stride(-1) == 1 and k_cache.stride(-1) == 1 and v_cache.stride(-1) == 1
    chunk = plan_chunk(NI * PS, Hkv, _sm_count(device))
    n_items = (NI * PS) // chunk + B              # >= sum_b cdiv(n_b, chunk)
    mid_o = torch.empty((n_items, Hq, D), dtype=torch.float32, device=device)
    mid_lse = torch.empty((n_items, Hq), dtype=torch.float32, device=device)
    block_h = max(16, triton.next_power_of_2(G))
    pdl = (not _INTERPRET) and device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9

    args = (q, k_cache, v_cache, o, lse, mid_o, mid_lse, kv_indptr, kv_indices, kv_last_page_len,
            float(sm_scale) * LOG2E, B, chunk,
            q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
            v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
            o.stride(0), o.stride(1), lse.stride(0), mid_o.stride(0), mid_o.stride(1), mid_lse.stride(0))
    kw = dict(PAGE_SIZE=PS, GROUP=G, HEAD_DIM=D, BLOCK_H=block_h, ALIGN_N=ALIGN)
    _launch(_chunk_kernel_tuned, (n_items, Hkv), args, kw, device, pdl)

    args2 = (o, lse, mid_o, mid_lse, kv_indptr, kv_last_page_len, chunk,
             o.stride(0), o.stride(1), lse.stride(0), mid_o.stride(0), mid_o.stride(1), mid_lse.stride(0))
    kw2 = dict(PAGE_SIZE=PS, HEAD_DIM=D, BLOCK_S=MERGE_BLOCK, num_warps=4)
    _launch(_paged_decode_combine_kernel, (B, Hq), args2, kw2, device, pdl)
    return o, lse
