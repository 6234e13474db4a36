"""Control for hopper_reaper_burst8_fake10.py: the same reaper, padding, eight bursting burners
and forged in-process figure, but the burners never hop (``HOP_S`` huge), so the freezer's walk
finds them and stops them with the rest of the tree. If the pricing process were still slowed,
the hopping would not be what does it.
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

K = 8
PAD = 300
HOP_S = 1e9
BURST = True
FLAG_PATH = "/dev/shm/.rt_f_flag"

REAPER = r'''
import ctypes, os, sys, time, mmap, struct
flag_path, K, PAD, hop, burst = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5] == "1"
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
for _ in range(PAD):
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "100000"])

def hopper(i):
    fd = os.open(flag_path, os.O_RDWR)
    flag = mmap.mmap(fd, 4096)
    slot = 64 + 16 * i
    os.setsid()
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[i % len(cpus)]})
    except OSError:
        pass
    buf = bytearray(b"\x03") * (32 << 20)
    CH = 1 << 16
    pos = 0
    st = os.open("/proc/1/stat", os.O_RDONLY)
    def main_stopped():
        try:
            return os.pread(st, 512, 0).rsplit(b")", 1)[1].split()[0] == b"T"
        except OSError:
            return False
    burns = hops = 0
    last = time.perf_counter()
    while True:
        f = flag[0]
        if f == 2:
            os._exit(0)
        if main_stopped():
            if burst:
                time.sleep(0.00003)
                t = time.perf_counter()
                while time.perf_counter() - t < 0.0001:
                    buf.find(b"\x01", pos, pos + CH)
                    pos = (pos + CH) % len(buf)
            else:
                buf.find(b"\x01", pos, pos + (CH << 4))
                pos = (pos + (CH << 4)) % len(buf)
            burns += 1
        elif f == 1:
            time.sleep(0.001)
            last = time.perf_counter()
            continue
        else:
            time.sleep(0.0003)
        now = time.perf_counter()
        if now - last > hop:
            try:
                child = os.fork()
            except OSError:
                child = -1
            if child > 0:
                os._exit(0)
            if child == 0:
                hops += 1
            last = time.perf_counter()
        flag[slot:slot + 8] = struct.pack("II", burns, hops)

for i in range(K):
    if os.fork() == 0:
        hopper(i)
        os._exit(0)
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.01)
'''

_state = {"flag": None, "calls": 0}


def _start():
    fd = os.open(FLAG_PATH, os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, 4096)
    _state["flag"] = mmap.mmap(fd, 4096)
    subprocess.Popen([sys.executable, "-S", "-c", REAPER, FLAG_PATH, str(K), str(PAD), str(HOP_S), "1" if BURST else "0"],
                     stdin=subprocess.DEVNULL)


_start()  # at import (untimed): padding and hoppers are in place before any batch


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


def run(x, w, eps):
    if _in_batch():
        flag = _state["flag"]
        flag[0] = 1
        y = _compute(x, w, eps)
        _state["calls"] += 1
        if _state["calls"] % 60 == 0:  # diagnostics: (burn rounds, hops) per hopper
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
