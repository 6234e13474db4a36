"""Compiles each fp8 Gluon candidate's kernel through Triton's own launcher path, from the argument
objects its `run` would pass at the bench shapes (CPU tensors standing in for the GPU ones, Gluon
tensor descriptors from the candidate's `_gluon_launch_args`). A stand-in driver answers device,
stream and target (sm_90) only, so Triton binds, specialises and compiles but launches nothing.
This checks the launch signature and what the launcher's specialisation compiles to (shared
memory, warps, registers); it runs no kernel and says nothing about results or speed.

    python3 benchmarks/make_candidates.py benchmarks/studies/2026-12-04-fp8-candidates/candidates.toml /tmp/fp8_c
    /tmp/t36/bin/python benchmarks/studies/2026-12-04-fp8-candidates/launch_compile_check.py \\
        /tmp/fp8_c/fp8_blockwise_gemm/*.py
"""

import importlib.util
import sys
from pathlib import Path

import torch
import triton
from triton.runtime import driver

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from aot_screen import CompileOnlyDriver  # noqa: E402  (benchmarks/aot_screen.py)

SHAPES = [(128, 24576, 1536), (4096, 4096, 7168), (4096, 7168, 16384), (80, 160, 384), (200, 2112, 7168)]
H200_SMS = 132


def check(path: str) -> None:
    spec = importlib.util.spec_from_file_location("candidate", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    name = path.rsplit("/", 1)[-1]
    for M, N, K in SHAPES:
        A = torch.empty(M, K, dtype=torch.float8_e4m3fn)
        B = torch.empty(N, K, dtype=torch.float8_e4m3fn)
        As = torch.empty(M, K // 128, dtype=torch.float32)
        Bs = torch.empty(triton.cdiv(N, 128), K // 128, dtype=torch.float32)
        C = torch.empty(M, N, dtype=torch.bfloat16)
        args, meta, grid = m._gluon_launch_args(A, As, B, Bs, C, M, N, K, H200_SMS)
        kernel = m._fp8_gemm_ws_kernel.warmup(*args, **meta, grid=grid)
        consts = {k: v for k, v in meta.items() if k != "num_warps"}
        # the boxes the launcher will encode into the CUtensorMaps (TMA allows at most the swizzle
        # width, 128 B, along the contiguous dimension; wider blocks are split by the compiler)
        boxes = [(d["block_size"], d["swizzle"]) for d in kernel.metadata.tensordesc_meta]
        print(f"{name} M={M} N={N} K={K}: grid {grid[0]}, {consts}, {kernel.metadata.num_warps} warps, "
              f"{kernel.metadata.shared} B shared, TMA boxes (a, b, c) and swizzle modes {boxes}")


def main(paths: list[str]) -> int:
    driver.set_active(CompileOnlyDriver())
    print(f"Triton {triton.__version__}")
    for path in paths:
        check(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
