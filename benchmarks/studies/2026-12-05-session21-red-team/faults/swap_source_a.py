"""TOCTOU on the solution file (with swap_source_b.py): d2k hashes and records this file's source
(it returns zeros and must fail), then the file is overwritten with swap_source_b.py's source
before the worker copies it into the sandbox (see /tmp/redteam_g/swap.sh). What ran is not what
the store and results.jsonl hold as the solution's source and solution_id.
expect (if sound): failed, or the run refused because the file changed; SUCCEEDED if 'passed' is
recorded against this source.
"""
import torch


def run(x, w, eps):
    return torch.zeros_like(x)  # SOURCE-A: would fail
