"""Hands each timed call's work to a helper *process* and returns before it is done. At import the
solution forks a child (in the sandbox's pid namespace; no thread, hook or replaced name, so the
guard, the thread watch and the hook watch see nothing) that spins on an anonymous shared mapping
made before the fork (hot while calls keep coming: a heartbeat in the mapping). A timed call copies
x and w into the mapping (two small memcpys), bumps a request counter and returns at once a tensor
over the mapping's output region (``torch.frombuffer``), still unwritten. The child computes
RMSNorm into that region on the other core while the harness runs ``after()``: its guard check,
the type test and only then the copy (``TensorBase.clone``) that is checked. The window holds the
two copies and the counter; the work lands between the clock and the copy, in another process.
Unlike cmd_relay_precompute.py it needs no descriptor of the harness's: a check of the command
pipe would not stop it. Warm-up and correctness calls compute honestly (and hand the helper the
same work, to keep it warm). A race: if the child is late, the copy holds stale values and a
checked call fails: on this 2-core machine, shared with other work, this version passed both
workloads in 1 of 4 runs (ed8c83d, 20 and 18 us against the control's ~57) and lost the race on a
checked call in the other 3. cmd_relay_precompute.py is the deterministic form.

Session 22: the trusted side now reads from /proc the CPU time the candidate's other processes run
while it is timed (d2k/execution/tree_cpu.py). The helper spins, so a run that wins the race is
timing_suspect (79.6 ms of its other processes' CPU against 0.1 ms of timed calls); one that loses
it fails a checked call. Never passed. (A helper that
blocks until each call wakes it pays only the work it takes out of the calls, and is flagged once
that exceeds a quarter of the timed total plus 2 ms.)
expect: failed|timing_suspect
expect_gpu: failed|error|timing_suspect
"""
import mmap
import os
import sys
import time

import torch

_SHM_BYTES = 8 << 20
_REGION = 2 << 20  # bytes per tensor region (x, w, y)
_X, _W, _Y = 4096, 4096 + _REGION, 4096 + 2 * _REGION
_shm = mmap.mmap(-1, _SHM_BYTES)
_DTYPES = [torch.float16, torch.bfloat16, torch.float32]


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _u64(off):
    return int.from_bytes(_shm[off:off + 8], "little")


def _helper(parent):
    import struct

    import torch.nn.functional as F

    torch.set_num_threads(1)
    q = memoryview(_shm).cast("Q")
    done = 0
    last_beat, hot_until = 0, 0.0
    views = {}
    try:
        while True:
            req = q[0]
            if req == done:
                beat = q[6]
                if beat != last_beat:
                    last_beat, hot_until = beat, time.monotonic() + 1.0
                elif time.monotonic() > hot_until:
                    time.sleep(0.0005)
                    if os.getppid() != parent:
                        break
                continue
            key = (q[2], q[3], q[4])
            v = views.get(key)
            if v is None:
                t, h, code = key
                dtype = _DTYPES[code]
                v = views[key] = (torch.frombuffer(_shm, dtype=dtype, count=t * h, offset=_X).view(t, h),
                                  torch.frombuffer(_shm, dtype=dtype, count=h, offset=_W),
                                  torch.frombuffer(_shm, dtype=dtype, count=t * h, offset=_Y).view(t, h), h, dtype)
            x, w, y, h, dtype = v
            (eps,) = struct.unpack("<d", _shm[40:48])
            torch.mul(F.rms_norm(x.float(), (h,), eps=eps).to(dtype), w, out=y)
            done = req
            q[1] = done
    except BaseException:
        pass
    os._exit(0)


def _install():
    if not sys.argv[0].endswith("candidate.py"):
        return False
    parent = os.getpid()
    if os.fork() == 0:
        _helper(parent)
    return True


_INSTALLED = _install()


_q = memoryview(_shm).cast("Q")
_pviews = {}
_eps_bits = {}
_measure = [None]


def run(x, w, eps):
    q = _q
    q[6] += 1  # keeps the helper spinning hot
    f1 = sys._getframe(1)
    timed = False
    if f1.f_code.co_name == "call":
        fm = f1.f_back
        if fm.f_code.co_name == "measure":
            # the first call of a timing loop is its warm-up; the ones after it are timed
            timed = _measure[0] == id(fm)
            _measure[0] = id(fm)
    key = (tuple(x.shape), x.dtype)
    v = _pviews.get(key)
    if v is None:
        if not (_INSTALLED and x.dim() == 2 and x.dtype in _DTYPES and x.numel() * x.element_size() <= _REGION):
            return _rmsnorm(x, w, eps)
        t, h = x.shape
        v = _pviews[key] = (torch.frombuffer(_shm, dtype=x.dtype, count=t * h, offset=_X).view(t, h),
                            torch.frombuffer(_shm, dtype=x.dtype, count=h, offset=_W),
                            torch.frombuffer(_shm, dtype=x.dtype, count=t * h, offset=_Y).view(t, h),
                            t, h, _DTYPES.index(x.dtype))
    xv, wv, yv, t, h, code = v
    bits = _eps_bits.get(eps)
    if bits is None:
        import struct

        bits = _eps_bits[eps] = struct.unpack("<Q", struct.pack("<d", eps))[0]
    xv.copy_(x)
    wv.copy_(w)
    q[2], q[3], q[4], q[5] = t, h, code, bits
    q[0] += 1  # the request (warm-up and correctness calls too: they keep the helper's code warm)
    return yv if timed else _rmsnorm(x, w, eps)
