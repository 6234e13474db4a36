"""How often does a float32 evaluation disagree with the float64 reference on perturbed sampling
inputs (the 1-D per-row k, p, u are rotated across rows by wire.perturb; the builder's margins
hold only for each row's own k, p, u)?"""
import sys, torch, importlib.util
from d2k.content import Benchmark
from d2k.execution import wire
spec = importlib.util.spec_from_file_location("ref", "tasks/top_k_top_p_sampling/reference.py")
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
bench = Benchmark.load(only=["top_k_top_p_sampling"])
def f32(probs, top_k, top_p, u):
    x = probs.float()
    keep, *_ = ref._keep_mask(x, top_k, top_p)
    w = torch.where(keep, x, torch.zeros_like(x)); Q = w.sum(-1); c = torch.cumsum(w, -1)
    idx = (c <= (u * Q)[:, None]).sum(-1)
    last = torch.where(keep, torch.arange(x.shape[1]), -1).max(-1).values
    return torch.minimum(idx, last).to(torch.int32)
for wid in sys.argv[1:]:
    w = next(w for w in bench.select_workloads("top_k_top_p_sampling", "all") if w.id == wid)
    g = torch.Generator().manual_seed(w.seed)
    inputs = ref.make_inputs(w.axes, w.dtypes, w.params, g, "cpu")
    names = wire.perturbable(inputs, set())
    bad_rows = bad_calls = 0
    base = f32(**inputs).eq(ref.reference(**inputs)).all().item()
    N = int(__import__("os").environ.get("N", "50"))
    for j in range(N):
        wire.perturb(inputs, names, 12345 + j, j)
        d = (f32(**inputs) != ref.reference(**inputs)).sum().item()
        bad_rows += d; bad_calls += d > 0
    print(wid, "names", names, "unperturbed agrees:", base, f"calls with a mismatch: {bad_calls}/{N}, rows: {bad_rows}", flush=True)
