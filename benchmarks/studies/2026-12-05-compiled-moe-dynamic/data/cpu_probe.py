"""How torch.compile handles fused_moe_experts' reference: compile time and recompiles, CPU, tiny
shapes (H = 64, I = 32), four calls each with a new routing.

    [DYN=1] [TORCH_LOGS=recompiles] python cpu_probe.py E K T

DYN=1 compiles with dynamic=True (task.toml performance.compile_dynamic), else as torch.compile's
default. Session 25's probe (../../2026-12-05-session25-h100/data/cmoe/cpu_probe.py) is this
without DYN and with the reference at an absolute path."""
import importlib.util
import os
import sys
import time
from pathlib import Path

import torch
from torch._dynamo.utils import counters

path = Path(__file__).resolve().parents[4] / "tasks" / "fused_moe_experts" / "reference.py"
spec = importlib.util.spec_from_file_location("ref", path)
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)
E, K, T, H, I = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), 64, 32
fn = torch.compile(ref.reference, dynamic=True if os.environ.get("DYN") == "1" else None)
g = torch.Generator().manual_seed(0)
for call in range(4):
    x = torch.randn(T, H, generator=g)
    w1 = torch.randn(E, 2 * I, H, generator=g) * H ** -0.5
    w2 = torch.randn(E, H, I, generator=g) * I ** -0.5
    probs = torch.softmax(torch.randn(T, E, generator=g), -1)
    tw, ti = torch.topk(probs, K, -1)
    tw, ti = tw / tw.sum(-1, keepdim=True), ti.int()
    t0 = time.time()
    y = fn(x, w1, w2, tw, ti)
    dt = time.time() - t0
    err = (y - ref.reference(x, w1, w2, tw, ti)).abs().max().item()
    print(f"E={E} call {call}: {dt:.1f} s, max err {err:.2e}", flush=True)
print("frames", dict(counters["frames"]), "graphs", dict(counters["stats"]).get("unique_graphs"))
