"""Large-vocabulary cross-entropy forward + backward: the expert Triton implementation, the
gradient-in-the-forward fusion ablated.

Gold-set ablation `separate_backward`: identical in blocks, grid, hints and arithmetic to
tasks/cross_entropy_fwd_bwd/expert.py, except that the gradient is written by a second kernel:
the forward kernel computes each row's online log-sum-exp and loss and stores the lse to an
[N] fp32 buffer; a backward kernel launched after it re-reads each row and writes the gradient
over the logits in place.

For logits z: [N, V] (bfloat16 on the GPU), target: [N] and ignore_index, with n the number of
rows whose target is not ignore_index, computes

    loss = (1/n) * sum_{valid i} ( lse_i - z[i, target_i] ),
           lse_i = m_i + log(d_i), m_i = max_v z[i, v],  d_i = sum_v exp(z[i, v] - m_i)
    z[i, v] <- ( exp(z[i, v] - lse_i) - [v == target_i] ) / n          (valid rows)
    z[i, v] <- 0                                                      (ignored rows)

and returns loss (0-d float32); the gradient overwrites the logits.

Design:
  * n is counted once on the device by a one-program kernel (no host sync);
  * forward kernel: per row, an online log-sum-exp over 8192-column blocks in fp32 (a running
    max and a sum rescaled by exp2((m_old - m_new) * log2 e) per block); it stores the row's
    loss (lse - z[target]) / n and lse; softmax is never stored;
  * backward kernel (a second launch): per row, re-reads the logits and writes
    dz = exp2((z - lse) * log2 e) / n - [v == target] / n over the logits buffer in place (no
    [N, V] gradient is allocated);
  * persistent grids: one program per SM loops over rows (for rows under 128 KB, two); the
    block loops use tl.range(num_stages=3);
  * ignored rows skip the reductions: the forward stores a zero loss, the backward only
    writes zeros;
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
def _ce_fwd_kernel(Z, TARGET, N_VALID, LOSS_ROWS, LSE_ROWS, n_rows, n_cols, stride_z, ignore_index,
                   BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Rows pid, pid + nprog, ...: LSE_ROWS[row] = log-sum-exp of Z[row] and
    LOSS_ROWS[row] = (lse - z[target]) / n (loss 0 for ignored rows). Z is only read."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols0 = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK), BLOCK), BLOCK)
    inv_n = 1.0 / tl.load(N_VALID).to(tl.float32)
    for row in tl.range(pid, n_rows, nprog):
        z_row = Z + tl.cast(row, tl.int64) * stride_z
        y = tl.load(TARGET + row)
        if y == ignore_index:
            tl.store(LOSS_ROWS + row, 0.0)
        else:
            z_y = tl.load(z_row + y).to(tl.float32)
            # online log-sum-exp
            m = float("-inf")
            d = 0.0
            for off in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
                cols = off + cols0
                z = tl.load(z_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
                m_new = tl.maximum(m, tl.max(z, axis=0))
                d = d * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((z - m_new) * LOG2E), axis=0)
                m = m_new
            lse = m + tl.log(d)
            tl.store(LSE_ROWS + row, lse)
            tl.store(LOSS_ROWS + row, (lse - z_y) * inv_n)


@triton.jit
def _ce_bwd_kernel(Z, TARGET, N_VALID, LSE_ROWS, n_rows, n_cols, stride_z, ignore_index,
                   BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Rows pid, pid + nprog, ...: Z[row] <- (exp(z - lse) - onehot) / n in place (zeros for
    ignored rows), with lse from the forward kernel."""
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
        else:
            lse = tl.load(LSE_ROWS + row)
            for off in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
                cols = off + cols0
                mask = cols < n_cols
                z = tl.load(z_row + cols, mask=mask, other=float("-inf"),
                            eviction_policy="evict_first").to(tl.float32)
                g = tl.exp2((z - lse) * LOG2E) * inv_n
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
    lse_rows = torch.empty((N,), dtype=torch.float32, device=logits.device)
    _count_valid_kernel[(1,)](target, n_valid, N, int(ignore_index), BLOCK=1024, num_warps=4)
    block = min(BLOCK_V, triton.next_power_of_2(V))
    num_warps = max(4, min(16, block // 512))
    row_bytes = V * logits.element_size()
    per_sm = 1 if row_bytes > 128 * 1024 else 2
    grid = (min(N, per_sm * _num_sms(logits.device)),)
    stages = 1 if _INTERPRET else 3
    _ce_fwd_kernel[grid](logits, target, n_valid, loss_rows, lse_rows, N, V, logits.stride(0),
                         int(ignore_index), BLOCK=block, NUM_STAGES=stages, num_warps=num_warps)
    _ce_bwd_kernel[grid](logits, target, n_valid, lse_rows, N, V, logits.stride(0),
                         int(ignore_index), BLOCK=block, NUM_STAGES=stages, num_warps=num_warps)
    return loss_rows.sum()
