"""Host cost of taking a fresh draw of the inputs out of the worker-candidate arena (d2k.execution.wire):
a private copy first (Arena.read, as before session 26) or straight from a view of the shared pages
(Arena.view, what the candidate's refill does now), then the copy into the set's tensor. CPU only:
on a GPU the last copy is a host-to-device one, and this measures only the host side before it.

    python3 benchmarks/arena_copy_cost.py [MiB] [repeats]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from d2k.execution import wire  # noqa: E402


def main() -> None:
    n = int(sys.argv[1] if len(sys.argv) > 1 else 512) << 20
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    arena = wire.Arena.create(n + (1 << 20))
    arena.write(0, torch.randint(0, 255, (n,), dtype=torch.uint8))
    target = torch.zeros(n, dtype=torch.uint8)   # touched before timing: the set's tensors exist
    for name, take in (("private copy, then the set", arena.read), ("view, then the set", arena.view)):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            blob = take(0, n)
            target.copy_(blob)
            del blob   # freeing the private copy is part of its cost
            times.append(time.perf_counter() - t0)
        print(f"{n >> 20} MiB, {name}: " + " ".join(f"{t * 1e3:.0f}" for t in times) + " ms", flush=True)
    arena.close()


if __name__ == "__main__":
    main()
