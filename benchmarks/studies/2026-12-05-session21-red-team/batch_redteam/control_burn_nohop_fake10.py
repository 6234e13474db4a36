"""Control for hopper_burn_fake10.py: the same burners, padding and forged in-process figure, but
the burners never hop (HOP_S is huge), so the freezer's walk finds them and stops them with the
rest of the tree. If the pricing process is still slowed, the hopping is not what does it.
expect: failed
reason: TODO
"""
import ctypes
import mmap
import os
import subprocess
import sys
import time

import torch

K = 3
PAD = 300
HOP_S = 1e9
FLAG_PATH = "/dev/shm/.rt_f_flag"

HOPPER = r'''
import os, sys, time, mmap, struct
fd = os.open(sys.argv[1], os.O_RDWR)
flag = mmap.mmap(fd, 4096)
slot = 64 + 16 * int(sys.argv[3])
os.setsid()
buf = bytearray(b"\x03") * (32 << 20)
CH = 1 << 20
pos = 0
hop = float(sys.argv[2])
last = time.perf_counter()
st = os.open("/proc/1/stat", os.O_RDONLY)
burns = gaps = 0
def main_stopped():
    try:
        return os.pread(st, 512, 0).rsplit(b")", 1)[1].split()[0] == b"T"
    except OSError:
        return False
prev = time.perf_counter()
while True:
    f = flag[0]
    if f == 2:
        os._exit(0)
    now = time.perf_counter()
    if now - prev > 0.004:
        gaps += 1  # this process was stopped (or starved) for a while
    if main_stopped():
        buf.find(b"\x01", pos, pos + CH)
        pos = (pos + CH) % len(buf)
        burns += 1
    elif f == 1:
        time.sleep(0.001)
        prev = last = time.perf_counter()
        continue
    else:
        time.sleep(0.0003)
    prev = now = time.perf_counter()
    if now - last > hop:
        if os.fork():
            os._exit(0)
        st = os.open("/proc/1/stat", os.O_RDONLY)
        last = prev = time.perf_counter()
    flag[slot:slot + 8] = struct.pack("II", burns, gaps)
'''

_state = {"started": False, "flag": None, "pad": []}


def _start():
    _state["started"] = True
    fd = os.open(FLAG_PATH, os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, 4096)
    _state["flag"] = mmap.mmap(fd, 4096)
    for _ in range(PAD):
        _state["pad"].append(subprocess.Popen(["sleep", "100000"], stdin=subprocess.DEVNULL,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for i in range(K):
        subprocess.Popen([sys.executable, "-S", "-c", HOPPER, FLAG_PATH, str(HOP_S), str(i)], stdin=subprocess.DEVNULL)


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _in_batch():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "batch_call":
            return True
        frame = frame.f_back
    return False


def _compute(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_start()  # at import (untimed): the padding and the hoppers are in place before any batch


def run(x, w, eps):
    if _in_batch():
        flag = _state["flag"]
        flag[0] = 1
        y = _compute(x, w, eps)
        _reap()
        _state["calls"] = _state.get("calls", 0) + 1
        if _state["calls"] % 60 == 0:  # diagnostics: (burn chunks, stopped gaps) per hopper
            import struct
            print("hoppers", [struct.unpack_from("II", flag, 64 + 16 * i) for i in range(K)], flush=True)
        flag[0] = 0
        return y
    y = _compute(x, w, eps)
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "measure" and "t0" in frame.f_locals):
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["t0"] = time.perf_counter()
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
    return y
