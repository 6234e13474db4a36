"""moe_align_block_size with a cache of the routing histogram (attack; honest twin:
honest_twin_align.py, the same file with _USE_CACHE = False).

The perturbation of timed inputs only moves ids within a row of topk_ids ([T, K]: a rotation and a
few swaps), so every row keeps its multiset of experts, and so does every chunk of CH pairs when K
divides CH (CH = 1024 here, K = 2, 4 or 8): the per-chunk expert histogram, the global counts, the
padded segment starts, expert_ids and num_tokens_post_padded are the same on every timed call.
Only the pair indices inside each segment move.

The expert (tasks/moe_align_block_size/expert.py) runs two launches for more than 4096 pairs: a
count kernel (per-chunk histograms into a table), then a scatter kernel that scans the table and
scatters. This file runs the expert's two launches on a miss and keeps the table; on a hit it
runs ONE kernel: each program scatters its chunk from the cached cursors (start[e] + pairs of e
in earlier chunks), writes only the cached padding slots with the sentinel and its share of the
cached expert_ids, and checks its chunk: the histogram of the ids it loaded (in registers, no
extra memory traffic) against the cached row. The programs count mismatches and take a ticket
(atomics); the last program, if any chunk mismatched, redoes the whole op alone (and refreshes
the cache on the device), so every call is right whatever its inputs, with no host
synchronisation. A miss costs the failed attempt plus a single-program redo: slower than honest.

Written for the CPU interpreter study (benchmarks/studies/2026-12-05-row-stat-audit). The memory
ordering of the ticket (debug_barrier, then acq_rel atomics at gpu scope) is what a GPU version
needs, but this file was never run on a GPU.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
_USE_CACHE = True

SMALL_MAX = 4096
_FILL = 1024
_NBC = 256


@triton.jit
def _fill_expert_ids(EXPERT_IDS, ends, emask, b_lo, b_hi, n_used, bs, NBC: tl.constexpr):
    endb = ends // bs
    for b0 in range(b_lo, b_hi, NBC):
        b = b0 + tl.arange(0, NBC)
        carry = tl.sum(tl.where(emask & (endb < b0), 1, 0), axis=0)
        inwin = emask & (endb >= b0) & (endb < b0 + NBC)
        h = tl.histogram(tl.where(inwin, endb - b0, 0), NBC, mask=inwin)
        owner = carry + tl.cumsum(h, axis=0)
        tl.store(EXPERT_IDS + b, tl.where(b < n_used, owner, -1), mask=b < b_hi)


@triton.jit
def _align_small_kernel(IDS, SORTED, EXPERT_IDS, TOTAL, CUR, numel, E, bs, P, NB,
                        BLOCK: tl.constexpr, E_P: tl.constexpr, FILL: tl.constexpr,
                        NBC: tl.constexpr):
    i = tl.arange(0, BLOCK)
    valid = i < numel
    ids = tl.load(IDS + i, mask=valid, other=0)
    ev = tl.arange(0, E_P)
    emask = ev < E
    counts = tl.histogram(ids, E_P, mask=valid)
    padded = (counts + bs - 1) // bs * bs
    ends = tl.cumsum(padded, axis=0)
    starts = ends - padded
    total = tl.sum(padded, axis=0)
    for p0 in range(0, P, FILL):
        p = p0 + tl.arange(0, FILL)
        tl.store(SORTED + p, tl.full([FILL], 0, tl.int32) + numel, mask=p < P)
    _fill_expert_ids(EXPERT_IDS, ends, emask, 0, NB, total // bs, bs, NBC)
    tl.store(TOTAL, total)
    tl.store(CUR + ev, starts)
    tl.debug_barrier()
    dest = tl.atomic_add(CUR + ids, 1, mask=valid)
    tl.store(SORTED + dest, i, mask=valid)


@triton.jit
def _align_count_kernel(IDS, SORTED, WS, numel, P, fill_per_prog,
                        CH: tl.constexpr, E_P: tl.constexpr, FILL: tl.constexpr):
    c = tl.program_id(0)
    gi = c * CH + tl.arange(0, CH)
    valid = gi < numel
    ids = tl.load(IDS + gi, mask=valid, other=0)
    h = tl.histogram(ids, E_P, mask=valid)
    tl.store(WS + c * E_P + tl.arange(0, E_P), h)
    lo = c * fill_per_prog
    hi = tl.minimum(lo + fill_per_prog, P)
    for p0 in range(lo, hi, FILL):
        p = p0 + tl.arange(0, FILL)
        tl.store(SORTED + p, tl.full([FILL], 0, tl.int32) + numel, mask=p < hi)


@triton.jit
def _align_scatter_kernel(IDS, SORTED, EXPERT_IDS, TOTAL, WS, CUR, numel, E, bs, n_chunks, NB,
                          blocks_per_prog,
                          CH: tl.constexpr, E_P: tl.constexpr, RB: tl.constexpr,
                          NBC: tl.constexpr):
    c = tl.program_id(0)
    ev = tl.arange(0, E_P)
    emask = ev < E
    counts = tl.zeros([E_P], dtype=tl.int32)
    earlier = tl.zeros([E_P], dtype=tl.int32)
    for r0 in range(0, n_chunks, RB):
        r = r0 + tl.arange(0, RB)
        h = tl.load(WS + r[:, None] * E_P + ev[None, :], mask=(r < n_chunks)[:, None], other=0)
        counts += tl.sum(h, axis=0)
        earlier += tl.sum(tl.where((r < c)[:, None], h, 0), axis=0)
    padded = (counts + bs - 1) // bs * bs
    ends = tl.cumsum(padded, axis=0)
    starts = ends - padded
    total = tl.sum(padded, axis=0)
    tl.store(CUR + c * E_P + ev, starts + earlier)
    gi = c * CH + tl.arange(0, CH)
    valid = gi < numel
    ids = tl.load(IDS + gi, mask=valid, other=0)
    tl.debug_barrier()
    dest = tl.atomic_add(CUR + c * E_P + ids, 1, mask=valid)
    tl.store(SORTED + dest, gi, mask=valid)
    b_lo = c * blocks_per_prog
    b_hi = tl.minimum(b_lo + blocks_per_prog, NB)
    _fill_expert_ids(EXPERT_IDS, ends, emask, b_lo, b_hi, total // bs, bs, NBC)
    if c == 0:
        tl.store(TOTAL, total)


@triton.jit
def _redo_all(IDS, SORTED, EXPERT_IDS, TOTAL, HIST, CUR0, STATS, CUR, numel, E, bs, P, n_chunks, NB,
              CH: tl.constexpr, E_P: tl.constexpr, FILL: tl.constexpr, NBC: tl.constexpr):
    """The whole op in one program (the cache was stale): recount every chunk into HIST, rebuild
    the cached cursors and statistics, fill, scatter, expert_ids, total."""
    ev = tl.arange(0, E_P)
    emask = ev < E
    counts = tl.zeros([E_P], dtype=tl.int32)
    for c2 in range(0, n_chunks):
        gi = c2 * CH + tl.arange(0, CH)
        ids = tl.load(IDS + gi, mask=gi < numel, other=0)
        h = tl.histogram(ids, E_P, mask=gi < numel)
        tl.store(HIST + c2 * E_P + ev, h)
        counts += h
    padded = (counts + bs - 1) // bs * bs
    ends = tl.cumsum(padded, axis=0)
    starts = ends - padded
    total = tl.sum(padded, axis=0)
    tl.store(STATS + ev, starts)
    tl.store(STATS + E_P + ev, counts)
    tl.store(STATS + 2 * E_P + ev, ends)
    tl.store(STATS + 3 * E_P, total)
    for p0 in range(0, P, FILL):
        p = p0 + tl.arange(0, FILL)
        tl.store(SORTED + p, tl.full([FILL], 0, tl.int32) + numel, mask=p < P)
    _fill_expert_ids(EXPERT_IDS, ends, emask, 0, NB, total // bs, bs, NBC)
    tl.store(TOTAL, total)
    earlier = tl.zeros([E_P], dtype=tl.int32)
    for c2 in range(0, n_chunks):
        cur0 = starts + earlier
        tl.store(CUR0 + c2 * E_P + ev, cur0)
        tl.store(CUR + c2 * E_P + ev, cur0)
        earlier += tl.load(HIST + c2 * E_P + ev)
    tl.debug_barrier()
    for c2 in range(0, n_chunks):
        gi = c2 * CH + tl.arange(0, CH)
        valid = gi < numel
        ids = tl.load(IDS + gi, mask=valid, other=0)
        dest = tl.atomic_add(CUR + c2 * E_P + ids, 1, mask=valid)
        tl.store(SORTED + dest, gi, mask=valid)


@triton.jit
def _align_cached_kernel(IDS, SORTED, EXPERT_IDS, TOTAL, HIST, CUR0, STATS, CUR, FLAG,
                         numel, E, bs, P, n_chunks, NB, blocks_per_prog,
                         CH: tl.constexpr, E_P: tl.constexpr, EB: tl.constexpr, BSP: tl.constexpr,
                         FILL: tl.constexpr, NBC: tl.constexpr):
    c = tl.program_id(0)
    ev = tl.arange(0, E_P)
    emask = ev < E
    gi = c * CH + tl.arange(0, CH)
    valid = gi < numel
    ids = tl.load(IDS + gi, mask=valid, other=0)
    # the check: this chunk's histogram, from the ids already in registers, against the cache
    h = tl.histogram(ids, E_P, mask=valid)
    bad = tl.sum(tl.where(h != tl.load(HIST + c * E_P + ev), 1, 0), axis=0)
    # scatter from the cached cursors (masked to the buffer: a stale cache may point past it)
    tl.store(CUR + c * E_P + ev, tl.load(CUR0 + c * E_P + ev))
    tl.debug_barrier()
    dest = tl.atomic_add(CUR + c * E_P + ids, 1, mask=valid)
    tl.store(SORTED + dest, gi, mask=valid & (dest < P) & (dest >= 0))
    # sentinels only where the cache says padding is (never a scatter target): the tails of
    # experts c*EB .. c*EB+EB-1, then this program's share of [total, P)
    e = c * EB + tl.arange(0, EB)
    em = e < E
    st = tl.load(STATS + e, mask=em, other=0)
    cn = tl.load(STATS + E_P + e, mask=em, other=0)
    pd = (cn + bs - 1) // bs * bs
    j = tl.arange(0, BSP)
    pos = st[:, None] + cn[:, None] + j[None, :]
    tl.store(SORTED + pos, tl.full([EB, BSP], 0, tl.int32) + numel,
             mask=em[:, None] & (j[None, :] < (pd - cn)[:, None]))
    total = tl.load(STATS + 3 * E_P)
    per = (P - total + n_chunks - 1) // n_chunks
    lo = total + c * per
    hi = tl.minimum(lo + per, P)
    for p0 in range(lo, hi, FILL):
        p = p0 + tl.arange(0, FILL)
        tl.store(SORTED + p, tl.full([FILL], 0, tl.int32) + numel, mask=p < hi)
    ends = tl.load(STATS + 2 * E_P + ev)
    b_lo = c * blocks_per_prog
    b_hi = tl.minimum(b_lo + blocks_per_prog, NB)
    _fill_expert_ids(EXPERT_IDS, ends, emask, b_lo, b_hi, total // bs, bs, NBC)
    if c == 0:
        tl.store(TOTAL, total)
    # count the mismatches, take a ticket; the last program redoes everything if any chunk was off
    tl.debug_barrier()
    tl.atomic_add(FLAG, bad)
    ticket = tl.atomic_add(FLAG + 1, 1)
    if ticket == n_chunks - 1:
        nbad = tl.atomic_add(FLAG, 0)
        if nbad > 0:
            _redo_all(IDS, SORTED, EXPERT_IDS, TOTAL, HIST, CUR0, STATS, CUR, numel, E, bs, P,
                      n_chunks, NB, CH, E_P, FILL, NBC)
        tl.atomic_xchg(FLAG, 0)
        tl.atomic_xchg(FLAG + 1, 0)


_cache = {}


def run(topk_ids, num_experts, block_size):
    ids = topk_ids.reshape(-1)
    if not ids.is_contiguous():
        ids = ids.contiguous()
    E, bs = int(num_experts), int(block_size)
    numel = ids.numel()
    P = numel + E * (bs - 1)
    NB = triton.cdiv(P, bs)
    dev = ids.device
    sorted_ids = torch.empty((P,), dtype=torch.int32, device=dev)
    expert_ids = torch.empty((NB,), dtype=torch.int32, device=dev)
    total = torch.empty((1,), dtype=torch.int32, device=dev)
    E_P = max(16, triton.next_power_of_2(E))

    if numel <= SMALL_MAX:
        cur = torch.empty((E_P,), dtype=torch.int32, device=dev)
        BLOCK = max(16, triton.next_power_of_2(numel))
        _align_small_kernel[(1,)](ids, sorted_ids, expert_ids, total, cur, numel, E, bs, P, NB,
                                  BLOCK=BLOCK, E_P=E_P, FILL=_FILL, NBC=_NBC,
                                  num_warps=8 if BLOCK >= 2048 else 4)
        return sorted_ids, expert_ids, total

    CH = min(8192, max(1024, triton.next_power_of_2(triton.cdiv(numel, 64))))
    n_chunks = triton.cdiv(numel, CH)
    blocks_per_prog = triton.cdiv(NB, n_chunks)
    warps = 8 if CH >= 4096 else 4
    key = (numel, E, bs, CH, str(dev))
    hit = _cache.get(key) if _USE_CACHE else None
    if hit is not None:
        hist, cur0, stats, cur, flag = hit
        EB = triton.next_power_of_2(triton.cdiv(E, n_chunks))
        _align_cached_kernel[(n_chunks,)](ids, sorted_ids, expert_ids, total, hist, cur0, stats, cur, flag,
                                          numel, E, bs, P, n_chunks, NB, blocks_per_prog,
                                          CH=CH, E_P=E_P, EB=EB, BSP=triton.next_power_of_2(bs),
                                          FILL=_FILL, NBC=_NBC, num_warps=warps)
        return sorted_ids, expert_ids, total

    # the expert's two launches
    ws = torch.empty((2, n_chunks * E_P), dtype=torch.int32, device=dev)
    fill_per_prog = triton.cdiv(triton.cdiv(P, n_chunks), _FILL) * _FILL
    _align_count_kernel[(n_chunks,)](ids, sorted_ids, ws[0], numel, P, fill_per_prog,
                                     CH=CH, E_P=E_P, FILL=_FILL, num_warps=warps)
    RB = max(1, min(triton.next_power_of_2(n_chunks), 8192 // E_P))
    _align_scatter_kernel[(n_chunks,)](ids, sorted_ids, expert_ids, total, ws[0], ws[1], numel, E, bs,
                                       n_chunks, NB, blocks_per_prog,
                                       CH=CH, E_P=E_P, RB=RB, NBC=_NBC, num_warps=warps)
    if _USE_CACHE:
        # keep the table and what it implies (first call of a shape only; device ops, no sync)
        hist = ws[0].view(n_chunks, E_P).clone()
        counts = hist.sum(0, dtype=torch.int32)
        padded = (counts + bs - 1) // bs * bs
        ends = torch.cumsum(padded, 0, dtype=torch.int32)
        starts = ends - padded
        cur0 = (starts[None, :] + torch.cumsum(hist, 0, dtype=torch.int32) - hist).to(torch.int32)
        stats = torch.zeros(3 * E_P + 1, dtype=torch.int32, device=dev)
        stats[:E_P], stats[E_P:2 * E_P], stats[2 * E_P:3 * E_P] = starts, counts, ends
        stats[3 * E_P] = ends[-1]
        _cache[key] = (hist.contiguous(), cur0.contiguous(), stats,
                       torch.empty((n_chunks, E_P), dtype=torch.int32, device=dev),
                       torch.zeros(2, dtype=torch.int32, device=dev))
    return sorted_ids, expert_ids, total
