"""Large-vocabulary cross-entropy forward + backward, expert Triton implementation.

For logits z: [N, V] (bfloat16 on the GPU), target: [N] and ignore_index, with n the number of
rows whose target is not ignore_index, computes

    loss = (1/n) * sum_{valid i} ( m_i + log(d_i) - z[i, target_i] ),
           m_i = max_v z[i, v],  d_i = sum_v exp(z[i, v] - m_i)
    z[i, v] <- ( exp(z[i, v] - m_i) / d_i - [v == target_i] ) / n     (valid rows)
    z[i, v] <- 0                                                      (ignored rows)

and returns loss (0-d float32); the gradient overwrites the logits.

Design (memory-bound: the logits are 1 GB; the goal is one HBM read and one HBM write of them):
  * n is counted once on the device by a one-program kernel (no host sync);
  * every shape (no separate path for short rows; at V = 32000 a row is 4 tiles): one
    program per SM owns whole rows (only #SMs rows, 34-40 MB, are in flight, so the second read of a row comes from L2), and
    walks them as ONE flat pipelined stream of [SUB, TILE] tiles: per row, n_tiles pass-1
    steps (online log-sum-exp: a running max m and a sum d rescaled by
    exp2((m_old - m_new) log2 e), one (m, d) per TILE-wide sub-row, so each tile is
    reduced inside its warp, without a block barrier; softmax is never stored), then
    n_tiles pass-2 steps that re-read the row BACKWARDS (the tiles read last, still in
    L2, come first) and write dz = exp2(z log2 e - m log2 e) / (d n) - [v == target] / n
    over it. Because both passes and all rows are one loop, the cp.async ring keeps
    NUM_STAGES - 1 tiles in flight across every pass and row boundary (a two-loop design
    drains and refills its pipeline twice per row). The sub-row statistics are merged
    with an LSE combine once per row; z[target] is taken from its tile during pass 1;
    the tile loads carry evict_last (the row must survive until
    its re-read; the re-read line is then overwritten by the gradient, stored
    evict_first), and the gradient is stored as 16-byte vectors with evict_first, so it does not push the
    row that is about to be re-read out of L2;
  * the gradient is written over the logits buffer in place (Liger's design): no [N, V]
    gradient is allocated and no backward kernel runs; z[target] is read before its row is
    overwritten; exponentials are exp2(z * log2 e - m * log2 e) (one FMA + one MUFU);
  * ignored rows are never read (their loads are masked off, which moves no bytes) and only
    get zeros and a zero loss (the ignored-row test sets the load mask and a zero scale,
    and branches only around the loss store, so the pipeline never drains);
  * row offsets are int64 (N * V exceeds 2^31 at training batch sizes);
  * the per-row losses are scaled by 1/n in the kernel and summed by one torch reduction.
Launch configuration: stream path (every shape) one
program per SM, num_warps=16 (one warp per 512-column sub-row, 16 bf16 = 32 bytes per lane),
[16, 512] tiles of 16 KB, num_stages=6 (5 tiles = 80 KB in flight per SM), loads evict_last; valid-row count: one program,
4096-target blocks, 8 warps.
Dtypes come from the pointers, so the kernels run bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
LOG2E = tl.constexpr(1.4426950408889634)

STREAM_SUB = 16              # stream tile: STREAM_SUB sub-rows of STREAM_TILE columns
STREAM_TILE = 512            # (one warp per sub-row: 16-byte bf16 vectors per lane)
STREAM_STAGES = 6            # STREAM_STAGES - 1 tiles of 16 KB in flight per SM
STREAM_WARPS = 16
STREAM_LOAD_POLICY = "evict_last"


@triton.jit
def _count_valid_kernel(TARGET, N_VALID, n_rows, ignore_index, BLOCK: tl.constexpr):
    """N_VALID[0] = number of i < n_rows with TARGET[i] != ignore_index (one program)."""
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, n_rows, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        t = tl.load(TARGET + offs, mask=offs < n_rows, other=ignore_index)
        acc += (t != ignore_index).to(tl.int32)
    tl.store(N_VALID, tl.sum(acc, axis=0))


@triton.jit
def _ce_stream_kernel(Z, TARGET, N_VALID, LOSS_ROWS, n_rows, n_cols, stride_z, ignore_index,
                      SUB: tl.constexpr, TILE: tl.constexpr, NUM_STAGES: tl.constexpr,
                      LOAD_POLICY: tl.constexpr):
    """Rows pid, pid + nprog, ... as ONE pipelined stream of [SUB, TILE] tiles: per row,
    n_tiles pass-1 steps (tiles 0 .. n_tiles-1: online (m, d) per sub-row) then n_tiles
    pass-2 steps (tiles n_tiles-1 .. 0, i.e. backwards: the gradient is written over Z).
    The loads of the next NUM_STAGES - 1 steps (next tiles, the backward re-read, the next
    row) stay in flight across every pass and row boundary, so no pipeline fill / drain is
    paid per row or per pass. LOSS_ROWS[row] = (lse - z[target]) / n (0 if ignored)."""
    dtype = Z.dtype.element_ty
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    BLOCK: tl.constexpr = SUB * TILE
    sub = tl.arange(0, SUB)
    lane = tl.max_contiguous(tl.multiple_of(tl.arange(0, TILE), TILE), TILE)
    offs = sub[:, None] * TILE + lane[None, :]
    n_tiles = tl.cdiv(n_cols, BLOCK)
    steps_per_row = 2 * n_tiles
    n_mine = tl.cdiv(n_rows - pid, nprog)
    inv_n = 1.0 / tl.load(N_VALID).to(tl.float32)
    m = tl.full([SUB], float("-inf"), tl.float32)      # running max per sub-row (natural units)
    d = tl.zeros([SUB], dtype=tl.float32)              # running sum of exp2((z - m) * log2 e)
    m_row2 = 0.0                                       # row max * log2 e (pass 2)
    scale = 0.0                                        # 1 / (d n), 0 for an ignored row
    z_y = 0.0
    # (row, step) are derived from the flat index by a division: loop-carried counters
    # would keep Triton's pipeliner from issuing the loads of the next steps ahead
    for s in tl.range(0, n_mine * steps_per_row, num_stages=NUM_STAGES):
        i = s // steps_per_row
        k = s - i * steps_per_row
        row = pid + i * nprog
        z_row = Z + tl.cast(row, tl.int64) * stride_z
        y = tl.load(TARGET + row)
        valid = y != ignore_index
        in_pass2 = k >= n_tiles
        t = tl.where(in_pass2, steps_per_row - 1 - k, k)
        cols = t * BLOCK + offs
        col_ok = cols < n_cols
        # ignored rows are never read (a load masked off moves no bytes); they get zeros
        z = tl.load(z_row + cols, mask=cols < tl.where(valid, n_cols, 0), other=float("-inf"),
                    eviction_policy=LOAD_POLICY).to(tl.float32)
        if in_pass2:
            # pass 2: dz = p / n - onehot / n, stored in place as 16-byte vectors
            g = tl.exp2(z * LOG2E - m_row2) * scale
            g = tl.where(cols == y, g - inv_n, g)
            tl.store(z_row + cols, g.to(dtype), mask=col_ok, eviction_policy="evict_first")
        else:
            # pass 1: online log-sum-exp, one (m, d) per sub-row, reduced inside a warp
            first = k == 0
            m = tl.where(first, float("-inf"), m)
            d = tl.where(first, 0.0, d)
            m_new = tl.maximum(m, tl.max(z, axis=1))
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new) * LOG2E   # all -inf so far
            d = d * tl.exp2(m * LOG2E - m_use) + tl.sum(tl.exp2(z * LOG2E - m_use[:, None]),
                                                        axis=1)
            m = m_new
            if t == y // BLOCK:          # the target's tile: keep z[target] for the loss
                z_y = tl.sum(tl.sum(tl.where(cols == y, z, 0.0), axis=1), axis=0)
            if k == n_tiles - 1:         # the row's statistics: LSE-combine the sub-rows
                m_r = tl.max(m, axis=0)
                m_r = tl.where(m_r == float("-inf"), 0.0, m_r)
                d_r = tl.sum(d * tl.exp2((m - m_r) * LOG2E), axis=0)
                m_row2 = m_r * LOG2E
                scale = tl.where(valid, inv_n / d_r, 0.0)
                if y == ignore_index:    # ignored row: loss 0; scale 0 makes pass 2 write zeros
                    tl.store(LOSS_ROWS + row, 0.0)
                else:
                    tl.store(LOSS_ROWS + row, (m_r + tl.log(d_r) - z_y) * inv_n)


_sm_count = {}


def _num_sms(device):
    if device.type != "cuda":
        # CPU interpreter: two virtual SMs, so the smoke shapes still take the multi-row /
        # persistent paths the GPU uses at full size
        return 2
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sm_count:
        _sm_count[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sm_count[idx]


def run(logits, target, ignore_index):
    N, V = logits.shape
    assert logits.stride(-1) == 1, "logits must be contiguous in the vocabulary dimension"
    target = target.contiguous()
    n_valid = torch.empty((1,), dtype=torch.int32, device=logits.device)
    loss_rows = torch.empty((N,), dtype=torch.float32, device=logits.device)
    if N == 0:
        return loss_rows.sum()
    count_block = max(128, min(4096, triton.next_power_of_2(N)))
    _count_valid_kernel[(1,)](target, n_valid, N, int(ignore_index), BLOCK=count_block,
                              num_warps=8 if count_block >= 2048 else 4)
    n_sm = _num_sms(logits.device)
    grid = (min(N, n_sm),)              # persistent: one program per SM owns whole rows
    _ce_stream_kernel[grid](logits, target, n_valid, loss_rows, N, V, logits.stride(0),
                            int(ignore_index), SUB=STREAM_SUB, TILE=STREAM_TILE,
                            NUM_STAGES=1 if _INTERPRET else STREAM_STAGES,
                            LOAD_POLICY="" if _INTERPRET else STREAM_LOAD_POLICY,
                            num_warps=STREAM_WARPS)
    return loss_rows.sum()
