"""On its first call writes 2 GiB into its private /tmp and 1 GiB into its private /dev/shm (both
tmpfs: host RAM that no process's address space counts, so RLIMIT_AS does not bound it), reads
the host's MemAvailable before and after, and prints that with its limits, uid and cgroup; then
returns right results. The sizes it could reach: /tmp 8 GiB + /dev/shm 1 GiB on top of a 32 GiB
address space, on a 23 GiB host without swap.
expect: passed (this file shows the exposure; it does not exhaust the host)
"""
import os
import resource

import torch

DONE = []


def _avail():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) >> 10  # MiB


def _fill(path, gib):
    block = b"\x5a" * (1 << 20)
    with open(path, "wb") as fh:
        for _ in range(gib << 10):
            fh.write(block)


def run(x, w, eps):
    if not DONE:
        DONE.append(1)
        before = _avail()
        _fill("/tmp/fill.bin", 2)
        _fill("/dev/shm/fill.bin", 1)
        after = _avail()
        sizes = {m: os.statvfs(m) for m in ("/tmp", "/dev/shm")}
        print(f"uid={os.getuid()} AS={resource.getrlimit(resource.RLIMIT_AS)[0] >> 30}GiB "
              f"NPROC={resource.getrlimit(resource.RLIMIT_NPROC)[0]} "
              f"tmp_size={sizes['/tmp'].f_blocks * sizes['/tmp'].f_frsize >> 30}GiB "
              f"shm_size={sizes['/dev/shm'].f_blocks * sizes['/dev/shm'].f_frsize >> 30}GiB "
              f"host MemAvailable {before} -> {after} MiB "
              f"rss={int(open('/proc/self/statm').read().split()[1]) * 4096 >> 20}MiB "
              f"cgroup={open('/proc/self/cgroup').read().strip()}", flush=True)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
