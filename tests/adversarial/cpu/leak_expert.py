"""Reads the expert, the rubric and the gold labels and leaks them in its failure reason.
expect: error
forbid: _TILE_ELEMS
forbid: fp32_one_pass
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import pathlib

import d2k


def run(x, w, eps):
    root = pathlib.Path(d2k.__file__).resolve().parents[1]
    leaked = []
    for rel in ("tasks/rmsnorm/expert.py", "design_rubrics/rmsnorm.toml", "judges/gold/rmsnorm/labels.toml"):
        try:
            leaked.append((root / rel).read_text()[:2000])
        except OSError as exc:
            leaked.append(type(exc).__name__)
    raise RuntimeError(" | ".join(leaked))