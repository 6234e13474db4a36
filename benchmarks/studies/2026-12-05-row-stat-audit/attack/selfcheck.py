"""Interpreter self-check of histogram_cache_align.py against the reference: a miss, perturbed
hits (wire.perturb), and a different input set of the same shape (the stale-cache redo).
    TRITON_INTERPRET=1 .venv/bin/python benchmarks/studies/2026-12-05-row-stat-audit/attack/selfcheck.py
"""
import importlib.util, sys, time
from pathlib import Path
import torch
from d2k.execution import wire

here = Path(__file__).parent
root = here.parents[3]

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

ref = load(root / "tasks/moe_align_block_size/reference.py", "ref")
att = load(here / "histogram_cache_align.py", "att")

def check(inp, E, bs, label):
    t0 = time.perf_counter()
    got = att.run(inp, E, bs)
    dt = time.perf_counter() - t0
    exp = ref.reference(inp, E, bs)
    names = ["sorted_token_ids", "expert_ids", "num_tokens_post_padded"]
    g = ref.canonicalize(dict(zip(names, got)), {"topk_ids": inp, "num_experts": E, "block_size": bs})
    x = ref.canonicalize(dict(zip(names, exp)), {"topk_ids": inp, "num_experts": E, "block_size": bs})
    ok = all(torch.equal(g[n].long(), x[n].long()) for n in names)
    print(f"{label:40s} ok={ok} {dt*1e3:8.1f} ms")
    return ok

allok = True
for (T, K, E, bs) in [(1100, 4, 40, 16), (4096, 8, 256, 64), (16384, 2, 8, 128)]:
    g = torch.Generator().manual_seed(T)
    base = ref.make_inputs({"T": T, "K": K, "E": E}, {}, {}, g, "cpu")["topk_ids"]
    allok &= check(base.clone(), E, bs, f"T{T} K{K} E{E}: first call (miss)")
    x = base.clone()
    for call in range(3):
        wire.perturb({"topk_ids": x}, ["topk_ids"], 12345, call)
        allok &= check(x.clone(), E, bs, f"T{T}: perturbed call {call} (hit)")
    other = ref.make_inputs({"T": T, "K": K, "E": E}, {}, {}, torch.Generator().manual_seed(T + 1), "cpu")["topk_ids"]
    allok &= check(other, E, bs, f"T{T}: other inputs (stale -> redo)")
    allok &= check(other.clone(), E, bs, f"T{T}: other inputs again (hit)")
print("ALL OK" if allok else "FAILED")
