# The shipped mla_decode expert as of commit bc05a22, before this study's candidates were adopted (d76bd7d):
# the base its candidates.toml and screened_out.toml patch and its screen.toml compiles. Not shipped.
"""DeepSeek MLA decode (absorbed weights) over a paged latent cache: split-KV Triton kernels.

For every sequence b (L_b tokens; token j in page kv_indices[kv_indptr[b] + j // PS], slot
j % PS) and head h:

    s[j]      = sm_scale * (q_nope[b, h] . ckv[j] + q_pe[b, h] . kpe[j])
    lse[b, h] = ln(sum_j exp(s[j]))                          (float32)
    o[b, h]   = sum_j exp(s[j] - lse[b, h]) * ckv[j]          (q's dtype, 512 wide)

Design:
- MLA with absorbed weights is multi-query attention with one 576-wide key per token whose
  first 512 dims are also the value, so each program loads every latent tile once and feeds
  it to both products: S = Q_nope . ckv^T + Q_pe . kpe^T, then O += P . ckv.
- Heads are the M dimension: a program owns BLOCK_H heads of one sequence as a
  [BLOCK_H, 512] + [BLOCK_H, 64] query tile resident for the whole KV loop, so both products
  are real tensor-core GEMMs (BLOCK_H = 64 rows for H = 128; 16, the smallest MMA tile, for the
  memory-bound H <= 16 cases). The scores are accumulated by separate dots for the two
  256-wide latent halves and the rope part into one S tile (no concatenation), and the output
  is two 256-wide fp32 accumulators, fed by the same two latent halves.
- The regime decides the tiling: at H = 128 the op is tensor-core bound (about 2 * H flops per
  cached byte), so BLOCK_H = 64 with 8 warps, and the two head blocks of a sequence run side
  by side so the second read of each page hits L2; at H <= 16 it is bandwidth bound, so
  BLOCK_H = 16 with 4 warps, more KV splits, deeper pipelines, and the pointer loads of the
  (read-once) cache are marked evict-first.
- Split-KV (flash-decoding): when B * head-blocks cannot fill the GPU, each sequence's tokens are
  cut into NUM_SPLITS chunks of whole BLOCK_N tiles handled by different programs (grid axis
  2); each writes an fp32 partial (o normalised by its own sum, lse in base 2) and a small
  combine kernel merges them with LSE weights. The split count comes from the shapes alone
  (average length = pages * PS / B), never from the device page table, so there is no host
  sync; a split beyond a short sequence's end writes an empty partial (lse = -inf) that the
  combine ignores. With one split the main kernel writes o and lse directly.
- Full tiles run unmasked; only a sequence's last partial tile is masked. With PS a multiple
  of BLOCK_N a tile lies inside one page: on sm_90 it is fetched by TMA descriptor loads at
  row page * PS + offset; otherwise (PS = 1) the tile's page ids are one vector load and the
  rows are gathered with pointer loads.
- Online softmax in the exp2 domain: sm_scale * log2(e) is folded into one multiplier; P is
  cast to the input dtype for the PV dot; acc stays fp32 and is divided by l once at the end.
"""

import math
import os

import torch
import triton
import triton.language as tl

try:
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # older triton
    TensorDescriptor = None

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
LOG2E = 1.4426950408889634
DC, DR = 512, 64
MAX_SPLITS = 32


