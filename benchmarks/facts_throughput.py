"""Static-judge throughput over the gold set's solution files (a benchmark, not a test).

    python benchmarks/facts_throughput.py [--rounds 20] [--processes 2] [--facts-only]

Parses every gold solution file (expert, naive, ablations) ``rounds`` times, in ``processes``
worker processes, and judges it against its task's rubric (tree-sitter parse + fact extraction +
every item's signals); prints files per second. --facts-only stops after the facts.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from d2k.content import Benchmark, find_root
from d2k.judge import gold
from d2k.judge.facts import extract
from d2k.judge.static import judge


def _work(args):
    files, rounds, facts_only = args
    items = {} if facts_only else {task: rubric.items for task, rubric in Benchmark.load().rubrics.items()}
    sources = [(task, path, Path(path).read_bytes()) for task, path in files]
    extract(b"import triton\n", "warm.py")  # parser construction is not per file
    t0 = time.perf_counter()
    n = 0
    for _ in range(rounds):
        for task, path, source in sources:
            facts = extract(source, path)
            if not facts_only:
                judge(facts, items[task])
            n += 1
    return n, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--processes", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--facts-only", action="store_true", help="time fact extraction alone, no signals")
    args = parser.parse_args()
    root = find_root()
    files = sorted({(s.task_id, str(s.path_of(sol))) for s in gold.load(root) for sol in s.solutions})
    if not files:
        raise SystemExit("no gold solutions found")
    size = sum(Path(p).stat().st_size for _, p in files)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.processes) as pool:
        results = list(pool.map(_work, [(files, args.rounds, args.facts_only)] * args.processes))
    wall = time.perf_counter() - t0
    judged = sum(n for n, _ in results)
    per_process = [n / s for n, s in results]
    what = "facts only" if args.facts_only else "facts and every item's signals"
    print(f"{len(files)} gold files ({size / 1024:.0f} KiB), {what}, {args.rounds} rounds x {args.processes} processes")
    print(f"throughput: {judged / wall:.0f} files/s over the wall time ({wall:.2f} s, process start included); "
          f"per process {', '.join(f'{x:.0f}' for x in per_process)} files/s")


if __name__ == "__main__":
    main()
