"""Host-side cost of moving tensor bytes across the worker–candidate boundary: the pipe (a writer
thread and a reader, as the two processes do) against the shared-memory arena (write, then the
receiver's private copy). Harness overhead on the host, not kernel speed.

    python benchmarks/wire_throughput.py [MiB] [repeats]
"""

from __future__ import annotations

import os
import sys
import threading
import time

import torch

from d2k.execution import wire


def main(mib: int = 256, repeats: int = 3) -> None:
    x = torch.randn((mib << 20) // 4)
    metas, blobs = wire.pack({"x": x})
    arena = wire.Arena.create((mib + 1) << 20)
    r, w = os.pipe()
    print(f"{mib} MiB of float32, {os.cpu_count()} cores, best of {repeats}")
    for name, arena_or_none in (("pipe", None), ("arena", arena)):
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            sender = threading.Thread(target=wire.send, args=(w, {"inputs": metas}, blobs),
                                      kwargs={"arena": arena_or_none})
            sender.start()
            header, got = wire.recv(r, 1 << 40, arena=arena_or_none)
            sender.join()
            best = min(best, time.perf_counter() - t0)
            assert torch.equal(wire.unpack(header["inputs"], got, "cpu")["x"], x)
        print(f"  {name:5s} {best:.3f} s  ({mib / 1024 / best:.2f} GiB/s)")
    arena.close()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