@triton.jit
def _kv_tile(acc_lo, acc_hi, m_i, l_i, q_lo, q_hi, q_pe, CKV, KPE, KV_INDICES, desc_ckv, desc_kpe,
             page_base, n0, end, qk_scale, offs_n, offs_c, offs_r,
             PS: tl.constexpr, HALF: tl.constexpr, DROPE: tl.constexpr,
             MASKED: tl.constexpr, USE_TMA: tl.constexpr, EVICT: tl.constexpr):
    """One BLOCK_N-token tile of the online softmax: S from three dots, O += P . ckv (two halves)."""
    tok = n0 + offs_n
    if USE_TMA:
        # the whole tile sits in one page (PS % BLOCK_N == 0, n0 % BLOCK_N == 0)
        page = tl.load(KV_INDICES + page_base + n0 // PS)
        row = page * PS + n0 % PS
        k_lo = desc_ckv.load([row, 0])
        k_hi = desc_ckv.load([row, HALF])
        k_pe = desc_kpe.load([row, 0])
    else:
        if MASKED:
            ok = tok < end
            page = tl.load(KV_INDICES + page_base + tok // PS, mask=ok, other=0)
        else:
            page = tl.load(KV_INDICES + page_base + tok // PS)
        row = page.to(tl.int64) * PS + tok % PS
        c_ptr = CKV + row[:, None] * (2 * HALF) + offs_c[None, :]
        r_ptr = KPE + row[:, None] * DROPE + offs_r[None, :]
        if MASKED:
            k_lo = tl.load(c_ptr, mask=ok[:, None], other=0.0)
            k_hi = tl.load(c_ptr + HALF, mask=ok[:, None], other=0.0)
            k_pe = tl.load(r_ptr, mask=ok[:, None], other=0.0)
        elif EVICT:
            k_lo = tl.load(c_ptr, eviction_policy="evict_first")
            k_hi = tl.load(c_ptr + HALF, eviction_policy="evict_first")
            k_pe = tl.load(r_ptr, eviction_policy="evict_first")
        else:
            k_lo = tl.load(c_ptr)
            k_hi = tl.load(c_ptr + HALF)
            k_pe = tl.load(r_ptr)
    # scores: latent halves and the rope part accumulate into the same S tile
    qk = tl.dot(q_lo, tl.trans(k_lo))
    qk = tl.dot(q_hi, tl.trans(k_hi), qk)
    qk = tl.dot(q_pe, tl.trans(k_pe), qk)
    if MASKED:
        qk = tl.where(ok[None, :], qk * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
    else:
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    p = p.to(k_lo.dtype)
    # the same latent tiles are the values
    acc_lo = tl.dot(p, k_lo, acc_lo * alpha[:, None])
    acc_hi = tl.dot(p, k_hi, acc_hi * alpha[:, None])
    return acc_lo, acc_hi, m_new, l_i


@triton.jit
def _mla_decode_split(QN, QP, CKV, KPE, KV_INDPTR, KV_INDICES, KV_LAST, O, LSE, OP, LSEP,
                      desc_ckv, desc_kpe, qk_scale, H,
                      BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, PS: tl.constexpr,
                      NUM_SPLITS: tl.constexpr, USE_TMA: tl.constexpr, EVICT: tl.constexpr,
                      USE_PDL: tl.constexpr):
    """Partial (or, with one split, final) MLA decode of BLOCK_H heads x one KV chunk of one sequence."""
    HALF: tl.constexpr = 256
    DROPE: tl.constexpr = 64
    hb = tl.program_id(0)      # head block: fastest axis, so a sequence's head blocks run together
    b = tl.program_id(1)
    split = tl.program_id(2)

    page_base = tl.load(KV_INDPTR + b)
    n_pages = tl.load(KV_INDPTR + b + 1) - page_base
    seq_len = tl.where(n_pages > 0, (n_pages - 1) * PS + tl.load(KV_LAST + b), 0)
    chunk = tl.cdiv(tl.cdiv(seq_len, NUM_SPLITS), BLOCK_N) * BLOCK_N
    start = split * chunk
    end = tl.minimum(start + chunk, seq_len)
    full_end = start + tl.maximum(end - start, 0) // BLOCK_N * BLOCK_N

    heads = hb * BLOCK_H + tl.arange(0, BLOCK_H)
    h_ok = heads < H
    offs_c = tl.arange(0, HALF)
    offs_r = tl.arange(0, DROPE)
    offs_n = tl.arange(0, BLOCK_N)
    q_row = (b * H + heads).to(tl.int64)
    qn_ptr = QN + q_row[:, None] * (2 * HALF) + offs_c[None, :]
    q_lo = tl.load(qn_ptr, mask=h_ok[:, None], other=0.0)
    q_hi = tl.load(qn_ptr + HALF, mask=h_ok[:, None], other=0.0)
    q_pe = tl.load(QP + q_row[:, None] * DROPE + offs_r[None, :], mask=h_ok[:, None], other=0.0)

    m_i = tl.zeros([BLOCK_H], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc_lo = tl.zeros([BLOCK_H, HALF], dtype=tl.float32)
    acc_hi = tl.zeros([BLOCK_H, HALF], dtype=tl.float32)

    # full tiles: no masks
    for n0 in range(start, full_end, BLOCK_N):
        acc_lo, acc_hi, m_i, l_i = _kv_tile(
            acc_lo, acc_hi, m_i, l_i, q_lo, q_hi, q_pe, CKV, KPE, KV_INDICES, desc_ckv, desc_kpe,
            page_base, n0, end, qk_scale, offs_n, offs_c, offs_r,
            PS, HALF, DROPE, False, USE_TMA, EVICT)
    # the sequence's last, partial tile
    if full_end < end:
        acc_lo, acc_hi, m_i, l_i = _kv_tile(
            acc_lo, acc_hi, m_i, l_i, q_lo, q_hi, q_pe, CKV, KPE, KV_INDICES, desc_ckv, desc_kpe,
            page_base, full_end, end, qk_scale, offs_n, offs_c, offs_r,
            PS, HALF, DROPE, True, False, False)

    if USE_PDL:
        # the combine kernel may start its prologue; its gdc_wait still waits for this grid
        tl.extra.cuda.gdc_launch_dependents()
    empty = l_i == 0.0
    inv_l = 1.0 / tl.where(empty, 1.0, l_i)
    lse2 = tl.where(empty, float("-inf"), m_i + tl.math.log2(tl.where(empty, 1.0, l_i)))
    o_lo = acc_lo * inv_l[:, None]
    o_hi = acc_hi * inv_l[:, None]
    if NUM_SPLITS == 1:
        o_ptr = O + q_row[:, None] * (2 * HALF) + offs_c[None, :]
        tl.store(o_ptr, o_lo.to(O.dtype.element_ty), mask=h_ok[:, None])
        tl.store(o_ptr + HALF, o_hi.to(O.dtype.element_ty), mask=h_ok[:, None])
        tl.store(LSE + q_row, lse2 * 0.6931471805599453, mask=h_ok)
    else:
        part = q_row * NUM_SPLITS + split
        op_ptr = OP + part[:, None] * (2 * HALF) + offs_c[None, :]
        tl.store(op_ptr, o_lo, mask=h_ok[:, None])
        tl.store(op_ptr + HALF, o_hi, mask=h_ok[:, None])
        tl.store(LSEP + part, lse2, mask=h_ok)


@triton.jit
def _mla_combine(OP, LSEP, O, LSE, H, NUM_SPLITS: tl.constexpr, SPLITS_P2: tl.constexpr,
                 DV: tl.constexpr, BLOCK_D: tl.constexpr, USE_PDL: tl.constexpr):
    """o[b, h], lse[b, h] from the NUM_SPLITS partials (o_s normalised, lse_s in base 2)."""
    h = tl.program_id(0)
    b = tl.program_id(1)
    if USE_PDL:
        tl.extra.cuda.gdc_wait()       # launched early by PDL: wait for the split kernel's writes
    row = (b * H + h).to(tl.int64)
    offs_s = tl.arange(0, SPLITS_P2)
    s_ok = offs_s < NUM_SPLITS
    lse_s = tl.load(LSEP + row * NUM_SPLITS + offs_s, mask=s_ok, other=float("-inf"))
    m = tl.max(lse_s, 0)
    m = tl.where(m == float("-inf"), 0.0, m)       # every split empty: weights 0, lse -inf
    w = tl.math.exp2(lse_s - m)
    den = tl.sum(w, 0)
    w = w / tl.where(den == 0.0, 1.0, den)
    offs_d = tl.arange(0, BLOCK_D)
    for d0 in tl.static_range(0, DV, BLOCK_D):
        part = tl.load(OP + (row * NUM_SPLITS + offs_s)[:, None] * DV + d0 + offs_d[None, :],
                       mask=s_ok[:, None], other=0.0)
        o = tl.sum(part * w[:, None], 0)
        tl.store(O + row * DV + d0 + offs_d, o.to(O.dtype.element_ty))
    tl.store(LSE + row, tl.where(den == 0.0, float("-inf"), (m + tl.math.log2(den)) * 0.6931471805599453))


def _desc_pre_hook(nargs):
    if not isinstance(nargs["desc_ckv"], torch.Tensor):
        nargs["desc_ckv"].block_shape = [nargs["BLOCK_N"], 256]
        nargs["desc_kpe"].block_shape = [nargs["BLOCK_N"], DR]


# (BLOCK_N, num_stages, num_warps). Shared memory per program: the Q tile, BLOCK_H x 576 x 2 B
# (72 KB at 64 heads, 18 KB at 16), plus num_stages x BLOCK_N x 576 x 2 B of latent tiles
# (36 KB per stage at BLOCK_N = 32); every config stays under ~185 KB. At 64 heads the Q tile
# is re-read from shared memory by every QK^T wgmma, so a wider BLOCK_N (fewer Q reads per
# flop) is offered too, unpipelined because two 72 KB stages would not fit next to Q.
_CFG_64 = [(32, 2, 8), (32, 3, 8), (64, 1, 8)]                       # BLOCK_H = 64: 8 warps
_CFG_16 = [(32, 2, 4), (32, 3, 4), (32, 4, 4), (64, 2, 4), (64, 2, 8)]  # BLOCK_H = 16


def _configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_N": 32}, num_warps=4, num_stages=1)]
    return [triton.Config({"BLOCK_N": bn}, num_warps=w, num_stages=st, pre_hook=_desc_pre_hook)
            for bn, st, w in _CFG_64 + _CFG_16]


def _prune(configs, named_args, **kwargs):
    """Keep the configs made for the launch's head block."""
    bh = kwargs.get("BLOCK_H", named_args.get("BLOCK_H", 16))
    want = _CFG_64 if bh >= 64 else _CFG_16
    keep = [c for c in configs if (c.kwargs.get("BLOCK_N"), c.num_stages, c.num_warps) in want]
    return keep or configs


_mla_decode_split_tuned = triton.autotune(
    configs=_configs(), key=["BLOCK_H", "PS", "NUM_SPLITS", "USE_TMA"],
    prune_configs_by={"early_config_prune": _prune})(_mla_decode_split)


def _num_splits(programs, avg_len, slots, min_tokens):
    """Smallest split count whose wave efficiency is within 85 % of the best (FA3's rule), with
    every split keeping >= min_tokens tokens; 1 when the programs already fill ~the GPU."""
    if programs >= 0.8 * slots:
        return 1
    max_s = max(1, min(MAX_SPLITS, int(avg_len // min_tokens)))
    effs = []
    for s in range(1, max_s + 1):
        waves = programs * s / slots
        effs.append(waves / math.ceil(waves))
    best = max(effs)
    for s, e in enumerate(effs, start=1):
        if e >= 0.85 * best:
            return s
    return 1


def _sm_count(device):
    if _INTERPRET or device.type != "cuda":
        return 2
    return torch.cuda.get_device_properties(device).multi_processor_count


def run(q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    q_nope, q_pe = q_nope.contiguous(), q_pe.contiguous()
    ckv_cache, kpe_cache = ckv_cache.contiguous(), kpe_cache.contiguous()
    B, H, _ = q_nope.shape
    NP, PS, _ = ckv_cache.shape
    dev = q_nope.device
    o = torch.empty((B, H, DC), dtype=q_nope.dtype, device=dev)
    lse = torch.empty((B, H), dtype=torch.float32, device=dev)
    if B == 0 or H == 0:
        return o, lse

    # regime: 128 heads -> tensor-core bound, 64-row head blocks; <= 16 heads -> bandwidth bound
    if H > 16:
        block_h, per_sm = 64, 1
    else:
        block_h, per_sm = 16, 2
    n_hb = triton.cdiv(H, block_h)
    avg_len = kv_indices.numel() * PS / max(B, 1)
    min_tokens = 16 if _INTERPRET else 256
    splits = _num_splits(B * n_hb, avg_len, _sm_count(dev) * per_sm, min_tokens)

    use_tma = (not _INTERPRET and TensorDescriptor is not None and dev.type == "cuda"
               and torch.cuda.get_device_capability(dev)[0] >= 9 and PS % 64 == 0)
    if use_tma:
        desc_ckv = TensorDescriptor(ckv_cache, [NP * PS, DC], [DC, 1], [32, 256])
        desc_kpe = TensorDescriptor(kpe_cache, [NP * PS, DR], [DR, 1], [32, DR])
    else:
        desc_ckv, desc_kpe = ckv_cache, kpe_cache
    if splits > 1:
        op = torch.empty((B, H, splits, DC), dtype=torch.float32, device=dev)
        lsep = torch.empty((B, H, splits), dtype=torch.float32, device=dev)
    else:
        op, lsep = o, lse
    evict = n_hb == 1 and not _INTERPRET
    pdl = splits > 1 and _pdl_ok(dev)
    _mla_decode_split_tuned[(n_hb, B, splits)](
        q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, kv_last_page_len, o, lse,
        op, lsep, desc_ckv, desc_kpe, float(sm_scale) * LOG2E, H,
        BLOCK_H=block_h, PS=PS, NUM_SPLITS=splits, USE_TMA=use_tma, EVICT=evict, USE_PDL=pdl)
    if splits > 1:
        _combine(op, lsep, o, lse, H, B, splits, pdl)
    return o, lse


_PDL = {}   # device index -> programmatic dependent launch works (sm_90+ and this Triton has it)


def _pdl_ok(dev):
    if _INTERPRET or dev.type != "cuda":
        return False
    if dev.index not in _PDL:
        _PDL[dev.index] = torch.cuda.get_device_capability(dev)[0] >= 9
    return _PDL[dev.index]


def _combine(op, lsep, o, lse, H, B, splits, pdl):
    args = (op, lsep, o, lse, H)
    sp2 = triton.next_power_of_2(splits)
    # [splits, BLOCK_D] fp32 tiles of <= 4096 elements: the whole 512-wide row for <= 8 splits
    meta = dict(NUM_SPLITS=splits, SPLITS_P2=sp2, DV=DC, BLOCK_D=min(DC, max(64, 4096 // sp2)),
                num_warps=4)
    if pdl:
        try:
            _mla_combine[(H, B)](*args, USE_PDL=True, launch_pdl=True, **meta)
            return
        except Exception:          # a Triton without PDL launches: plain launch from now on
            _PDL[o.device.index] = False
    _mla_combine[(H, B)](*args, USE_PDL=False, **meta)
