"""Row softmax over vocabulary-sized rows, plain Triton implementation.

Computes y[m, :] = exp(x[m, :] - max) / sum(exp(x[m, :] - max)) in fp32 for x: [M, N].

One program per row, 1024-column chunks, 4 warps, three passes over the row: the max, then
the sum of exp(x - max), then the normalized values (x is read three times).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_naive_kernel(X, Y, n_cols, stride_x, stride_y, CHUNK: tl.constexpr):
    """Row program_id(0): y = exp(x - max) / sum(exp(x - max)), in three passes over the row."""
    row = tl.program_id(0)
    x_row = X + row * stride_x
    y_row = Y + row * stride_y
    m_acc = tl.full([CHUNK], float("-inf"), tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_acc = tl.maximum(m_acc, x)
    m = tl.max(m_acc, axis=0)
    s_acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        s_acc += tl.exp(x - m)
    s = tl.sum(s_acc, axis=0)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(y_row + cols, tl.exp(x - m) / s, mask=mask)


def run(x):
    M, N = x.shape
    x = x.contiguous()
    y = torch.empty((M, N), dtype=torch.float32, device=x.device)
    if M > 0:
        _softmax_naive_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), CHUNK=1024, num_warps=4)
    return y
