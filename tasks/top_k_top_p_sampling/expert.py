"""Top-k then top-p sampling from probabilities with a given uniform draw, expert Triton kernel
(every row split across chunk programs).

For each row x = probs[b] (k = top_k[b], p = top_p[b], u = u[b]):
    K = the k largest entries (ties: lower index first), M = sum_K x
    S = the entries of K whose higher-ranked mass is <= p * M,  Q = sum_S x
    sample = the smallest index i in S with  sum_{j in S, j <= i} x[j] > u * Q

One launch, no sort of the V = 128k-152k row, no host sync, no spin-wait. Grid (S, B): each
row is split into S chunk programs of 2048 probabilities (4096 when B * ceil(V / 2048) > 264,
e.g. B = 64, 256; those launches cap registers at 128 so two 8-warp programs share an SM):
 a. a chunk loads its probabilities once (kept in registers), histograms them into 256
    quarter-octave bins (bin = float bits >> 21, clamped: monotone in the value), adds the
    non-empty bins to the row's global histogram (atomics) and writes, in vocabulary order,
    its entries in bins >= its local k-th bin b_c to its own 128-slot region (a masked
    tl.store at a running tl.cumsum of the keep mask). Every global top-k entry is in its
    chunk's local top-k and b_c <= the global k-th bin b*, so the regions hold every entry of
    bin >= b* unless a region overflowed (flagged).
 b. the last program of the row to finish (acq_rel atomic counter) reads the global
    histogram, finds b* and the candidate count n = entries in bins >= b*, resets the
    workspace for the next call, and gathers the candidates (<= 2048) in vocabulary order:
      - no overflow: from the regions (chunk order, then slot order);
      - a region overflowed (large k): one compaction pass over the row against b*;
      - n > 2048 (bins too coarse, e.g. a flat row): the one-program-per-row radix select
        (256-bin tl.histogram rounds over the row re-streamed from L2), then that pass.
    When a row fits one chunk (S = 1) the grid is (B,) and every program takes the last route.
 c. exact selection on the n candidates, sort-free. n <= 256: pairwise ranks over [N, 32]
    slices (N = 64, 128 or 256) of the live candidates, rank_i = #{j: key_j > key_i} and
    before_i = their mass, with key = (value bits << 32 | reversed position), unique and
    ordered like the ranking;
    K = rank < k, S = K & before <= p * M. n > 256: the k-th largest key and the top-p cut key
    found bit by bit (count >= k, resp. mass above > p * M).
 d. inverse CDF over the kept candidates in vocabulary order: tl.cumsum of their masses, the
    first position whose prefix exceeds u * Q is the sample.
All sums are float32. Row loads are contiguous tiles (16-byte vectors).
"""
import torch
import triton
import triton.language as tl

SMALL = 256               # final-stage tile for small candidate sets
CAP = 2048                # largest candidate set (top_k <= 1024 by contract)
_TILE = 4096              # probabilities per streaming step


@triton.jit
def _kth_largest_key(key, valid, k, LOGN: tl.constexpr):
    """The k-th largest of the int64 keys (value bits in 62..32, position in LOGN-1..0)."""
    t = tl.zeros([], dtype=tl.int64)
    for b in tl.static_range(62, 31, -1):
        cand = t | (1 << b)
        cnt = tl.sum((valid & (key >= cand)).to(tl.int32), axis=0)
        t = tl.where(cnt >= k, cand, t)
    for b in tl.static_range(LOGN - 1, -1, -1):
        cand = t | (1 << b)
        cnt = tl.sum((valid & (key >= cand)).to(tl.int32), axis=0)
        t = tl.where(cnt >= k, cand, t)
    return t


@triton.jit
def _mass_cut_key(key, v, in_k, limit, LOGN: tl.constexpr):
    """The largest t whose mass sum(v over in_k & key >= t) exceeds `limit` (0 if none)."""
    t = tl.zeros([], dtype=tl.int64)
    for b in tl.static_range(62, 31, -1):
        cand = t | (1 << b)
        mass = tl.sum(tl.where(in_k & (key >= cand), v, 0.0), axis=0)
        t = tl.where(mass > limit, cand, t)
    for b in tl.static_range(LOGN - 1, -1, -1):
        cand = t | (1 << b)
        mass = tl.sum(tl.where(in_k & (key >= cand), v, 0.0), axis=0)
        t = tl.where(mass > limit, cand, t)
    return t


