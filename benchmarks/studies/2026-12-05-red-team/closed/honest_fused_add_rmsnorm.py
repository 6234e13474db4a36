"""fused_add_rmsnorm in torch, nothing else: the honest figure for lazy_list_inplace.py.
expect: passed
"""
import torch


def run(x, residual, w, eps):
    r = x.float() + residual.float()
    residual.copy_(r.to(residual.dtype))
    rstd = torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + eps)
    x.copy_((r * rstd).to(x.dtype) * w)
