"""A candidate's run() against tasks/w4a16_gemm/reference.py under the CPU interpreter, at shapes the
smoke workloads do not cover (M = 1 and M = 16 with small N and K), within the task's tolerance.

    .venv/bin/python benchmarks/studies/2026-12-04-w4a16-candidates/interp_check.py CANDIDATE.py [M,N,K ...]

The interpreter runs float16 (the reference's CPU dtype) and each kernel's interpreter config.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"   # before triton is imported (by the candidate)

ROOT = Path(__file__).resolve().parents[3]
DEFAULT = [(1, 256, 512), (1, 200, 384), (1, 300, 1024), (16, 192, 384), (16, 256, 512), (3, 200, 256)]


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: interp_check.py CANDIDATE.py [M,N,K ...]")
    import torch

    ref = _module(ROOT / "tasks" / "w4a16_gemm" / "reference.py", "w4a16_reference")
    cand = _module(Path(argv[0]), "w4a16_candidate")
    shapes = [tuple(int(x) for x in s.split(",")) for s in argv[1:]] or DEFAULT
    failed = 0
    for m, n, k in shapes:
        gen = torch.Generator().manual_seed(1000 * m + n + k)
        inputs = ref.make_inputs({"M": m, "N": n, "K": k}, {"dtype": torch.float16}, {}, gen, "cpu")
        want = ref.reference(**inputs).float()
        got = cand.run(**inputs).float()
        ok = torch.allclose(got, want, atol=2e-2, rtol=2e-2)
        failed += not ok
        print(f"M={m} N={n} K={k}: max abs error {(got - want).abs().max().item():.2e} {'ok' if ok else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
