"""Work left on the GPU between calls, against the trusted batch's pricing (GPU only; for part `tb`
of benchmarks/open_figures_h200.sh). An honest rmsnorm whose every call, after computing, queues
`torch.cuda._sleep` (a spin kernel of about 1 ms at 1.98 GHz) on a side stream (PyTorch creates its
streams non-blocking: they do not wait for the default stream, nor it for them), which nothing of
the harness's waits for: the digest's read syncs the current stream only. The
kernel runs on into whatever comes next: the solution's own next call or a call of the pricing
process, whose context waits for a time slice while it runs.

It understates nothing, so its status says little. What it measures is the batch's excess (the
solution's warm median round trip less the pricing process's) against the expert's on the same
workload: if the leftover kernel slowed the pricing calls more than the solution's own, the
excess falls below the call's real cost, and an understated figure could hide under it.
"""
import torch

SLEEP_CYCLES = 2_000_000
_side = None


def run(x, w, eps):
    global _side
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
    if _side is None:
        _side = torch.cuda.Stream()
    with torch.cuda.stream(_side):
        torch.cuda._sleep(SLEEP_CYCLES)
    return y
