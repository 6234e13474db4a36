"""Compiles the MLA Gluon candidate's kernel through Triton's own launcher path, as `run` would
launch it at an h = 128 shape: the argument objects (tensors, Gluon tensor descriptors) are
specialised by Triton's binder, then compiled for sm_90. A fake CUDA driver answers only device,
stream and target, so nothing is launched and no GPU is needed. Checks the launch signature, not
the kernel's results.

    python3 benchmarks/make_candidates.py benchmarks/studies/2026-12-04-mla-h128-candidates/candidates.toml /tmp/mla_c
    /tmp/t36/bin/python benchmarks/studies/2026-12-04-mla-h128-candidates/launch_compile_check.py \\
        /tmp/mla_c/mla_decode/wgmma_gluon.py
"""

import importlib.util
import sys
from pathlib import Path

import torch
from triton.runtime import driver

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from aot_screen import CompileOnlyDriver  # noqa: E402  (benchmarks/aot_screen.py)


def main(path: str) -> None:
    driver.set_active(CompileOnlyDriver())
    spec = importlib.util.spec_from_file_location("candidate", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    B, H, NP, PS = 2, 128, 64, 64
    bf16 = torch.bfloat16
    ckv = torch.zeros(NP, PS, 512, dtype=bf16)
    kpe = torch.zeros(NP, PS, 64, dtype=bf16)
    args = (torch.zeros(B, H, 512, dtype=bf16), torch.zeros(B, H, 64, dtype=bf16),     # q_nope, q_pe
            torch.zeros(B + 1, dtype=torch.int32), torch.zeros(NP, dtype=torch.int32),  # kv_indptr, kv_indices
            torch.zeros(B, dtype=torch.int32),                                          # kv_last_page_len
            torch.empty(B, H, 512, dtype=bf16), torch.empty(B, H, dtype=torch.float32),  # o, lse
            m.GluonTensorDescriptor(ckv.view(NP * PS, 512), [NP * PS, 512], [512, 1], [64, 256], m._GLUON_SMEM),
            m.GluonTensorDescriptor(kpe.view(NP * PS, 64), [NP * PS, 64], [64, 1], [64, 64], m._GLUON_SMEM),
            0.1, H)
    kernel = m._mla_h64_wgmma.warmup(*args, PS=PS, STAGES=2, num_warps=8, grid=(H // 64, B))
    print(f"compiled through the launcher: {kernel.metadata.shared} bytes of shared memory, "
          f"{kernel.metadata.num_warps} warps")


if __name__ == "__main__":
    main(sys.argv[1])
