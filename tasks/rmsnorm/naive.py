"""RMSNorm forward (HF-Llama casting), plain Triton implementation.

Computes, for x: [T, H], w: [H] and a float eps:

    y[t, h] = float( to_dtype( float(x[t, h]) / sqrt(mean_h(float(x[t, :])^2) + eps) ) ) * float(w[h])

rounded to x's dtype. One program per row, a fixed chunk of 1024 columns and 4 warps; the row
is read twice (once for the sum of squares, once to normalize) and divided by sqrt.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_naive_kernel(X, W, Y, stride_x, stride_y, n_cols, eps, CHUNK: tl.constexpr):
    dtype = Y.dtype.element_ty
    row = tl.program_id(0)
    x_row = X + row * stride_x
    y_row = Y + row * stride_y
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    denom = tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x / denom).to(dtype).to(tl.float32) * w
        tl.store(y_row + cols, y.to(dtype), mask=mask)


def run(x, w, eps):
    H = x.shape[-1]
    x2 = x.reshape(-1, H).contiguous()
    y2 = torch.empty_like(x2)
    if x2.shape[0] > 0:
        _rmsnorm_naive_kernel[(x2.shape[0],)](x2, w.contiguous(), y2, x2.stride(0), y2.stride(0),
                                               H, float(eps), CHUNK=1024, num_warps=4)
    return y2.reshape(x.shape)
