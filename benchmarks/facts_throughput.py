"""Fact extraction throughput over the gold set's solution files (a benchmark, not a test).

    python benchmarks/facts_throughput.py [--rounds 20] [--processes 2]

Parses every gold solution file (expert, naive, ablations) ``rounds`` times, in ``processes``
worker processes, and prints files per second (tree-sitter parse + fact extraction).
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from d2k.content import find_root
from d2k.judge import gold
from d2k.judge.facts import extract


def _work(args):
    paths, rounds = args
    sources = [(str(p), Path(p).read_bytes()) for p in paths]
    extract(b"import triton\n", "warm.py")  # parser construction is not per file
    t0 = time.perf_counter()
    n = 0
    for _ in range(rounds):
        for path, source in sources:
            extract(source, path)
            n += 1
    return n, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--processes", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args()
    root = find_root()
    paths = sorted({str(s.path_of(sol)) for s in gold.load(root) for sol in s.solutions})
    if not paths:
        raise SystemExit("no gold solutions found")
    size = sum(Path(p).stat().st_size for p in paths)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.processes) as pool:
        results = list(pool.map(_work, [(paths, args.rounds)] * args.processes))
    wall = time.perf_counter() - t0
    files = sum(n for n, _ in results)
    per_process = [n / s for n, s in results]
    print(f"{len(paths)} gold files ({size / 1024:.0f} KiB), {args.rounds} rounds x {args.processes} processes")
    print(f"throughput: {files / wall:.0f} files/s over the wall time ({wall:.2f} s, process start included); "
          f"per process {', '.join(f'{x:.0f}' for x in per_process)} files/s")


if __name__ == "__main__":
    main()
