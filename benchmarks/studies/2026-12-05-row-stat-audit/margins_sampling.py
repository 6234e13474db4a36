"""(Session 24, after the audit.) How close to flipping are top_k_top_p_sampling's decisions after the harness's perturbation?
Same conditions as make_inputs (relative to M or Q), on perturbed inputs. CPU only.
    .venv/bin/python benchmarks/studies/2026-12-05-row-stat-audit/margins_sampling.py [CALLS]
"""
import importlib.util, json, sys
import torch
from d2k.execution import wire
spec = importlib.util.spec_from_file_location("ref", "tasks/top_k_top_p_sampling/reference.py")
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20

def margins(inp):
    x = inp["probs"].double(); B = x.shape[0]; ar = torch.arange(B)
    keep, vals, k, M, csum, keep_sorted = ref._keep_mask(x, inp["top_k"], inp["top_p"])
    m = keep_sorted.sum(-1); pM = inp["top_p"].double() * M
    # top-p: the last kept must have before <= pM (gap pM - before), the next (if cut) csum > pM
    gap_p = (pM - (csum[ar, m - 1] - vals[ar, m - 1])) / M
    cut = m < k
    gap_p = torch.where(cut, torch.minimum(gap_p, (csum[ar, m - 1] - pM) / M), gap_p)
    idx, c, Q, target = ref._sample(x, keep, inp["u"])
    hi = c[ar, idx]; lo = hi - x[ar, idx]
    gap_u = torch.minimum(target - lo, hi - target) / Q
    return torch.minimum(gap_p, gap_u)

for line in open("workloads/top_k_top_p_sampling.jsonl"):
    wl = json.loads(line)
    if wl["tag"] != "bench":
        continue
    g = torch.Generator().manual_seed(wl["seed"] * 1_000_003)
    base = ref.make_inputs(wl["axes"], {}, wl.get("params", {}), g, "cpu")
    m0 = margins(base)
    names = wire.perturbable(base, set())
    state = {k: v.clone() for k, v in base.items()}
    under, tiny, rows, low = 0, 0, 0, float("inf")
    for j in range(calls):
        wire.perturb(state, names, 987654321 + j, j)
        m = margins(state)
        under += int((m < ref.MARGIN).sum()); tiny += int((m < 1e-6).sum()); rows += m.numel()
        low = min(low, float(m.min()))
    print(json.dumps({"workload": wl["id"], "perturbed": names, "base_min_margin": float(m0.min()), "calls": calls,
                      "rows": rows, "rows_under_MARGIN": under, "rows_under_1e-6": tiny, "min_margin_perturbed": low}))
