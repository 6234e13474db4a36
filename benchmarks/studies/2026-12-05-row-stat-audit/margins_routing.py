"""Do the harness's perturbations keep moe_grouped_topk_routing's near-tie guarantee?
make_inputs redraws rows whose group or expert selection hinges on a float64 gap < MARGIN, but
wire.perturb then rotates the logits and the bias by different amounts (and regroups experts), so
a timed call's rows are new selections. Counts perturbed rows under MARGIN and under 1e-6
(float32's spacing near 1 is 1.2e-7). CPU only.
    .venv/bin/python benchmarks/studies/2026-12-05-row-stat-audit/margins_routing.py [CALLS]
"""
import importlib.util, json, sys
import torch
from d2k.execution import wire

spec = importlib.util.spec_from_file_location("ref", "tasks/moe_grouped_topk_routing/reference.py")
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20
for line in open("workloads/moe_grouped_topk_routing.jsonl"):
    wl = json.loads(line)
    if wl["tag"] != "bench":
        continue
    p = wl["params"]; G, TG, K = int(p["n_group"]), int(p["topk_group"]), wl["axes"]["K"]
    g = torch.Generator().manual_seed(wl["seed"] * 1_000_003)
    base = ref.make_inputs(wl["axes"], {}, p, g, "cpu")
    m0 = ref._row_margins(base["router_logits"], base["bias"], G, TG, K)
    names = wire.perturbable(base, set())
    state = {k: v.clone() for k, v in base.items()}
    under, tiny, rows, low = 0, 0, 0, float("inf")
    for j in range(calls):
        wire.perturb(state, names, 987654321 + j, j)
        m = ref._row_margins(state["router_logits"], state["bias"], G, TG, K)
        under += int((m < ref.MARGIN).sum()); tiny += int((m < 1e-6).sum()); rows += m.numel()
        low = min(low, float(m.min()))
    print(json.dumps({"workload": wl["id"], "perturbed": names, "base_min_margin": float(m0.min()),
                      "calls": calls, "rows": rows, "rows_under_MARGIN": under, "rows_under_1e-6": tiny,
                      "min_margin_perturbed": low}))
