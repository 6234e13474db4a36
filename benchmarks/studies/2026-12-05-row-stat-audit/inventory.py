"""Per task and bench workload: each tensor input, its shape and dtype, whether the harness perturbs
it (wire.perturbable's rule with the task's FIXED_INPUTS), the set's bytes, and the timed calls
worker.fresh_max_reps would allow with fresh inputs per call. Shapes come from the signature (the
harness checks make_inputs against it), so nothing is built. Run from the repo root:
    .venv/bin/python benchmarks/studies/2026-12-05-row-stat-audit/inventory.py
"""
import importlib.util, json, sys, tomllib
from pathlib import Path

import torch

from d2k import exprs
from d2k.execution.inputs import spec_shape, spec_dtype, resolve_dtypes
from d2k.execution.worker import fresh_max_reps

root = Path.cwd()
rows = []
for tdir in sorted((root / "tasks").iterdir()):
    task = tomllib.loads((tdir / "task.toml").read_text())
    ref_src = (tdir / "reference.py").read_text()
    spec = importlib.util.spec_from_file_location(f"ref_{tdir.name}", tdir / "reference.py")
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    fixed = set(getattr(mod, "FIXED_INPUTS", ()))
    fresh = bool(getattr(mod, "FRESH_INPUTS_PER_CALL", False))
    sig = task["signature"]
    for line in (root / "workloads" / f"{tdir.name}.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        wl = json.loads(line)
        if wl.get("tag") != "bench":
            continue
        dtypes = resolve_dtypes(wl, False)
        total, ins = 0, []
        for s in sig["inputs"]:
            if s.get("scalar"):
                continue
            shape = spec_shape(s, wl)
            dt = spec_dtype(s, dtypes, False)
            n = 1
            for d in shape:
                n *= d
            b = n * dt.itemsize
            total += b
            pert = dt != torch.bool and dt.itemsize in (1, 2, 4, 8) and n >= 2 and s["name"] not in fixed \
                and (shape[-1] if shape else 1) >= 2
            ins.append({"name": s["name"], "shape": list(shape), "dtype": str(dt).replace("torch.", ""),
                        "bytes": b, "perturbed": pert, "fixed": s["name"] in fixed})
        rows.append({"task": tdir.name, "fresh_opt_in": fresh, "workload": wl["id"], "set_bytes": total,
                     "fresh_reps": fresh_max_reps({}, total), "inputs": ins})
json.dump(rows, sys.stdout, indent=1)
