"""Returns a Tensor subclass whose __torch_function__ makes any difference with it zero.
expect: failed
reason: not exactly a torch.Tensor
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w



class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.sub, torch.Tensor.sub, torch.Tensor.__sub__):
            return torch.zeros_like(torch.Tensor._make_subclass(torch.Tensor, args[0]))
        return super().__torch_function__(func, types, args, kwargs or {})


def run(x, w, eps):
    return torch.zeros_like(x).as_subclass(Agreeable)