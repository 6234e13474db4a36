"""Residual add + RMSNorm in place, plain Triton implementation.

For x, residual: [T, H], w: [H] and a float eps:

    residual[t, h] <- to_dtype( float(x[t, h]) + float(residual[t, h]) )
    x[t, h]        <- to_dtype( float(to_dtype(s[t, h] / sqrt(mean_h(r[t, :]^2) + eps))) * float(w[h]) )

where r is the fp32 sum and s is the sum after rounding to dtype (the stored residual).
One program per row, a fixed chunk of 1024 columns and 4 warps. A first loop adds, stores the
residual and accumulates the sum of squares; a second loop re-reads the stored residual from
memory and normalizes it, dividing by sqrt (as vLLM's plain CUDA kernel does).
"""
import triton
import triton.language as tl


@triton.jit
def _fused_add_rmsnorm_naive_kernel(X, R, W, stride_x, stride_r, n_cols, eps, CHUNK: tl.constexpr):
    x_dtype = X.dtype.element_ty
    row = tl.program_id(0)
    x_row = X + row * stride_x
    r_row = R + row * stride_r
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < n_cols
        r = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32) \
            + tl.load(r_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(r_row + cols, r.to(R.dtype.element_ty), mask=mask)
        acc += r * r
    denom = tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    tl.debug_barrier()      # the residual stores above must be visible to every thread below
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < n_cols
        s = tl.load(r_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        y = (s / denom).to(x_dtype).to(tl.float32) * w
        tl.store(x_row + cols, y.to(x_dtype), mask=mask)


def run(x, residual, w, eps):
    assert x.is_contiguous() and residual.is_contiguous()
    H = x.shape[-1]
    n_rows = x.numel() // H if H else 0
    if n_rows > 0:
        _fused_add_rmsnorm_naive_kernel[(n_rows,)](x, residual, w.contiguous(), H, H, H,
                                                    float(eps), CHUNK=1024, num_warps=4)
    return None
