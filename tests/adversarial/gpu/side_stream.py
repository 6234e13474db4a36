"""Does its work on a side stream it creates (invisible to events on the current stream alone):
the harness sees the side stream in the profile and closes each window with a device synchronize.
expect: passed
"""
import torch

_stream = None


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    global _stream
    _stream = _stream or torch.cuda.Stream()
    _stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_stream):
        y = _rms(x, w, eps)
    torch.cuda.current_stream().wait_stream(_stream)
    return y
