"""Correctness: compare a candidate's outputs with the reference's, element by element in fp32.

An element passes when |c - r| <= atol + rtol * |r|. An output passes when its shape and dtype are
exactly the reference's, it has no NaN/Inf where the reference is finite, it is not all zeros where
the reference is not, the share of passing elements reaches ``matched_ratio`` and the largest error
stays under ``max_abs_error`` (when the task sets one).
"""

from __future__ import annotations

import torch


class Mismatch(Exception):
    """An output differs from the reference; the message says which, how many elements, how much and where."""


def _where(index: int, shape) -> tuple[int, ...]:
    coords = []
    for size in reversed(shape):
        coords.append(index % size if size else 0)
        index //= size if size else 1
    return tuple(reversed(coords))


def compare_tensor(name: str, cand, ref: torch.Tensor, tol: dict) -> dict:
    """Check one output; returns its error statistics or raises Mismatch."""
    if not isinstance(cand, torch.Tensor):
        raise Mismatch(f"output {name}: expected a tensor, got {type(cand).__name__}")
    if tuple(cand.shape) != tuple(ref.shape):
        raise Mismatch(f"output {name}: shape {tuple(cand.shape)} != expected {tuple(ref.shape)}")
    if cand.dtype != ref.dtype:
        raise Mismatch(f"output {name}: dtype {cand.dtype} != expected {ref.dtype}")
    if cand.device != ref.device:
        raise Mismatch(f"output {name}: on {cand.device}, expected {ref.device}")
    total = ref.numel()
    if total == 0:
        return {"elements": 0, "mismatched": 0, "max_abs_error": 0.0}
    exact = not ref.dtype.is_floating_point
    c = cand.detach().reshape(-1).to(torch.float64 if exact else torch.float32)
    r = ref.detach().reshape(-1).to(c.dtype)
    ref_finite = torch.isfinite(r)
    bad_nonfinite = ~torch.isfinite(c) & ref_finite
    if bool(bad_nonfinite.any()):
        n = int(bad_nonfinite.sum())
        first = int(bad_nonfinite.nonzero()[0])
        raise Mismatch(
            f"output {name}: {n} of {total} elements are NaN/Inf where the reference is finite "
            f"(first at {_where(first, ref.shape)}: {float(c[first])})"
        )
    if bool((c == 0).all()) and not bool((r == 0).all()):
        raise Mismatch(f"output {name}: all {total} elements are zero, the reference's are not")
    atol = 0.0 if exact and tol.get("exact_ints", True) else float(tol["atol"])
    rtol = 0.0 if exact and tol.get("exact_ints", True) else float(tol["rtol"])
    both = ref_finite & torch.isfinite(c)
    err = torch.where(both, (c - r).abs(), torch.zeros_like(c))
    # non-finite reference elements must be matched exactly (same inf, or NaN for NaN)
    odd = ~ref_finite & ~((c == r) | (torch.isnan(c) & torch.isnan(r)))
    bad = (err > atol + rtol * r.abs()) | odd
    mismatched = int(bad.sum())
    max_err = float(err.max())
    arg = int(err.argmax())
    stats = {
        "elements": total,
        "mismatched": mismatched,
        "max_abs_error": max_err,
        "max_error_at": list(_where(arg, ref.shape)),
    }
    ratio = 1.0 - mismatched / total
    need = float(tol.get("matched_ratio", 1.0))
    detail = (
        f"max |error| {max_err:.4g} at {_where(arg, ref.shape)} "
        f"(candidate {float(c[arg]):.6g}, reference {float(r[arg]):.6g}; atol {atol:g}, rtol {rtol:g})"
    )
    if ratio < need:
        raise Mismatch(
            f"output {name}: {mismatched} of {total} elements outside tolerance "
            f"(matched {ratio:.6f} < required {need:g}); {detail}"
        )
    cap = tol.get("max_abs_error")
    if cap is not None and max_err > float(cap):
        raise Mismatch(f"output {name}: max |error| {max_err:.4g} exceeds the cap {cap:g}; {detail}")
    return stats
