"""benchmarks/read_roof.py: its read kernel visits every word of the buffer exactly once (the roof
it measures is a read of all the bytes, no fewer), and its default sizes are the SOL bytes of
w4a16_gemm's bench workloads. The GPU figures themselves come only from a GPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the interpreter must be chosen before triton is imported: a process of its own
CHECK = r'''
import functools, json, sys
import numpy as np
import torch
sys.path.insert(0, "benchmarks")
import read_roof
results = []
for words, block, programs in ((10_000, 1024, 4), (4096, 1024, 4), (5, 1024, 2), (70_001, 2048, 3)):
    x = torch.randint(-2**31, 2**31 - 1, (words,), dtype=torch.int32, generator=torch.Generator().manual_seed(words))
    out = torch.empty(programs, dtype=torch.int32)
    read_roof._read_all[(programs,)](x, out, words, BLOCK=block, PROGRAMS=programs)
    results.append([functools.reduce(lambda a, b: a ^ b, out.tolist()), int(np.bitwise_xor.reduce(x.numpy()))])
print(json.dumps({"xor": results, "sizes": read_roof.w4a16_sizes()}))
'''


def test_the_read_kernel_reads_every_word_once_and_the_sizes_are_the_workloads_bytes():
    proc = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    # a word read twice cancels out of the xor, a word skipped is missing from it
    assert all(got == want for got, want in found["xor"]), found["xor"]
    sizes = dict(found["sizes"])
    # m1: A 1x4096 bf16 + packed W 4096/8 x 28672 int32 + S 32 x 28672 bf16 + C 1 x 28672 bf16
    assert sizes["w4a16_gemm_m1_n28672_k4096"] == 8192 + 58_720_256 + 1_835_008 + 57_344
    assert len(sizes) == 3


def test_without_a_gpu_it_says_so_and_measures_nothing():
    proc = subprocess.run([sys.executable, "benchmarks/read_roof.py"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 2 and "needs a CUDA GPU" in proc.stderr and proc.stdout == ""
