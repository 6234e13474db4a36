"""LayerNorm backward (dx, dw, db), plain Triton implementation.

For x, dy: [M, N], w: [N] and the saved fp32 mean, rstd: [M]:

    xhat = (x - mean) * rstd,  g = w * dy
    dx   = rstd * (g - xhat * mean_n(xhat * g) - mean_n(g))
    dw   = sum_m dy * xhat,    db = sum_m dy

all in fp32, rounded once. Two independent kernels:
  * dx: one program per row, 1024-column chunks; a first loop sums c1 and c2, a second loop
    re-reads x and dy and writes dx;
  * dw, db: one program per 256-column strip, looping over all M rows and re-reading x, dy, mean
    and rstd to rebuild xhat (so x and dy are read from memory twice overall).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _ln_bwd_dx_naive_kernel(X, W, DY, MEAN, RSTD, DX, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    mean = tl.load(MEAN + row)
    rstd = tl.load(RSTD + row)
    s1 = tl.zeros([CHUNK], dtype=tl.float32)
    s2 = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < n_cols
        x = tl.load(X + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        s1 += xhat * w * dy
        s2 += w * dy
    c1 = tl.sum(s1, axis=0) / n_cols
    c2 = tl.sum(s2, axis=0) / n_cols
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < n_cols
        x = tl.load(X + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        xhat = (x - mean) * rstd
        dx = (w * dy - xhat * c1 - c2) * rstd
        tl.store(DX + row * n_cols + cols, dx.to(DX.dtype.element_ty), mask=mask)


@triton.jit
def _ln_bwd_dwdb_naive_kernel(X, DY, MEAN, RSTD, DW, DB, n_rows, n_cols, BLOCK_C: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = cols < n_cols
    dw = tl.zeros([BLOCK_C], dtype=tl.float32)
    db = tl.zeros([BLOCK_C], dtype=tl.float32)
    for row in range(0, n_rows):
        x = tl.load(X + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(MEAN + row)
        rstd = tl.load(RSTD + row)
        dw += dy * (x - mean) * rstd
        db += dy
    tl.store(DW + cols, dw.to(DW.dtype.element_ty), mask=mask)
    tl.store(DB + cols, db.to(DB.dtype.element_ty), mask=mask)


def run(x, w, dy, mean, rstd):
    N = x.shape[-1]
    x2 = x.reshape(-1, N).contiguous()
    dy2 = dy.reshape(-1, N).contiguous()
    M = x2.shape[0]
    dx = torch.empty_like(x2)
    dw = torch.zeros((N,), dtype=w.dtype, device=w.device)
    db = torch.zeros((N,), dtype=w.dtype, device=w.device)
    if M > 0 and N > 0:
        mean, rstd, w = mean.contiguous(), rstd.contiguous(), w.contiguous()
        _ln_bwd_dx_naive_kernel[(M,)](x2, w, dy2, mean, rstd, dx, N, CHUNK=1024, num_warps=4)
        _ln_bwd_dwdb_naive_kernel[(triton.cdiv(N, 256),)](x2, dy2, mean, rstd, dw, db, M, N,
                                                          BLOCK_C=256, num_warps=4)
    return dx.view(x.shape), dw, db
