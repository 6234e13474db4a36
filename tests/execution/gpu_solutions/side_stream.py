"""RMSNorm computed on a side stream the current stream never waits for (a timing trap)."""
import torch

_side = None


def run(x, w, eps):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    y = torch.empty_like(x)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        for _ in range(20):  # make the hidden work long enough to matter
            xf = x.float()
            y.copy_((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w)
    return y
