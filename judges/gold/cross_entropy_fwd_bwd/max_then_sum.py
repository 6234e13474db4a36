"""Large-vocabulary cross-entropy forward + backward: the expert Triton implementation, the
online log-sum-exp ablated.

Gold-set ablation `max_then_sum`: identical to tasks/cross_entropy_fwd_bwd/expert.py except that
a row's log-sum-exp takes two loops over the row, a max pass and then a pass summing
exp(z - max), instead of one loop with a running max and a rescaled running sum. With the
gradient pass, each valid row is read three times.

For logits z: [N, V] (bfloat16 on the GPU), target: [N] and ignore_index, with n the number of
rows whose target is not ignore_index, computes

    loss = (1/n) * sum_{valid i} ( m_i + log(d_i) - z[i, target_i] ),
           m_i = max_v z[i, v],  d_i = sum_v exp(z[i, v] - m_i)
    z[i, v] <- ( exp(z[i, v] - m_i) / d_i - [v == target_i] ) / n     (valid rows)
    z[i, v] <- 0                                                      (ignored rows)

and returns loss (0-d float32); the gradient overwrites the logits.

Design (memory-bound: the logits are 1 GB; the goal is two streaming passes, the second from L2):
  * n is counted once on the device by a one-program kernel (no host sync);
  * per row, the log-sum-exp takes two loops over 8192-column blocks in fp32: pass 1a the
    row max m, pass 1b d = sum exp2((z - m) * log2 e); softmax is never stored;
  * pass 2 (same kernel, same program) re-reads the row and writes
    dz = exp2((z - m) * log2 e) * (1 / (d n)) - [v == target] / n over the logits buffer in
    place, so no [N, V] gradient is allocated and no backward kernel runs (Liger's design);
    z[target] is loaded before pass 2 overwrites it;
  * persistent grid: one program per SM loops over rows (for rows under 128 KB, two), so
    only ~132 rows (40 MB at V = 152k) are in flight and the re-reads of a row hit L2;
    the block loops use tl.range(num_stages=3) so cp.async keeps ~48 KB per SM in flight;
  * ignored rows skip both reductions and only write zeros;
  * row offsets are int64 (N * V exceeds 2^31 at training batch sizes);
  * the per-row losses are scaled by 1/n in the kernel and summed by one torch reduction.
Dtypes come from the pointers, so the kernels run bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
LOG2E = tl.constexpr(1.4426950408889634)


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
def _ce_fwd_bwd_kernel(Z, TARGET, N_VALID, LOSS_ROWS, n_rows, n_cols, stride_z, ignore_index,
                       BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Rows pid, pid + nprog, ...: LOSS_ROWS[row] = (lse - z[target]) / n and the gradient
    (softmax - onehot) / n written over Z[row] (zeros and loss 0 for ignored rows)."""
    dtype = Z.dtype.element_ty
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols0 = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK), BLOCK), BLOCK)
    inv_n = 1.0 / tl.load(N_VALID).to(tl.float32)
    for row in tl.range(pid, n_rows, nprog):
        z_row = Z + tl.cast(row, tl.int64) * stride_z
        y = tl.load(TARGET + row)
        if y == ignore_index:
            zero = tl.zeros([BLOCK], dtype=dtype)
            for off in tl.range(0, n_cols, BLOCK):
                cols = off + cols0
                tl.store(z_row + cols, zero, mask=cols < n_cols)
            tl.store(LOSS_ROWS + row, 0.0)
        else:
            z_y = tl.load(z_row + y).to(tl.float32)            # before pass 2 overwrites it
            # pass 1a: row max
            m_acc = tl.full([BLOCK], float("-inf"), tl.float32)
            for off in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
                cols = off + cols0
                z = tl.load(z_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
                m_acc = tl.maximum(m_acc, z)
            m = tl.max(m_acc, axis=0)
            # pass 1b: sum of exp(z - m)
            d_acc = tl.zeros([BLOCK], dtype=tl.float32)
            for off in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
                cols = off + cols0
                z = tl.load(z_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
                d_acc += tl.exp2((z - m) * LOG2E)
            d = tl.sum(d_acc, axis=0)
            tl.store(LOSS_ROWS + row, (m + tl.log(d) - z_y) * inv_n)
            # pass 2: dz = p / n - onehot / n, in place
            scale = inv_n / d
            for off in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
                cols = off + cols0
                mask = cols < n_cols
                z = tl.load(z_row + cols, mask=mask, other=float("-inf"),
                            eviction_policy="evict_first").to(tl.float32)
                g = tl.exp2((z - m) * LOG2E) * scale
                g = tl.where(cols == y, g - inv_n, g)
                tl.store(z_row + cols, g.to(dtype), mask=mask)


_sm_count = {}
BLOCK_V = 8192


def _num_sms(device):
    if device.type != "cuda":
        # CPU interpreter: size the grid for one virtual SM, so the small smoke shapes still
        # take the multi-row / persistent / multi-chunk paths the GPU uses at full size
        return 1
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
    _count_valid_kernel[(1,)](target, n_valid, N, int(ignore_index), BLOCK=1024, num_warps=4)
    block = min(BLOCK_V, triton.next_power_of_2(V))
    num_warps = max(4, min(16, block // 512))
    row_bytes = V * logits.element_size()
    per_sm = 1 if row_bytes > 128 * 1024 else 2          # rows in flight must fit in L2
    grid = (min(N, per_sm * _num_sms(logits.device)),)
    _ce_fwd_bwd_kernel[grid](logits, target, n_valid, loss_rows, N, V, logits.stride(0),
                             int(ignore_index), BLOCK=block,
                             NUM_STAGES=1 if _INTERPRET else 3, num_warps=num_warps)
    return loss_rows.sum()
