"""MoE align block size: the expert Triton implementation, programmatic dependent launch
ablated.

Gold-set ablation `no_pdl`: identical to tasks/moe_align_block_size/expert.py except that every
kernel is an ordinary launch: no grid-dependency waits or early release of dependents in the
kernels, and no dependent-launch flag or device-capability probe on the host.

Computes, for topk_ids: [T, K] (pair i = t * K + j routed to expert topk_ids.flat[i]):

    cnt[e] = #pairs of expert e,  pad[e] = ceil(cnt[e] / bs) * bs,  start[e] = sum_{e'<e} pad[e']
    sorted_token_ids[start[e] + r] = the r-th pair of expert e (r < cnt[e]), sentinel T*K elsewhere
    expert_ids[b] = the expert owning positions [b*bs, b*bs + bs), -1 at or past the total
    num_tokens_post_padded = sum_e pad[e]

A counting sort: histogram -> exclusive scan of the padded counts -> scatter by rank, with no
comparison sort of the T*K pairs and no host synchronisation. Two paths:

* Small inputs (T*K <= SMALL_MAX): ONE program does everything in one launch. It loads all ids,
  builds the histogram with tl.histogram, scans the padded counts with tl.cumsum, writes the
  segment starts to a per-expert write cursor, fills the sentinels and expert_ids itself
  (expert_ids via a histogram of segment-end blocks + cumsum, so no per-block search), and after
  a CTA barrier scatters every pair to the slot returned by an atomic increment of its expert's
  cursor.

* Large inputs: two launches over CH-pair chunks.
  1. count: every program histograms its chunk into ws[chunk, :] and writes the sentinel into
     its share of sorted_token_ids (the fill is spread over all programs, in-kernel).
  2. scatter: every program re-reads the small [n_chunks, E] histogram table, derives the
     global padded scan and the number of pairs of each expert in earlier chunks, writes
     start[e] + earlier[e] to its own private cursor row, and scatters its chunk through atomic
     increments of that row (so atomics only contend inside one program). The programs also
     split the expert_ids fill between them; program 0 writes the total.
  No memset launch is needed: every cursor is written before it is incremented.

The order inside a segment depends on the atomics (the task leaves it free). Ordinary
launches on every device; everything runs under TRITON_INTERPRET=1 too.
"""
import torch
import triton
import triton.language as tl

SMALL_MAX = 4096          # pairs handled by the single-program path
_FILL = 1024              # sentinel stores per loop step
_NBC = 256                # expert_ids entries per loop step


@triton.jit
def _fill_expert_ids(EXPERT_IDS, ends, emask, b_lo, b_hi, n_used, bs, NBC: tl.constexpr):
    """expert_ids[b] for b in [b_lo, b_hi): #experts whose segment ends at or before block b
    (= the owner of block b), or -1 for b >= n_used. `ends` are the inclusive padded cumsums."""
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

    # histogram -> padded counts -> inclusive/exclusive scans (one register vector per expert)
    ev = tl.arange(0, E_P)
    emask = ev < E
    counts = tl.histogram(ids, E_P, mask=valid)
    padded = (counts + bs - 1) // bs * bs
    ends = tl.cumsum(padded, axis=0)
    starts = ends - padded
    total = tl.sum(padded, axis=0)

    # sentinels everywhere, then expert_ids and the total
    for p0 in range(0, P, FILL):
        p = p0 + tl.arange(0, FILL)
        tl.store(SORTED + p, tl.full([FILL], 0, tl.int32) + numel, mask=p < P)
    _fill_expert_ids(EXPERT_IDS, ends, emask, 0, NB, total // bs, bs, NBC)
    tl.store(TOTAL, total)

    # scatter: each pair takes the next slot of its expert's cursor (initialised to start[e])
    tl.store(CUR + ev, starts)
    tl.debug_barrier()                                # cursors and sentinels land first
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
    # this program's share of the sentinel fill
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
    # global counts and the counts of earlier chunks, from the [n_chunks, E_P] histogram table
    # (a few KB, L2-resident)
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

    # scatter this chunk through a private cursor row: start[e] + (pairs of e in earlier chunks)
    tl.store(CUR + c * E_P + ev, starts + earlier)
    il = tl.arange(0, CH)
    gi = c * CH + il
    valid = gi < numel
    ids = tl.load(IDS + gi, mask=valid, other=0)
    tl.debug_barrier()                                # the cursor row lands before the atomics
    dest = tl.atomic_add(CUR + c * E_P + ids, 1, mask=valid)
    tl.store(SORTED + dest, gi, mask=valid)

    # this program's share of expert_ids; program 0 writes the total
    b_lo = c * blocks_per_prog
    b_hi = tl.minimum(b_lo + blocks_per_prog, NB)
    _fill_expert_ids(EXPERT_IDS, ends, emask, b_lo, b_hi, total // bs, bs, NBC)
    if c == 0:
        tl.store(TOTAL, total)


def _launch(kernel, grid, args, kwargs, device):
    kernel[grid](*args, **kwargs)


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
        _launch(_align_small_kernel, (1,),
                (ids, sorted_ids, expert_ids, total, cur, numel, E, bs, P, NB),
                dict(BLOCK=BLOCK, E_P=E_P, FILL=_FILL, NBC=_NBC,
                     num_warps=8 if BLOCK >= 2048 else 4),
                dev)
        return sorted_ids, expert_ids, total

    # chunks of CH pairs: at most ~64 chunks (the scatter programs each re-read the table)
    CH = min(8192, max(1024, triton.next_power_of_2(triton.cdiv(numel, 64))))
    n_chunks = triton.cdiv(numel, CH)
    ws = torch.empty((2, n_chunks * E_P), dtype=torch.int32, device=dev)   # counts, cursors
    fill_per_prog = triton.cdiv(triton.cdiv(P, n_chunks), _FILL) * _FILL
    warps = 8 if CH >= 4096 else 4
    _launch(_align_count_kernel, (n_chunks,),
            (ids, sorted_ids, ws[0], numel, P, fill_per_prog),
            dict(CH=CH, E_P=E_P, FILL=_FILL, num_warps=warps), dev)
    blocks_per_prog = triton.cdiv(NB, n_chunks)
    RB = max(1, min(triton.next_power_of_2(n_chunks), 8192 // E_P))
    _launch(_align_scatter_kernel, (n_chunks,),
            (ids, sorted_ids, expert_ids, total, ws[0], ws[1], numel, E, bs, n_chunks, NB,
             blocks_per_prog),
            dict(CH=CH, E_P=E_P, RB=RB, NBC=_NBC, num_warps=warps), dev)
    return sorted_ids, expert_ids, total
