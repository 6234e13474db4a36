"""Large-vocabulary cross-entropy forward + backward, plain Triton implementation.

For logits z: [N, V], target: [N], ignore_index and n = #(target != ignore_index):
    loss = (1/n) * sum_{valid i} ( log sum_v exp(z[i, v] - m_i) + m_i - z[i, target_i] )
    z[i, v] <- (exp(z[i, v] - m_i) / s_i - [v == target_i]) / n   (valid rows; 0 for ignored)
Returns loss (0-d float32); the gradient overwrites the logits.

One program per row, 1024-column chunks, 4 warps, three passes over the row (max, sum of exp,
gradient) with exp and per-element divisions; n is counted with torch on the device and the
loss is the torch sum of the per-row losses.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _ce_naive_kernel(Z, TARGET, N_VALID, LOSS_ROWS, n_cols, stride_z, ignore_index,
                     CHUNK: tl.constexpr):
    """Row program_id(0): LOSS_ROWS[row] = (lse - z[target]) / n and the gradient written over Z
    (zeros and loss 0 when target == ignore_index), in three passes over the row."""
    dtype = Z.dtype.element_ty
    row = tl.program_id(0)
    z_row = Z + row * stride_z
    y = tl.load(TARGET + row)
    n = tl.load(N_VALID).to(tl.float32)
    valid = y != ignore_index
    m_acc = tl.full([CHUNK], float("-inf"), tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        z = tl.load(z_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_acc = tl.maximum(m_acc, z)
    m = tl.max(m_acc, axis=0)
    s_acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        z = tl.load(z_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        s_acc += tl.exp(z - m)
    s = tl.sum(s_acc, axis=0)
    y_safe = tl.where(valid, y, 0)
    z_y = tl.load(z_row + y_safe).to(tl.float32)
    loss = tl.where(valid, (tl.log(s) + m - z_y) / n, 0.0)
    tl.store(LOSS_ROWS + row, loss)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < n_cols
        z = tl.load(z_row + cols, mask=mask, other=0.0).to(tl.float32)
        g = (tl.exp(z - m) / s - tl.where(cols == y, 1.0, 0.0)) / n
        g = tl.where(valid, g, 0.0)
        tl.store(z_row + cols, g.to(dtype), mask=mask)


def run(logits, target, ignore_index):
    N, V = logits.shape
    n_valid = (target != ignore_index).sum().to(torch.int32).reshape(1)
    loss_rows = torch.empty((N,), dtype=torch.float32, device=logits.device)
    if N > 0:
        _ce_naive_kernel[(N,)](logits, target, n_valid, loss_rows, V, logits.stride(0),
                               int(ignore_index), CHUNK=1024, num_warps=4)
    return loss_rows.sum()
