"""Candidates' run() against tasks/merge_attn_states/reference.py under the CPU interpreter, at shapes
and LSE patterns the two smoke workloads do not cover, within the task's tolerance.

    .venv/bin/python benchmarks/studies/2026-12-04-merge-candidates/interp_check.py FILE.py [FILE.py ...]

Per file and small shape it runs every tile size in TILES (the file's _pick replaced by one returning
(tile, 4): ROWS of the row-tile kernels, TB of the head-major ones), plus the file's own _pick as the
GPU would call it (_INTERPRET switched off: the tile the H200 would get; the two large shapes run only this, at
the full GPU tile with ragged tails).
Shapes: ragged T, H and D (D not a power of two takes the masked path), and three LSE patterns:
  - "tokens": reference.make_inputs with empty partials per token (+inf, -inf or mixed);
  - "cells": every (h, t) cell independently finite, +inf or -inf on each side (both sides empty
    in about 1/9 of the cells, one +inf and one -inf, etc.), with zero o on the empty sides;
  - "far": finite LSEs 80-200 apart and around +-1e4 (no overflow in the shift, weights of 0 and 1).
The interpreter runs float16 (it has no bfloat16), as the smoke workloads do. Checks: o within
atol 1e-3 + rtol 1e-2 (the task's), lse within atol 1e-4 + rtol 1e-5 where finite, the same
infinities where not, no NaN anywhere. Exits 1 if any case fails.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"   # before triton is imported (by the candidate)

ROOT = Path(__file__).resolve().parents[3]
TILES = (1, 2, 4, 8, 16, 32)
SHAPES = [   # T, H, D, pattern, params for make_inputs[, "gpu": only the file's own _pick]
    (37, 3, 80, "tokens", {"empty_frac": 0.3, "empty_lse": "mixed"}),
    (16, 4, 64, "tokens", {"empty_frac": 0.5, "empty_lse": "+inf"}),
    (29, 5, 96, "tokens", {"empty_frac": 0.4, "empty_lse": "-inf"}),
    (1, 1, 16, "cells", {}),
    (7, 1, 128, "cells", {}),
    (19, 6, 40, "cells", {}),
    (33, 16, 128, "cells", {}),
    (24, 32, 128, "tokens", {"empty_frac": 0.2, "empty_lse": "mixed"}),
    (13, 7, 24, "far", {}),
    (40, 2, 256, "far", {}),
    # large enough that the GPU _pick keeps its full tile (8 or 16 rows / tokens), with ragged tails
    (1001, 5, 72, "cells", {}, "gpu"),
    (256, 64, 128, "tokens", {"empty_frac": 0.1, "empty_lse": "-inf"}, "gpu"),   # the decode workload
]


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inputs(ref, T, H, D, pattern, params, seed):
    import torch

    gen = torch.Generator().manual_seed(seed)
    inputs = ref.make_inputs({"T": T, "H": H, "D": D}, {"dtype": torch.float16}, params, gen, "cpu")
    if pattern == "cells":
        for side in ("a", "b"):
            kind = torch.randint(0, 3, (H, T), generator=gen)            # 0 finite, 1 +inf, 2 -inf
            lse = inputs[f"lse_{side}"]
            lse[kind == 1] = float("inf")
            lse[kind == 2] = float("-inf")
            inputs[f"o_{side}"][(kind != 0).t()] = 0.0                   # [T, H] cells, zero row
    elif pattern == "far":
        shift = torch.randint(0, 3, (H, T), generator=gen).float()        # 0, 1, 2 -> b far below, near, far above
        base = 1e4 * (2 * torch.rand((H, T), generator=gen) - 1)
        inputs["lse_a"] = base.contiguous()
        inputs["lse_b"] = (base + (shift - 1) * (80 + 120 * torch.rand((H, T), generator=gen))).contiguous()
    return inputs


def _compare(got, want):
    """(ok, worst o error, worst finite lse error, what failed)."""
    import torch

    o, lse = got
    wo, wlse = want
    bad = []
    if torch.isnan(o.float()).any() or torch.isnan(lse).any():
        bad.append("NaN")
    err_o = (o.float() - wo.float()).abs()
    if not (err_o <= 1e-3 + 1e-2 * wo.float().abs()).all():
        bad.append("o")
    fin = torch.isfinite(wlse)
    if not torch.equal(torch.isfinite(lse), fin) or not torch.equal(lse[~fin], wlse[~fin]):
        bad.append("lse inf")
    err_l = (lse[fin] - wlse[fin]).abs()
    if not (err_l <= 1e-4 + 1e-5 * wlse[fin].abs()).all():
        bad.append("lse")
    return (not bad, err_o.max().item() if err_o.numel() else 0.0,
            err_l.max().item() if err_l.numel() else 0.0, ", ".join(bad))


def check_file(path: Path, ref) -> int:
    import torch

    cand = _module(path, f"merge_candidate_{path.stem}")
    own_pick = cand._pick
    failed = cases = 0
    for i, (T, H, D, pattern, params, *only) in enumerate(SHAPES):
        inputs = _inputs(ref, T, H, D, pattern, params, seed=1600 + i)
        want = ref.reference(**inputs)
        runs = [] if only else [(f"tile {tile}", lambda *a, tile=tile: (tile, 4)) for tile in TILES]
        runs.append(("gpu _pick", own_pick))
        worst_o = worst_l = 0.0
        fails = []
        for what, pick in runs:
            cand._pick = pick
            cand._INTERPRET = what != "gpu _pick"
            try:
                got = cand.run(**{k: v.clone() for k, v in inputs.items()})
                ok, eo, el, why = _compare(got, want)
            except Exception as exc:   # a failure to compile or run is a failed case
                ok, eo, el, why = False, 0.0, 0.0, f"{type(exc).__name__}: {exc}"[:120]
            cases += 1
            worst_o, worst_l = max(worst_o, eo), max(worst_l, el)
            if not ok:
                failed += 1
                fails.append(f"{what}: {why}")
        cand._pick, cand._INTERPRET = own_pick, False
        gpu = own_pick(T * H, D) if "n_rows" in own_pick.__code__.co_varnames else own_pick(T, H, D)
        cand._INTERPRET = True
        n_inf = sum(int((~torch.isfinite(inputs[k])).sum()) for k in ("lse_a", "lse_b"))
        print(f"  T={T:3d} H={H:2d} D={D:3d} {pattern:6s} ({n_inf:3d} non-finite LSEs), gpu tile {gpu}: "
              f"{len(runs)} runs, max |o err| {worst_o:.2e}, max |lse err| {worst_l:.2e} "
              f"{'ok' if not fails else 'FAIL ' + '; '.join(fails)}")
    print(f"{path.name}: {cases - failed}/{cases} runs within tolerance")
    return failed


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: interp_check.py FILE.py [FILE.py ...]")
    import torch
    import triton

    print(f"torch {torch.__version__}, triton {triton.__version__}, TRITON_INTERPRET=1, float16")
    ref = _module(ROOT / "tasks" / "merge_attn_states" / "reference.py", "merge_reference")
    failed = 0
    for arg in argv:
        print(arg)
        failed += check_file(Path(arg), ref)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
