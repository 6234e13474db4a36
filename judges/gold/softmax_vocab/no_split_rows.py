"""Row softmax over vocabulary-sized rows: the expert Triton implementation, the split-row
path for small batches ablated.

Gold-set ablation `no_split_rows`: identical to tasks/softmax_vocab/expert.py except that a
wide row is never cut across programs: the online path is one kernel with one program per row
that computes the row's (max, sum) online and then normalizes it; no partial (max, sum) buffer
and no cross-chunk LSE merge.

Computes y[m, :] = exp(x[m, :] - max_m) / sum(exp(x[m, :] - max_m)) in fp32, for x: [M, N]
(bfloat16 on the GPU) and y: [M, N] float32.

Design (memory-bound; the goal is the fewest passes over x at full bandwidth):
  * rows that fit on chip (next_pow2(N) <= 16384): one block per row, max / exp / sum /
    normalize from registers, so x is read once and y written once; a persistent grid of
    ~4 programs per SM strides over the rows with tl.range(num_stages=2), which prefetches
    the next row while the current one is reduced (Triton tutorial 02);
  * wider rows: online softmax in one kernel with one program per row (grid M, whatever M):
    a first loop over 4096-column blocks keeps a running max m and a sum d rescaled by
    exp(m_old - m_new) per block; a second loop re-reads the row and writes exp(x - m) / d:
    two reads of x instead of three;
  * exp is exp2((x - m) * log2(e)); x is streamed with evict_first where it is read for the
    last time; num_warps grows with the block (8-16 warps for 4-16k elements).
Dtypes come from the pointers, so the kernels run bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
LOG2E = tl.constexpr(1.4426950408889634)
MAX_FUSED = 16384          # widest row kept whole in registers (64 KB of fp32 per program)


@triton.jit
def _softmax_rows_kernel(X, Y, n_rows, n_cols, stride_x, stride_y,
                         BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """y[row] = softmax(x[row]) for rows pid, pid + nprog, ...; the whole row is one block."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK), BLOCK), BLOCK)
    mask = cols < n_cols
    for row in tl.range(pid, n_rows, nprog, num_stages=NUM_STAGES):
        row64 = tl.cast(row, tl.int64)      # (the interpreter's tl.range yields Python ints)
        x = tl.load(X + row64 * stride_x + cols, mask=mask, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32)
        m = tl.max(x, axis=0)
        e = tl.exp2((x - m) * LOG2E)
        d = tl.sum(e, axis=0)
        tl.store(Y + row64 * stride_y + cols, e * (1.0 / d), mask=mask)


@triton.jit
def _softmax_online_kernel(X, Y, n_cols, stride_x, stride_y,
                           BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Row program_id(0): online (max, sum of exp(x - max)) over the whole row in one loop,
    then a second loop writes y = exp(x - max) / sum."""
    row64 = tl.program_id(0).to(tl.int64)
    x_row = X + row64 * stride_x
    y_row = Y + row64 * stride_y
    cols0 = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK), BLOCK), BLOCK)
    m = float("-inf")
    d = 0.0
    # pass 1: running max and rescaled running sum (x is re-read by pass 2: default policy)
    for off in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
        cols = off + cols0
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((x - m_new) * LOG2E), axis=0)
        m = m_new
    inv_d = 1.0 / d
    # pass 2: normalize (last read of x)
    for off in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
        cols = off + cols0
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32)
        tl.store(y_row + cols, tl.exp2((x - m) * LOG2E) * inv_d, mask=mask)


_sm_count = {}


def _num_sms(device):
    if device.type != "cuda":
        # CPU interpreter: size the grid for one virtual SM, so the small smoke shapes still
        # take the multi-row / persistent / multi-chunk paths the GPU uses at full size
        return 1
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sm_count:
        _sm_count[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sm_count[idx]


def run(x):
    M, N = x.shape
    if x.stride(-1) != 1:
        x = x.contiguous()
    y = torch.empty((M, N), dtype=torch.float32, device=x.device)
    if M == 0 or N == 0:
        return y
    n_sm = _num_sms(x.device)
    stages = 1 if _INTERPRET else 2
    block = triton.next_power_of_2(N)
    if block <= MAX_FUSED:
        num_warps = max(4, min(16, block // 512))        # ~16 fp32 per thread
        grid = (min(M, n_sm * max(1, 32 // num_warps)),)   # persistent: 2-8 programs per SM
        _softmax_rows_kernel[grid](x, y, M, N, x.stride(0), y.stride(0),
                                   BLOCK=block, NUM_STAGES=stages, num_warps=num_warps)
        return y
    # Online path: one program per row, 4096-column blocks.
    block = 4096
    _softmax_online_kernel[(M,)](x, y, N, x.stride(0), y.stride(0),
                                 BLOCK=block, NUM_STAGES=stages, num_warps=8)
    return y
