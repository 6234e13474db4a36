"""A Triton kernel that stores far outside its buffer: an illegal memory access on the GPU."""
import torch
import triton
import triton.language as tl


@triton.jit
def _bad(Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs + (1 << 40), tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def run(x, w, eps):
    y = torch.empty_like(x, dtype=torch.float32)
    _bad[(1,)](y, y.numel(), BLOCK=1024)
    return y.to(x.dtype)
