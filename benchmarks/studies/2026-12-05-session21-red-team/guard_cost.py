"""What one guard check and one thread check cost in a loaded candidate (CPU, this process): a
Candidate loads a do-nothing solution the way the worker would have it load one, then each check
runs 500 times; the most expensive frozen namespaces are listed. A rough figure for the session-21
study (188 us at dd27834, 347 us with the frozen classes and json modules, 211 us with the
identity fast path, all on the 2-core CPU machine, Python 3.11), not a benchmark of the GPU loop.

    python benchmarks/studies/2026-12-05-session21-red-team/guard_cost.py
"""
import os
import tempfile
import time

from d2k.execution import timing
from d2k.execution.candidate import Candidate

cmd_r, _ = os.pipe()
_, reply_w = os.pipe()
candidate = Candidate(cmd_r, reply_w)
with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
    fh.write("import torch\n\ndef run(x, w, eps):\n    return x\n")
print(candidate.load({"path": fh.name, "backend": "interpreter", "entry_point": "run", "kind": "file"}))
guard = candidate.guard
for _ in range(50):
    guard.check()
N = 500
t = time.perf_counter()
for _ in range(N):
    guard.check()
print(f"guard.check: {(time.perf_counter() - t) / N * 1e6:.1f} us per call; "
      f"frozen records {len(guard.frozen)}, protected names {len(guard.items)}")
t = time.perf_counter()
for _ in range(N):
    candidate.threads.check()
print(f"threads.check: {(time.perf_counter() - t) / N * 1e6:.1f} us per call")
rows = []
for record in guard.frozen:
    t = time.perf_counter()
    for _ in range(200):
        timing._attributes(record[0], record[1])
    rows.append(((time.perf_counter() - t) / 200 * 1e6, getattr(record[0], "__name__", type(record[0]).__name__)))
for cost, name in sorted(rows, reverse=True)[:8]:
    print(f"{cost:7.1f} us  full comparison of {name}")
