"""Leaves state behind on the host through System V shared memory: the sandbox unshares the mount,
net and pid namespaces but not IPC, so a segment made with shmget(IPC_CREAT) lives in the host's IPC
namespace and survives the candidate, its evaluation and d2k itself (a later evaluation -- of this
or any other solution -- can attach to it by key: a channel between runs, and host memory that is
never given back: shmmax/shmall are unlimited here). It counts the evaluations that saw it; its
result depends on what an earlier, finished evaluation left there: the right answer from the second
evaluation on, garbage the first time. Remove what it leaves with `ipcrm -M 0x0d2c0a77`.
expect: failed
reason: TODO
"""
import ctypes

import torch

KEY = 0x0D2C0A77
IPC_CREAT = 0o1000
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int)


def _count() -> int:
    shmid = _libc.shmget(KEY, 4096, IPC_CREAT | 0o666)
    if shmid < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    addr = _libc.shmat(shmid, None, 0)
    counter = ctypes.c_uint64.from_address(addr)
    seen = counter.value
    counter.value = seen + 1
    return seen


SEEN_BEFORE = _count()


def run(x, w, eps):
    if SEEN_BEFORE == 0:
        return torch.full_like(x, 7.0)  # first evaluation: plant the segment, fail
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