@triton.jit
def _select_and_sample(CV, CI, n, k, p, u, N: tl.constexpr, LOGN: tl.constexpr):
    """Top-k, top-p and inverse-CDF sampling over the n candidates stored in vocab order."""
    c = tl.arange(0, N)
    valid = c < n
    v = tl.load(CV + c, mask=valid, other=0.0)
    ids = tl.load(CI + c, mask=valid, other=0)
    bits = v.to(tl.int32, bitcast=True)
    key = (bits.to(tl.int64) << 32) | (N - 1 - c).to(tl.int64)   # ties -> lower index first
    key = tl.where(valid, key, -1)
    t_k = _kth_largest_key(key, valid, k, LOGN)
    in_k = valid & (key >= t_k)
    m_k = tl.sum(tl.where(in_k, v, 0.0), axis=0)
    t_p = _mass_cut_key(key, v, in_k, p * m_k, LOGN)   # the entry crossing p * M (kept)
    keep = in_k & (key >= t_p)
    w = tl.where(keep, v, 0.0)
    q = tl.sum(w, axis=0)
    cs = tl.cumsum(w, axis=0)
    pos = tl.sum((valid & (cs <= u * q)).to(tl.int32), axis=0)
    last = tl.max(tl.where(keep, c, -1), axis=0)
    pos = tl.minimum(pos, last)
    return tl.sum(tl.where(c == pos, ids, 0), axis=0)


CH = 2048                 # split layout: probabilities per chunk program (small grids)
CH_BIG = 4096             # ... and when B * ceil(V / CH) > SMALL_GRID
SMALL_GRID = 264          # two programs per SM
MAXNREG = 128             # register cap for large grids (2 programs of 8 warps per SM)
REGION = 128              # split layout: candidate slots per chunk
NBIN = 256                # split layout: quarter-octave bins


@triton.jit
def _select_and_sample_pairwise(CV, CI, n, k, p, u, N: tl.constexpr, JB: tl.constexpr):
    """As _select_and_sample for n <= N small: ranks by pairwise key comparison (no serial bit
    search). rank_i = #{j: key_j > key_i}; before_i = mass of those j, which for i in K is
    exactly the mass of K ranked before i (K is a top set), so one pass over [N, JB] slices
    gives both the top-k and the top-p decision."""
    c = tl.arange(0, N)
    valid = c < n
    v = tl.load(CV + c, mask=valid, other=0.0)
    ids = tl.load(CI + c, mask=valid, other=0)
    key = (v.to(tl.int32, bitcast=True).to(tl.int64) << 32) | (N - 1 - c).to(tl.int64)
    key = tl.where(valid, key, -1)                       # ties -> lower index first
    rank = tl.zeros([N], dtype=tl.int32)
    before = tl.zeros([N], dtype=tl.float32)
    for j0 in range(0, n, JB):                           # only the live slices
        cj = j0 + tl.arange(0, JB)
        vj = tl.load(CV + cj, mask=cj < n, other=0.0)
        kj = (vj.to(tl.int32, bitcast=True).to(tl.int64) << 32) | (N - 1 - cj).to(tl.int64)
        kj = tl.where(cj < n, kj, -1)
        gt = kj[None, :] > key[:, None]
        rank += tl.sum(gt.to(tl.int32), axis=1)
        before += tl.sum(tl.where(gt, vj[None, :], 0.0), axis=1)
    in_k = valid & (rank < k)
    m_k = tl.sum(tl.where(in_k, v, 0.0), axis=0)
    keep = in_k & (before <= p * m_k)
    w = tl.where(keep, v, 0.0)
    q = tl.sum(w, axis=0)
    cs = tl.cumsum(w, axis=0)
    pos = tl.sum((valid & (cs <= u * q)).to(tl.int32), axis=0)
    last = tl.max(tl.where(keep, c, -1), axis=0)
    pos = tl.minimum(pos, last)
    return tl.sum(tl.where(c == pos, ids, 0), axis=0)


