"""In-process, interleaved (twin, attack, twin, attack, ...) interpreter timing of the two files on
the harness's input sequence: the workload's base draw, then per call either wire.perturb of the
running set (the task as is) or a fresh make_inputs draw, perturbed once (fresh inputs). Also
reports how many attack calls rewrote the cached histogram (the stale-cache redo ran).
CPU interpreter wall clock: a relative signal only, never kernel speed.
    TRITON_INTERPRET=1 .venv/bin/python benchmarks/studies/2026-12-05-row-stat-audit/attack/interleaved.py [CALLS]
"""
import importlib.util, json, statistics, sys, time
from pathlib import Path
import torch
from d2k.execution import wire

here = Path(__file__).parent
root = here.parents[3]

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

ref = load(root / "tasks/moe_align_block_size/reference.py", "ref")
calls = int(sys.argv[1]) if len(sys.argv) > 1 else 10
for line in open(root / "workloads/moe_align_block_size.jsonl"):
    wl = json.loads(line)
    if wl["axes"]["T"] * wl["axes"]["K"] <= 4096:
        continue                                   # the single-program path: nothing cached
    ax = wl["axes"]; E, bs = ax["E"], ax["BS"]
    draw = lambda seed: ref.make_inputs(ax, {}, {}, torch.Generator().manual_seed(seed), "cpu")
    for mode in ("perturb", "fresh"):
        att = load(here / "histogram_cache_align.py", "att")
        hon = load(here / "honest_twin_align.py", "hon")
        base = draw(wl["seed"] * 1_000_003)
        for m in (hon, att):
            m.run(base["topk_ids"].clone(), E, bs)         # warm-up (fills the attack's cache)
        state = {k: v.clone() for k, v in base.items()}
        t_h, t_a, redo, wrong = [], [], 0, 0
        for j in range(calls):
            if mode == "fresh":
                state = draw(10_000 + j)
            wire.perturb(state, ["topk_ids"], 777 + j, j)
            x = state["topk_ids"]
            t0 = time.perf_counter(); hon.run(x, E, bs); t_h.append(time.perf_counter() - t0)
            hist = next(iter(att._cache.values()))[0]
            before = hist.clone()
            t0 = time.perf_counter(); got = att.run(x, E, bs); t_a.append(time.perf_counter() - t0)
            redo += int(not torch.equal(before, hist))
            exp = ref.reference(x, E, bs)
            names = ["sorted_token_ids", "expert_ids", "num_tokens_post_padded"]
            inp = {"topk_ids": x, "num_experts": E, "block_size": bs}
            g, e = ref.canonicalize(dict(zip(names, got)), inp), ref.canonicalize(dict(zip(names, exp)), inp)
            wrong += int(not all(torch.equal(g[n].long(), e[n].long()) for n in names))
        mh, ma = statistics.median(t_h) * 1e3, statistics.median(t_a) * 1e3
        print(json.dumps({"workload": wl["id"], "mode": mode, "calls": calls, "twin_median_ms": round(mh, 1),
                          "attack_median_ms": round(ma, 1), "attack_over_twin": round(ma / mh, 2),
                          "attack_calls_that_redid": redo, "attack_calls_wrong": wrong}), flush=True)
