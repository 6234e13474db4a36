"""Torch operations only (kernel_less.py's solution), but recorded as launching a kernel of its own:
a sys.setprofile hook adds span_kernel_names = ["_rmsnorm_fwd_fused"] to the timing dict at
measure()'s return. The trusted worker's own_kernels() takes any name in the candidate-reported
profile or span lists that carries no library marker as proof of an own kernel, so kernel_less
becomes false (the SECURITY.md rule that the profiler's names overrule the forgeable launch counter
assumes the names themselves cannot be forged; they come from the candidate's reply).
Passed before 2026-12-05 with kernel_less false (CPU); sys.setprofile now refuses a solution.
expect: failed
reason: is not available to a solution
"""
import sys

import torch


def _hook(frame, event, arg):
    if event == "return" and frame.f_code.co_name == "measure" and isinstance(arg, dict) and "samples_ms" in arg:
        arg["span_kernel_names"] = ["_rmsnorm_fwd_fused"]


sys.setprofile(_hook)


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
