"""MoE align block size, plain Triton implementation.

Computes, for topk_ids: [T, K] (pair i = t * K + j routed to expert topk_ids.flat[i]):

    cnt[e] = #pairs of expert e,  pad[e] = ceil(cnt[e] / bs) * bs,  start[e] = sum_{e'<e} pad[e']
    sorted_token_ids[start[e] + r] = a pair of expert e (r < cnt[e]), sentinel T*K elsewhere
    expert_ids[b] = the expert owning positions [b*bs, b*bs + bs), -1 at or past the total
    num_tokens_post_padded = sum_e pad[e]

Three kernels plus torch fills: a global-atomic histogram over all pairs, a one-program
sequential scan over the experts (which also writes expert_ids and a per-expert write cursor),
and a scatter in which every pair takes its slot with an atomic add on its expert's cursor.
The sentinel fill and the zeroed counters are separate torch launches.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _count_kernel(IDS, COUNTS, numel, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < numel
    e = tl.load(IDS + i, mask=m, other=0)
    tl.atomic_add(COUNTS + e, 1, mask=m)


@triton.jit
def _scan_kernel(COUNTS, CURSOR, EXPERT_IDS, TOTAL, E, bs, NB):
    running = 0
    for e in range(0, E):
        cnt = tl.load(COUNTS + e)
        padded = (cnt + bs - 1) // bs * bs
        tl.store(CURSOR + e, running)
        for b in range(running // bs, (running + padded) // bs):
            tl.store(EXPERT_IDS + b, e)
        running += padded
    for b in range(running // bs, NB):
        tl.store(EXPERT_IDS + b, -1)
    tl.store(TOTAL, running)


@triton.jit
def _scatter_kernel(IDS, CURSOR, SORTED, numel, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < numel
    e = tl.load(IDS + i, mask=m, other=0)
    pos = tl.atomic_add(CURSOR + e, 1, mask=m)
    tl.store(SORTED + pos, i, mask=m)


def run(topk_ids, num_experts, block_size):
    ids = topk_ids.reshape(-1).contiguous()
    E, bs = int(num_experts), int(block_size)
    numel = ids.numel()
    P = numel + E * (bs - 1)
    NB = triton.cdiv(P, bs)
    dev = ids.device
    sorted_ids = torch.full((P,), numel, dtype=torch.int32, device=dev)
    expert_ids = torch.empty((NB,), dtype=torch.int32, device=dev)
    total = torch.empty((1,), dtype=torch.int32, device=dev)
    counts = torch.zeros((E,), dtype=torch.int32, device=dev)
    cursor = torch.empty((E,), dtype=torch.int32, device=dev)
    BLOCK = 256
    grid = (triton.cdiv(numel, BLOCK),)
    _count_kernel[grid](ids, counts, numel, BLOCK=BLOCK)
    _scan_kernel[(1,)](counts, cursor, expert_ids, total, E, bs, NB, num_warps=1)
    _scatter_kernel[grid](ids, cursor, sorted_ids, numel, BLOCK=BLOCK)
    return sorted_ids, expert_ids, total
