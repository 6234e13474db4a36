"""Expert fused MoE experts: routed SwiGLU expert MLPs and the weighted top-k combine, with the
GEMM epilogue fusions ablated.

Gold-set ablation `unfused_epilogues`: identical to tasks/fused_moe_experts/expert.py except
that neither GEMM epilogue is fused: the gate/up GEMM stores its raw gate and up tiles into a
[rows, 2I] buffer and a separate elementwise kernel computes silu(gate) * up from it; the
down GEMM stores its unweighted output rows, and the combine kernel applies the routing
weights while it sums over the top-k slots (so a buffer is written even when K = 1).

    for every token t and slot j < K, with e = topk_ids[t, j]:
        h = silu(x[t] @ w1[e, :I].T) * (x[t] @ w1[e, I:].T)
        y[t] += topk_weights[t, j] * (h @ w2[e].T)

Six launches at most, no host synchronisation:

1. Align (one or two small kernels): a counting sort of the T*K (token, slot) pairs by expert
   into segments padded to a multiple of BM, so every BM-row block belongs to exactly one
   expert (the layout of moe_align_block_size). Each program histograms a chunk of pairs;
   the scatter programs derive the padded exclusive scan and the counts of earlier chunks,
   rank their pairs inside the chunk with a one-hot prefix sum (deterministic, no atomics),
   write the pair indices, the sentinel T*K into each expert's padding rows, the expert id of
   every block, and the padded total. A single program does all of it for small inputs.

2. Gate/up grouped GEMM: persistent programs walk the (row block, column tile) pairs below the
   padded total (read on the device, so padding blocks past it are never visited) in a
   grouped order. The A rows are gathered straight from x through pair // K, so x is never
   permuted; the gate and up tiles of the block's expert share the A tile and feed two fp32
   accumulators, stored as they are (activation dtype) into a [rows, 2I] buffer in the sorted
   row order. A separate kernel computes h = silu(gate) * up from that buffer.

3. Down grouped GEMM: the same schedule over h (contiguous rows) and the block's expert's w2;
   the epilogue scatters each row, unweighted, to its pair's row of a [T*K, H] buffer.

4. Combine: y[t] = sum over j of topk_weights[t, j] * buffer row t*K + j, in fp32, rounded
   once.

BM follows the expected number of pairs per expert, T*K/E: 16 for decode, 32 / 64 for a few
dozen, 128 for prefill; each BM has its own autotuned tile list (BN, BK, warps, stages,
GROUP_M, programs per SM) keyed on the problem size. On sm_90 the weight tiles (and h's in
the down GEMM) come through TMA tensor descriptors; expert offsets are int64. Under
TRITON_INTERPRET=1 every list has one small config and dtypes come from the pointers, so the
CPU smoke run works in float16.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


# --------------------------------------------------------------------------------------------
# 1. Align: counting sort of the pairs into BM-padded per-expert blocks
# --------------------------------------------------------------------------------------------
@triton.jit
def _chunk_counts(IDS, chunk, numel, CH: tl.constexpr, SUB: tl.constexpr, E_P: tl.constexpr):
    """Number of pairs of each expert among pairs [chunk*CH, chunk*CH + CH) (one-hot sums)."""
    ev = tl.arange(0, E_P)
    counts = tl.zeros([E_P], dtype=tl.int32)
    for s in range(0, CH, SUB):
        i = chunk * CH + s + tl.arange(0, SUB)
        e = tl.load(IDS + i, mask=i < numel, other=-1)
        counts += tl.sum((e[:, None] == ev[None, :]).to(tl.int32), axis=0)
    return counts


@triton.jit
def _align_count_kernel(IDS, HIST, numel, CH: tl.constexpr, SUB: tl.constexpr,
                        E_P: tl.constexpr):
    """HIST[c, e] = number of pairs of expert e in chunk c."""
    c = tl.program_id(0)
    counts = _chunk_counts(IDS, c, numel, CH, SUB, E_P)
    tl.store(HIST + c * E_P + tl.arange(0, E_P), counts)


@triton.jit
def _align_scatter_kernel(IDS, HIST, SORTED, EXPERT_IDS, TOTAL, numel, E, n_chunks, n_blocks,
                          BM: tl.constexpr, CH: tl.constexpr, SUB: tl.constexpr,
                          E_P: tl.constexpr, RB: tl.constexpr, NBC: tl.constexpr,
                          ONE_CHUNK: tl.constexpr):
    """With cnt[e] the pairs of expert e, pad[e] = ceil(cnt[e] / BM) * BM and start[e] the
    exclusive scan of pad: SORTED[start[e] + r] = the r-th pair (in pair order) of expert e for
    r < cnt[e], the sentinel numel for cnt[e] <= r < pad[e]; EXPERT_IDS[b] = the expert owning
    rows [b*BM, b*BM + BM) (-1 past the total); TOTAL = sum of pad. Program c scatters chunk c."""
    c = tl.program_id(0)
    ev = tl.arange(0, E_P)
    if ONE_CHUNK:
        counts = _chunk_counts(IDS, 0, numel, CH, SUB, E_P)
        earlier = tl.zeros([E_P], dtype=tl.int32)
    else:
        counts = tl.zeros([E_P], dtype=tl.int32)
        earlier = tl.zeros([E_P], dtype=tl.int32)
        for r0 in range(0, n_chunks, RB):
            r = r0 + tl.arange(0, RB)
            h = tl.load(HIST + r[:, None] * E_P + ev[None, :], mask=(r < n_chunks)[:, None], other=0)
            counts += tl.sum(h, axis=0)
            earlier += tl.sum(tl.where((r < c)[:, None], h, 0), axis=0)
    padded = tl.cdiv(counts, BM) * BM
    ends = tl.cumsum(padded, axis=0)
    starts = ends - padded
    total = tl.sum(padded, axis=0)

    # this chunk's pairs, each at start + (pairs of its expert in earlier chunks) + its rank
    cursor = starts + earlier
    for s in range(0, CH, SUB):
        i = c * CH + s + tl.arange(0, SUB)
        valid = i < numel
        e = tl.load(IDS + i, mask=valid, other=-1)
        hit = (e[:, None] == ev[None, :]).to(tl.int32)            # [SUB, E_P] one-hot
        rank = tl.cumsum(hit, axis=0)                              # inclusive, per expert
        dest = tl.sum(hit * (cursor[None, :] + rank - 1), axis=1)
        tl.store(SORTED + dest, i, mask=valid)
        cursor += tl.sum(hit, axis=0)

    # sentinels in the padding rows (disjoint from the rows above); experts dealt round-robin
    mine = ((ev % n_chunks) == c) & (ev < E)
    pad_lo = starts + counts
    n_pad = padded - counts
    for r0 in tl.static_range(0, BM, 16):
        r = r0 + tl.arange(0, 16)
        tl.store(SORTED + pad_lo[:, None] + r[None, :], tl.zeros([E_P, 16], dtype=tl.int32) + numel,
                 mask=mine[:, None] & (r[None, :] < n_pad[:, None]))

    # owner of each block of this program's share: the number of experts ending at or before it
    per_prog = tl.cdiv(n_blocks, n_chunks)
    b_lo = c * per_prog
    b_hi = tl.minimum(b_lo + per_prog, n_blocks)
    for b0 in range(b_lo, b_hi, NBC):
        b = b0 + tl.arange(0, NBC)
        done = (ends[None, :] <= (b * BM)[:, None]) & (ev < E)[None, :]
        owner = tl.sum(done.to(tl.int32), axis=1)
        tl.store(EXPERT_IDS + b, tl.where(b * BM < total, owner, -1), mask=b < b_hi)
    if c == 0:
        tl.store(TOTAL, total)


# --------------------------------------------------------------------------------------------
# 2./3. Grouped GEMMs over the expert blocks
# --------------------------------------------------------------------------------------------
@triton.jit
def _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # GROUP_M consecutive row blocks (mostly one or two experts) are walked down before moving
    # to the next column tile: the programs in flight share those experts' weight tiles in L2.
    per_group = GROUP_M * num_pid_n
    group = tile // per_group
    first_m = group * GROUP_M
    span = tl.minimum(num_pid_m - first_m, GROUP_M)
    local = tile % per_group
    return first_m + local % span, local // span


@triton.jit
def _moe_gate_up_kernel(X, W1, GUBUF, SORTED, EXPERT_IDS, TOTAL,
                        num_pairs, H, I, w1_rows,
                        stride_xt, stride_w1e, stride_w1n, stride_gb,
                        TOPK: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                        BK: tl.constexpr, GROUP_M: tl.constexpr, OCC: tl.constexpr,
                        USE_TMA: tl.constexpr):
    """GUBUF[row, n] = g and GUBUF[row, I + n] = u for every sorted row below the padded total,
    where g = x[tok] @ w1[e, n].T, u = x[tok] @ w1[e, I + n].T, tok = SORTED[row] // TOPK and
    e = EXPERT_IDS[row // BM]. Padding rows (SORTED = num_pairs) get 0."""
    out_ty = GUBUF.dtype.element_ty
    pid = tl.program_id(0)
    n_progs = tl.num_programs(0)
    total = tl.load(TOTAL)                      # padded total, on device: padding past it is
    num_pid_m = total // BM                     # never scheduled
    num_pid_n = tl.cdiv(I, BN)
    num_tiles = num_pid_m * num_pid_n
    k_steps = tl.cdiv(H, BK)
    rk = tl.arange(0, BK)
    if USE_TMA:
        w_desc = tl.make_tensor_descriptor(W1, shape=[w1_rows, H], strides=[stride_w1n, 1],
                                           block_shape=[BN, BK])
    for tile in range(pid, num_tiles, n_progs):
        pid_m, pid_n = _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        rows = pid_m * BM + tl.arange(0, BM)
        pair = tl.load(SORTED + rows)
        valid = pair < num_pairs
        tok = tl.where(valid, pair // TOPK, 0)
        expert = tl.load(EXPERT_IDS + pid_m)
        # gather the A rows from x through the pair index: x itself is never permuted
        a_ptrs = X + tok.to(tl.int64)[:, None] * stride_xt + rk[None, :]
        acc_g = tl.zeros((BM, BN), dtype=tl.float32)
        acc_u = tl.zeros((BM, BN), dtype=tl.float32)
        if USE_TMA:
            row_g = expert * (2 * I) + pid_n * BN
            row_u = row_g + I
            for ks in range(k_steps):
                a = tl.load(a_ptrs, mask=valid[:, None] & ((ks * BK + rk) < H)[None, :], other=0.0)
                bg = w_desc.load([row_g, ks * BK])
                bu = w_desc.load([row_u, ks * BK])
                acc_g = tl.dot(a, bg.T, acc_g)
                acc_u = tl.dot(a, bu.T, acc_u)
                a_ptrs += BK
        else:
            n = pid_n * BN + tl.arange(0, BN)
            n_c = tl.where(n < I, n, 0)
            g_ptrs = W1 + expert.to(tl.int64) * stride_w1e + n_c[:, None] * stride_w1n + rk[None, :]
            u_ptrs = g_ptrs + I * stride_w1n
            for ks in range(k_steps):
                kmask = ((ks * BK + rk) < H)[None, :]
                a = tl.load(a_ptrs, mask=valid[:, None] & kmask, other=0.0)
                bg = tl.load(g_ptrs, mask=kmask, other=0.0)
                bu = tl.load(u_ptrs, mask=kmask, other=0.0)
                acc_g = tl.dot(a, bg.T, acc_g)
                acc_u = tl.dot(a, bu.T, acc_u)
                a_ptrs += BK
                g_ptrs += BK
                u_ptrs += BK
        # raw gate and up tiles; SwiGLU runs in its own kernel
        n = pid_n * BN + tl.arange(0, BN)
        g_dst = GUBUF + rows.to(tl.int64)[:, None] * stride_gb + n[None, :]
        tl.store(g_dst, acc_g.to(out_ty), mask=(n < I)[None, :])
        tl.store(g_dst + I, acc_u.to(out_ty), mask=(n < I)[None, :])


@triton.jit
def _silu_mul_kernel(GUBUF, HBUF, TOTAL, I, stride_gb, stride_hb,
                     BR: tl.constexpr, BC: tl.constexpr):
    """HBUF[row, c] = silu(GUBUF[row, c]) * GUBUF[row, I + c] (fp32 math) for rows below the
    padded total."""
    total = tl.load(TOTAL)
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    m = (rows < total)[:, None] & (c < I)[None, :]
    src = GUBUF + rows.to(tl.int64)[:, None] * stride_gb + c[None, :]
    g = tl.load(src, mask=m, other=0.0).to(tl.float32)
    u = tl.load(src + I, mask=m, other=0.0).to(tl.float32)
    h = g * tl.sigmoid(g) * u
    tl.store(HBUF + rows.to(tl.int64)[:, None] * stride_hb + c[None, :],
             h.to(HBUF.dtype.element_ty), mask=m)


@triton.jit
def _moe_down_kernel(HBUF, W2, OUT, SORTED, EXPERT_IDS, TOTAL,
                     num_pairs, H, I, hb_rows, w2_rows,
                     stride_hb, stride_w2e, stride_w2n, stride_om,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                     GROUP_M: tl.constexpr, OCC: tl.constexpr, USE_TMA: tl.constexpr):
    """OUT[p, n] = HBUF[row] @ w2[e, n].T for every sorted row below the padded total holding a
    real pair p = SORTED[row], e = EXPERT_IDS[row // BM]."""
    out_ty = OUT.dtype.element_ty
    pid = tl.program_id(0)
    n_progs = tl.num_programs(0)
    total = tl.load(TOTAL)
    num_pid_m = total // BM
    num_pid_n = tl.cdiv(H, BN)
    num_tiles = num_pid_m * num_pid_n
    k_steps = tl.cdiv(I, BK)
    rk = tl.arange(0, BK)
    if USE_TMA:
        a_desc = tl.make_tensor_descriptor(HBUF, shape=[hb_rows, I], strides=[stride_hb, 1],
                                           block_shape=[BM, BK])
        b_desc = tl.make_tensor_descriptor(W2, shape=[w2_rows, I], strides=[stride_w2n, 1],
                                           block_shape=[BN, BK])
    for tile in range(pid, num_tiles, n_progs):
        pid_m, pid_n = _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        expert = tl.load(EXPERT_IDS + pid_m)
        rows = pid_m * BM + tl.arange(0, BM)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        if USE_TMA:
            row_b = expert * H + pid_n * BN
            for ks in range(k_steps):
                a = a_desc.load([pid_m * BM, ks * BK])
                b = b_desc.load([row_b, ks * BK])
                acc = tl.dot(a, b.T, acc)
        else:
            n = pid_n * BN + tl.arange(0, BN)
            n_c = tl.where(n < H, n, 0)
            a_ptrs = HBUF + rows.to(tl.int64)[:, None] * stride_hb + rk[None, :]
            b_ptrs = W2 + expert.to(tl.int64) * stride_w2e + n_c[:, None] * stride_w2n + rk[None, :]
            for ks in range(k_steps):
                kmask = ((ks * BK + rk) < I)[None, :]
                a = tl.load(a_ptrs, mask=kmask, other=0.0)
                b = tl.load(b_ptrs, mask=kmask, other=0.0)
                acc = tl.dot(a, b.T, acc)
                a_ptrs += BK
                b_ptrs += BK
        # epilogue: scatter the unweighted row to the pair's row (one writer per row)
        pair = tl.load(SORTED + rows)
        valid = pair < num_pairs
        n = pid_n * BN + tl.arange(0, BN)
        tl.store(OUT + pair.to(tl.int64)[:, None] * stride_om + n[None, :], acc.to(out_ty),
                 mask=valid[:, None] & (n < H)[None, :])


# --------------------------------------------------------------------------------------------
# 4. Combine over the top-k slots
# --------------------------------------------------------------------------------------------
@triton.jit
def _combine_kernel(OUT, TOPK_W, Y, T, H, TOPK: tl.constexpr, BT: tl.constexpr,
                    BH: tl.constexpr):
    """Y[t, :] = sum over j < TOPK of TOPK_W[t*TOPK + j] * OUT[t*TOPK + j, :], in fp32."""
    t = tl.program_id(0) * BT + tl.arange(0, BT)
    hc = tl.program_id(1) * BH + tl.arange(0, BH)
    mask = (t < T)[:, None] & (hc < H)[None, :]
    src = OUT + (t.to(tl.int64) * TOPK)[:, None] * H + hc[None, :]
    acc = tl.zeros((BT, BH), dtype=tl.float32)
    for j in tl.static_range(TOPK):
        wt = tl.load(TOPK_W + t * TOPK + j, mask=t < T, other=0.0)
        acc += wt[:, None] * tl.load(src + j * H, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + t.to(tl.int64)[:, None] * H + hc[None, :], acc.to(Y.dtype.element_ty), mask=mask)


# --------------------------------------------------------------------------------------------
# Tile configurations per M regime (BM = rows per expert block)
# --------------------------------------------------------------------------------------------
def _cfg(bn, bk, warps, stages, group, occ):
    return triton.Config({"BN": bn, "BK": bk, "GROUP_M": group, "OCC": occ},
                         num_warps=warps, num_stages=stages)


def _gate_up_configs(bm):
    if _INTERPRET:
        return [_cfg(64, 64, 4, 2, 2, 1)]
    return {
        # prefill: two 128x128 fp32 accumulators need 8 warps; the OCC = 2 entries fit two
        # programs per SM (<= ~100 KB of stages each) so one's epilogue overlaps the other's loop
        128: [_cfg(128, 64, 8, 3, 8, 1), _cfg(128, 64, 8, 4, 8, 1), _cfg(64, 64, 4, 3, 8, 2),
              _cfg(128, 64, 8, 3, 16, 1), _cfg(64, 128, 8, 3, 8, 1), _cfg(128, 32, 8, 4, 8, 2)],
        64: [_cfg(128, 64, 4, 4, 8, 2), _cfg(128, 64, 8, 3, 8, 2), _cfg(64, 128, 4, 3, 8, 2),
             _cfg(64, 64, 4, 4, 8, 3)],
        # few pairs per expert: the weights are streamed, favour wide K steps and more CTAs
        32: [_cfg(64, 128, 4, 4, 4, 2), _cfg(128, 64, 4, 4, 4, 2), _cfg(64, 64, 4, 5, 4, 3),
             _cfg(32, 128, 4, 4, 4, 4)],
        16: [_cfg(64, 128, 4, 4, 1, 2), _cfg(32, 128, 4, 4, 1, 4), _cfg(128, 64, 4, 4, 1, 2),
             _cfg(64, 256, 4, 3, 1, 2)],
    }[bm]


def _down_configs(bm):
    if _INTERPRET:
        return [_cfg(64, 64, 4, 2, 2, 1)]
    return {
        128: [_cfg(128, 64, 8, 4, 8, 1), _cfg(256, 64, 8, 3, 8, 1), _cfg(128, 64, 4, 3, 8, 2),
              _cfg(128, 128, 8, 3, 8, 1), _cfg(128, 64, 8, 3, 8, 2)],
        64: [_cfg(128, 64, 4, 4, 8, 2), _cfg(256, 64, 8, 3, 8, 1), _cfg(128, 128, 4, 3, 8, 2),
             _cfg(64, 128, 4, 4, 8, 3)],
        32: [_cfg(64, 128, 4, 4, 4, 2), _cfg(128, 64, 4, 4, 4, 2), _cfg(128, 128, 4, 3, 4, 2),
             _cfg(32, 256, 4, 3, 4, 4)],
        16: [_cfg(64, 128, 4, 4, 1, 2), _cfg(32, 256, 4, 3, 1, 4), _cfg(128, 64, 4, 4, 1, 2),
             _cfg(64, 256, 4, 3, 1, 3)],
    }[bm]


_BLOCK_MS = (16, 32, 64, 128)
_KEY = ["num_pairs", "H", "I", "USE_TMA"]
_GATE_UP = {bm: triton.autotune(configs=_gate_up_configs(bm), key=_KEY)(_moe_gate_up_kernel)
            for bm in _BLOCK_MS}
_DOWN = {bm: triton.autotune(configs=_down_configs(bm), key=_KEY)(_moe_down_kernel)
         for bm in _BLOCK_MS}


def _block_m(pairs_per_expert):
    """Rows per expert block from the average number of pairs per expert."""
    if pairs_per_expert <= 8:
        return 16        # decode: most experts get one or two pairs
    if pairs_per_expert <= 48:
        return 32
    if pairs_per_expert <= 192:
        return 64
    return 128           # prefill: hundreds of pairs per expert


# --------------------------------------------------------------------------------------------
# Host side
# --------------------------------------------------------------------------------------------
_NUM_SMS = {}


def _num_sms(device):
    if device.type != "cuda":
        return 4                 # interpreter: a few "SMs" so that programs loop over tiles
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _NUM_SMS:
        _NUM_SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _NUM_SMS[idx]


def _set_allocator(device):
    # device-side tensor descriptors need a small global scratch buffer per launch
    def alloc(size, alignment, stream):
        return torch.empty(size, dtype=torch.int8, device=device)

    triton.set_allocator(alloc)


def _tma_ok(H, I, *tensors):
    dev = tensors[0].device
    if dev.type == "cuda" and torch.cuda.get_device_capability(dev)[0] < 9:
        return False
    es = tensors[0].element_size()
    return (H * es) % 16 == 0 and (I * es) % 16 == 0 and all(t.data_ptr() % 16 == 0 for t in tensors)


def _align(ids, num_pairs, E, BM):
    """Counting sort of the pairs into BM-padded expert segments (see _align_scatter_kernel)."""
    dev = ids.device
    n_blocks = triton.cdiv(num_pairs + E * (BM - 1), BM)
    sorted_ids = torch.empty((n_blocks * BM,), dtype=torch.int32, device=dev)
    expert_ids = torch.empty((n_blocks,), dtype=torch.int32, device=dev)
    total = torch.empty((1,), dtype=torch.int32, device=dev)
    E_P = max(16, triton.next_power_of_2(E))
    SUB = max(16, min(64, 8192 // E_P))
    NBC = max(16, min(256, 8192 // E_P))
    if num_pairs <= 2048:
        CH = max(SUB, triton.next_power_of_2(num_pairs))
        _align_scatter_kernel[(1,)](ids, total, sorted_ids, expert_ids, total, num_pairs, E, 1,
                                    n_blocks, BM=BM, CH=CH, SUB=SUB, E_P=E_P, RB=16, NBC=NBC,
                                    ONE_CHUNK=True, num_warps=4)
    else:
        CH = 1024
        n_chunks = triton.cdiv(num_pairs, CH)
        hist = torch.empty((n_chunks * E_P,), dtype=torch.int32, device=dev)
        RB = max(1, min(triton.next_power_of_2(n_chunks), 8192 // E_P))
        _align_count_kernel[(n_chunks,)](ids, hist, num_pairs, CH=CH, SUB=SUB, E_P=E_P,
                                         num_warps=4)
        _align_scatter_kernel[(n_chunks,)](ids, hist, sorted_ids, expert_ids, total, num_pairs, E,
                                           n_chunks, n_blocks, BM=BM, CH=CH, SUB=SUB, E_P=E_P,
                                           RB=RB, NBC=NBC, ONE_CHUNK=False, num_warps=4)
    return sorted_ids, expert_ids, total, n_blocks


def run(x, w1, w2, topk_weights, topk_ids):
    T, H = x.shape
    E, two_i, _ = w1.shape
    I = two_i // 2
    K = topk_ids.shape[1]
    x = x.contiguous()
    w1 = w1.contiguous()
    w2 = w2.contiguous()
    tw = topk_weights.reshape(-1).contiguous()
    ids = topk_ids.reshape(-1).contiguous()
    dev = x.device
    y = torch.empty((T, H), dtype=x.dtype, device=dev)
    num_pairs = T * K
    if num_pairs == 0 or H == 0:
        return y
    if I == 0:
        return y.zero_()

    BM = _block_m(num_pairs / E)
    sorted_ids, expert_ids, total, n_blocks = _align(ids, num_pairs, E, BM)

    hb_rows = n_blocks * BM
    gubuf = torch.empty((hb_rows, 2 * I), dtype=x.dtype, device=dev)
    hbuf = torch.empty((hb_rows, I), dtype=x.dtype, device=dev)
    out = torch.empty((num_pairs, H), dtype=x.dtype, device=dev)
    use_tma = _tma_ok(H, I, x, w1, w2, hbuf)
    if use_tma:
        _set_allocator(dev)
    n_sms = _num_sms(dev)

    grid_up = lambda meta: (min(n_sms * meta["OCC"], n_blocks * triton.cdiv(I, meta["BN"])),)
    _GATE_UP[BM][grid_up](x, w1, gubuf, sorted_ids, expert_ids, total,
                          num_pairs, H, I, E * 2 * I,
                          x.stride(0), w1.stride(0), w1.stride(1), gubuf.stride(0),
                          TOPK=K, BM=BM, USE_TMA=use_tma)
    BC = min(256, max(16, triton.next_power_of_2(I)))
    _silu_mul_kernel[(triton.cdiv(hb_rows, 16), triton.cdiv(I, BC))](
        gubuf, hbuf, total, I, gubuf.stride(0), hbuf.stride(0), BR=16, BC=BC, num_warps=4)
    grid_down = lambda meta: (min(n_sms * meta["OCC"], n_blocks * triton.cdiv(H, meta["BN"])),)
    _DOWN[BM][grid_down](hbuf, w2, out, sorted_ids, expert_ids, total,
                         num_pairs, H, I, hb_rows, E * H,
                         hbuf.stride(0), w2.stride(0), w2.stride(1), out.stride(0),
                         BM=BM, USE_TMA=use_tma)
    BH = min(1024, max(16, triton.next_power_of_2(H)))
    BT = max(1, 4096 // BH)
    _combine_kernel[(triton.cdiv(T, BT), triton.cdiv(H, BH))](out, tw, y, T, H, TOPK=K, BT=BT,
                                                              BH=BH, num_warps=4)
    return y
