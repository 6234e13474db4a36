"""How torch.compile handles fused_moe_experts' reference: compile time and recompiles, CPU, tiny shapes."""
import sys, time, importlib.util, torch
spec = importlib.util.spec_from_file_location("ref", "/work/main/tasks/fused_moe_experts/reference.py")
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
E, K, T, H, I = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), 64, 32
import torch._dynamo
fn = torch.compile(ref.reference)
g = torch.Generator().manual_seed(0)
for call in range(4):
    x = torch.randn(T, H, generator=g); w1 = torch.randn(E, 2 * I, H, generator=g) * H ** -0.5
    w2 = torch.randn(E, H, I, generator=g) * I ** -0.5
    probs = torch.softmax(torch.randn(T, E, generator=g), -1)
    tw, ti = torch.topk(probs, K, -1); tw = tw / tw.sum(-1, keepdim=True); ti = ti.int()
    t0 = time.time(); y = fn(x, w1, w2, tw, ti); dt = time.time() - t0
    err = (y - ref.reference(x, w1, w2, tw, ti)).abs().max().item()
    print(f"E={E} call {call}: {dt:.1f} s, max err {err:.2e}", flush=True)
from torch._dynamo.utils import counters
print("frames", dict(counters["frames"]), "recompiles", dict(counters.get("recompiles", {})))
print("graph breaks", sum(counters["graph_break"].values()), list(counters["graph_break"])[:5])
