"""The kernel resumes the burners the freezer stopped (orphaned process group), armed on sight.

In-process: the open ctypes route (``ctypes_rebind_t0``), so the in-process figure reads ~10 us.
The batch calls compute the right outputs honestly (torch). Nothing hides from the freezer's walk:
every process is found and stopped.

At import (untimed) the solution starts ``UNITS`` units, each from a small ``python -S`` process:
- S_i calls ``setsid`` (a session, hence an autogroup, and a process group G_i of its own),
  ignores SIGHUP and burns (below); it forks a keeper P_i, which moves to a process group H_i of
  its own (same session) and keeps one trigger T_i alive, which joins G_i: T_i is the only member
  of G_i whose parent is in another process group of the same session. The first keeper also
  starts ``PAD`` sleeping children before its trigger, so every trigger comes after them in the
  freezer's walk (breadth first): the freezer stops the candidate's main process first and the
  triggers a few ms later (freeze.py ``Freezer.stop``: one kill after another).
- T_i polls ``/proc/1/stat`` (the candidate's main process) every 0.2 ms. On seeing it stopped,
  it arms a POSIX timer that sends itself SIGKILL 5 ms later (``timer_create`` with
  ``sigev_signo = SIGKILL``); on seeing it run again (the freezer resumed the tree), it disarms.
  Stopped in the meantime, it cannot disarm: SIGKILL kills it (it acts on a stopped process),
  G_i is left orphaned with a stopped member, and the kernel sends SIGHUP and SIGCONT to G_i
  (``kill_orphaned_pgrp``): S_i runs again while the freezer believes the tree stopped (it does
  not walk a tree it has already stopped).
- S_i burns only while the main process is stopped (the pricing process's calls): it sleeps
  30 us, then streams memory for 100 us, over and over. P_i replaces its trigger once resumed.
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

UNITS = 6
PAD = 300
FLAG_PATH = "/dev/shm/.rt_f_flag3"

UNIT = r'''
import ctypes, os, sys, time, mmap, struct, signal
flag_path, i, pad = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.setsid()
G = os.getpgrp()
signal.signal(signal.SIGHUP, signal.SIG_IGN)
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(flag_path, os.O_RDWR)
flag = mmap.mmap(fd, 4096)
slot = 64 + 16 * i
st = os.open("/proc/1/stat", os.O_RDONLY)

def main_stopped():
    try:
        return os.pread(st, 512, 0).rsplit(b")", 1)[1].split()[0] == b"T"
    except OSError:
        return False

def trigger():
    os.setpgid(0, G)
    sev = ctypes.create_string_buffer(64)
    struct.pack_into("ii", sev, 8, signal.SIGKILL, 0)  # sigev_signo, SIGEV_SIGNAL
    tid = ctypes.c_void_p()
    if libc.timer_create(1, sev, ctypes.byref(tid)) != 0:
        os._exit(3)
    fuse = ctypes.create_string_buffer(32)
    struct.pack_into("qqqq", fuse, 0, 0, 0, 0, 5_000_000)
    off = ctypes.create_string_buffer(32)
    armed = False
    while True:
        if flag[0] == 1:
            time.sleep(0.001)
            continue
        stopped = main_stopped()
        if stopped and not armed:
            libc.timer_settime(tid, 0, fuse, None)
            armed = True
        elif armed and not stopped:
            libc.timer_settime(tid, 0, off, None)
            armed = False
        time.sleep(0.0002)

if os.fork() == 0:
    os.setpgid(0, 0)  # P_i: a process group of its own, in S_i's session
    for _ in range(pad):
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "100000"])
    while True:
        child = os.fork()
        if child == 0:
            trigger()
            os._exit(0)
        os.waitpid(child, 0)
        struct.pack_into("I", flag, slot + 4, struct.unpack_from("I", flag, slot + 4)[0] + 1)

# S_i: the burner
try:
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[i % len(cpus)]})
except OSError:
    pass
buf = bytearray(b"\x03") * (32 << 20)
CH = 1 << 16
pos = 0
burns = 0
while True:
    f = flag[0]
    if f == 2:
        os._exit(0)
    if main_stopped():
        time.sleep(0.00003)
        t = time.perf_counter()
        while time.perf_counter() - t < 0.0001:
            buf.find(b"\x01", pos, pos + CH)
            pos = (pos + CH) % len(buf)
        burns += 1
        struct.pack_into("I", flag, slot, burns)
    elif f == 1:
        time.sleep(0.001)
    else:
        time.sleep(0.0003)
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        pass
'''

_state = {"flag": None, "calls": 0}


def _start():
    fd = os.open(FLAG_PATH, os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, 4096)
    _state["flag"] = mmap.mmap(fd, 4096)
    for i in range(UNITS):
        subprocess.Popen([sys.executable, "-S", "-c", UNIT, FLAG_PATH, str(i), str(PAD if i == 0 else 0)],
                         stdin=subprocess.DEVNULL)


_start()


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
        if _state["calls"] % 60 == 0:  # diagnostics: (burn rounds, triggers killed) per unit
            import struct
            print("units", [struct.unpack_from("II", flag, 64 + 16 * i) for i in range(UNITS)], flush=True)
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