@triton.jit
def _topk_topp_sampling_kernel(
    P, TOPK, TOPP, U, OUT, CV, CI,
    HIST, CNT, FLAG, RV, RI, RN,
    V, stride_p, S,
    TILE: tl.constexpr, SMALL_N: tl.constexpr, CAP_N: tl.constexpr,
    LOG_SMALL: tl.constexpr, LOG_CAP: tl.constexpr,
    SPLIT: tl.constexpr, CH_N: tl.constexpr, REG_N: tl.constexpr, NB: tl.constexpr,
    GATHER: tl.constexpr,
):
    if SPLIT:
        chunk = tl.program_id(0)
        row = tl.program_id(1)
    else:
        chunk = 0
        row = tl.program_id(0)
    k = tl.minimum(tl.maximum(tl.load(TOPK + row), 1), tl.minimum(V, CAP_N // 2))
    p = tl.load(TOPP + row)
    u = tl.load(U + row)
    base = P + row.to(tl.int64) * stride_p
    cv = CV + row.to(tl.int64) * CAP_N
    ci = CI + row.to(tl.int64) * CAP_N
    bins = tl.arange(0, 256)

    do_row = tl.zeros([], dtype=tl.int32) + 1     # run the one-program-per-row radix select
    do_scan = tl.zeros([], dtype=tl.int32)        # run the compaction pass over the row
    n = tl.zeros([], dtype=tl.int32)
    th = tl.zeros([], dtype=tl.int32) - 1         # compaction keeps bits > th ...
    quota = tl.zeros([], dtype=tl.int32)          # ... plus the first `quota` entries == th
    if SPLIT:
        do_row = tl.zeros([], dtype=tl.int32)
        # ---- a. one chunk, held in registers --------------------------------------------
        offs_s = chunk * CH_N + tl.arange(0, CH_N)
        m_s = offs_s < V
        x_s = tl.load(base + offs_s, mask=m_s, other=0.0)
        bn = tl.minimum(tl.maximum((x_s.to(tl.int32, bitcast=True) >> 21) - 256, 0), NB - 1)
        h_s = tl.histogram(bn, NB, mask=m_s)
        nb = tl.arange(0, NB)
        ge = tl.sum(h_s, axis=0) - tl.cumsum(h_s, axis=0) + h_s           # entries in bins >= b
        b_c = tl.maximum(tl.sum((ge >= k).to(tl.int32), axis=0) - 1, 0)
        w_c = tl.sum(tl.where(nb == b_c, ge, 0), axis=0)
        keep_s = m_s & (bn >= b_c)
        ki_s = keep_s.to(tl.int32)
        slot_s = tl.cumsum(ki_s, axis=0) - ki_s
        reg = row.to(tl.int64) * S + chunk
        tl.store(RV + reg * REG_N + slot_s, x_s, mask=keep_s & (slot_s < REG_N))
        tl.store(RI + reg * REG_N + slot_s, offs_s, mask=keep_s & (slot_s < REG_N))
        tl.store(RN + reg, tl.minimum(w_c, REG_N))
        if w_c > REG_N:
            tl.store(FLAG + row, 1)
        tl.atomic_add(HIST + row * NB + nb, h_s, mask=h_s != 0, sem="relaxed")
        tl.debug_barrier()
        arrived = tl.atomic_add(CNT + row, 1, sem="acq_rel")
        if arrived == S - 1:
            # ---- b. the last chunk of the row: global threshold bin, compaction ---------
            hg = tl.load(HIST + row * NB + nb, cache_modifier=".cg")
            flag = tl.load(FLAG + row, cache_modifier=".cg")
            tl.debug_barrier()             # every thread has read HIST / FLAG before they are reset
            tl.store(HIST + row * NB + nb, tl.zeros([NB], dtype=tl.int32))   # reset for the next call
            tl.store(FLAG + row, 0)
            tl.store(CNT + row, 0)
            geg = tl.sum(hg, axis=0) - tl.cumsum(hg, axis=0) + hg
            bstar = tl.maximum(tl.sum((geg >= k).to(tl.int32), axis=0) - 1, 0)
            n_cand = tl.sum(tl.where(nb == bstar, geg, 0), axis=0)
            if n_cand > CAP_N:
                do_row = tl.zeros([], dtype=tl.int32) + 1       # bins too coarse: radix select
            elif flag != 0:
                do_scan = tl.zeros([], dtype=tl.int32) + 1      # a region overflowed: re-scan
                th = tl.where(bstar > 0, ((bstar + 256) << 21) - 1, -1)   # bin >= b*  <=>  bits > th
            else:
                g = tl.arange(0, GATHER)
                for r0 in range(0, S * REG_N, GATHER):
                    q = r0 + g
                    rg = q // REG_N
                    sl = q % REG_N
                    live = rg < S
                    cnt_r = tl.load(RN + row.to(tl.int64) * S + rg, mask=live, other=0, cache_modifier=".cg")
                    live = live & (sl < cnt_r)
                    src = (row.to(tl.int64) * S + rg) * REG_N + sl
                    v = tl.load(RV + src, mask=live, other=0.0, cache_modifier=".cg")
                    ids = tl.load(RI + src, mask=live, other=0, cache_modifier=".cg")
                    bv = tl.minimum(tl.maximum((v.to(tl.int32, bitcast=True) >> 21) - 256, 0), NB - 1)
                    sel = live & (bv >= bstar)
                    si = sel.to(tl.int32)
                    dst = n + tl.cumsum(si, axis=0) - si
                    tl.store(cv + dst, v, mask=sel)
                    tl.store(ci + dst, ids, mask=sel)
                    n += tl.sum(si, axis=0)
                tl.debug_barrier()

    if do_row != 0:
        aim = tl.where(k <= SMALL_N // 2, SMALL_N, CAP_N)
        # ---- 1. radix select of the candidate threshold (one program streams the row) --
        prefix = tl.zeros([], dtype=tl.int32)     # bytes of the k-th largest value fixed so far
        above = tl.zeros([], dtype=tl.int32)      # entries strictly above the current bucket
        done = tl.zeros([], dtype=tl.int32)
        for LEVEL in tl.static_range(4):
            if done == 0:
                hr = tl.zeros([256], dtype=tl.int32)
                for t0 in range(0, V, TILE):
                    offs = t0 + tl.arange(0, TILE)
                    m = offs < V
                    x = tl.load(base + offs, mask=m, other=0.0)
                    bits = x.to(tl.int32, bitcast=True)
                    if LEVEL == 0:
                        match = m
                    else:
                        match = m & ((bits >> (32 - 8 * LEVEL)) == prefix)
                    hr += tl.histogram((bits >> (24 - 8 * LEVEL)) & 255, 256, mask=match)
                need = k - above
                cnt_ge = tl.sum(hr, axis=0) - tl.cumsum(hr, axis=0) + hr   # entries with byte >= d
                dstar = tl.sum((cnt_ge >= need).to(tl.int32), axis=0) - 1
                h_d = tl.sum(tl.where(bins == dstar, hr, 0), axis=0)
                above = above + tl.sum(tl.where(bins == dstar, cnt_ge, 0), axis=0) - h_d
                prefix = (prefix << 8) | dstar
                if above + h_d <= aim:
                    done = done + 1
                    th = (prefix << (24 - 8 * LEVEL)) - 1
                elif LEVEL == 3:
                    done = done + 1                    # exact k-th value: cut its ties by index
                    th = prefix
                    quota = k - above

        do_scan = tl.zeros([], dtype=tl.int32) + 1

    if do_scan != 0:
        # ---- 2. compact the candidates in vocabulary order ------------------------------
        n = tl.zeros([], dtype=tl.int32)
        ties = tl.zeros([], dtype=tl.int32)
        for t0 in range(0, V, TILE):
            offs = t0 + tl.arange(0, TILE)
            m = offs < V
            x = tl.load(base + offs, mask=m, other=0.0)
            bits = x.to(tl.int32, bitcast=True)
            eq = (m & (bits == th)).to(tl.int32)
            if quota > 0:                               # exact k-th value: cut its ties by index
                keep = (m & (bits > th)) | ((eq != 0) & (ties + tl.cumsum(eq, axis=0) - eq < quota))
            else:                                       # a threshold between values: no tie scan
                keep = m & (bits > th)
            ki = keep.to(tl.int32)
            slot = n + tl.cumsum(ki, axis=0) - ki
            tl.store(cv + slot, x, mask=keep)
            tl.store(ci + slot, offs, mask=keep)
            n += tl.sum(ki, axis=0)
            ties += tl.sum(eq, axis=0)
        tl.debug_barrier()                              # candidates visible to the whole program

    # ---- 3 + 4. exact top-k / top-p on the candidates, inverse CDF ----------------------
    if (do_scan != 0) | (n > 0):
        if n <= 64:
            sample = _select_and_sample_pairwise(cv, ci, n, k, p, u, 64, 32)
        elif n <= 128:
            sample = _select_and_sample_pairwise(cv, ci, n, k, p, u, 128, 32)
        elif n <= SMALL_N:
            sample = _select_and_sample_pairwise(cv, ci, n, k, p, u, SMALL_N, 32)
        else:
            sample = _select_and_sample(cv, ci, n, k, p, u, CAP_N, LOG_CAP)
        tl.store(OUT + row, sample)


_WS = {}


def _workspace(device, B, S):
    """Per-(device, B, S) scratch for the split layout. HIST / CNT / FLAG start at zero and the
    kernel's last program of each row puts them back to zero, so no memset per call."""
    key = (str(device), B, S, REGION, NBIN)
    ws = _WS.get(key)
    if ws is None:
        ws = (
            torch.zeros((B, NBIN), dtype=torch.int32, device=device),
            torch.zeros((B,), dtype=torch.int32, device=device),
            torch.zeros((B,), dtype=torch.int32, device=device),
            torch.empty((B * S * REGION,), dtype=torch.float32, device=device),
            torch.empty((B * S * REGION,), dtype=torch.int32, device=device),
            torch.empty((B * S,), dtype=torch.int32, device=device),
        )
        _WS[key] = ws
    return ws


def run(probs, top_k, top_p, u):
    x = probs if probs.stride(-1) == 1 else probs.contiguous()
    B, V = x.shape
    out = torch.empty((B,), dtype=torch.int32, device=x.device)
    if B == 0:
        return out
    cand_v = torch.empty((B, CAP), dtype=torch.float32, device=x.device)
    cand_i = torch.empty((B, CAP), dtype=torch.int32, device=x.device)
    ch = CH if B * triton.cdiv(V, CH) <= SMALL_GRID else CH_BIG
    S = triton.cdiv(V, ch)
    args = (x, top_k.contiguous(), top_p.contiguous(), u.contiguous(), out, cand_v, cand_i)
    meta = dict(TILE=_TILE, SMALL_N=SMALL, CAP_N=CAP,
                LOG_SMALL=SMALL.bit_length() - 1, LOG_CAP=CAP.bit_length() - 1,
                CH_N=ch, REG_N=REGION, NB=NBIN, GATHER=4096, num_warps=8)
    if S > 1:
        ws = _workspace(x.device, B, S)
        grid = (S, B)
        if B * S > SMALL_GRID:
            # many chunk programs: cap the registers so that two 8-warp programs share an SM
            try:
                _topk_topp_sampling_kernel[grid](*args, *ws, V, x.stride(0), S, SPLIT=True,
                                                 maxnreg=MAXNREG, **meta)
                return out
            except Exception:      # a Triton that refuses maxnreg: same kernel without it
                pass
        _topk_topp_sampling_kernel[grid](*args, *ws, V, x.stride(0), S, SPLIT=True, **meta)
    else:
        _topk_topp_sampling_kernel[(B,)](*args, out, out, out, cand_v, cand_i, out,
                                         V, x.stride(0), S, SPLIT=False, **meta)
    return out
