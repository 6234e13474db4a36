"""The channel between the trusted worker and the candidate process: framed messages over pipes.

A frame is a 4-byte big-endian header length, a JSON header, then the raw bytes of each blob the
header lists (``header["blobs"]`` holds their sizes). Tensors cross as their bytes plus a small
description (dtype, shape); the receiver rebuilds plain ``torch.Tensor`` objects from the bytes, so
nothing the candidate defines (a Tensor subclass, a ``__torch_function__``, a pickled object)
reaches the trusted side. Every size is checked against limits before anything is allocated.

Also here, because both sides must compute it bit for bit alike: the per-call perturbation of the
timed inputs (see ``perturb``). Imports: the standard library, numpy and torch only.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time

import numpy as np
import torch

MAX_HEADER = 1 << 20
SPIN_S = 0.05  # how long either side of a GPU timing loop busy-polls for the other's message


def spin_s(interpreter: bool) -> float:
    """How long to busy-poll for the other side inside a timing loop: on the GPU, ``SPIN_S`` (a
    sleeping thread issues the next call late); under the interpreter, not at all (nothing to
    keep busy, and the cores are shared by the solutions running side by side)."""
    return 0.0 if interpreter else SPIN_S
# dtypes that may cross the boundary; anything else is refused
DTYPES = {
    name: getattr(torch, name)
    for name in ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
                 "int64", "int32", "int16", "int8", "uint8", "bool")
    if hasattr(torch, name)
}
_BYTE_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


class WireError(Exception):
    """A malformed, oversized or truncated frame."""


def _read_exact(fd: int, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        chunk = os.readv(fd, [view[got:]])
        if chunk == 0:
            raise WireError(f"channel closed after {got} of {n} bytes")
        got += chunk
    return buf


def _write_all(fd: int, data) -> None:
    view = memoryview(data).cast("B")
    while view:
        written = os.write(fd, view)
        view = view[written:]


def send(fd: int, header: dict, blobs: list | None = None) -> None:
    blobs = blobs or []
    views = [memoryview(b).cast("B") for b in blobs]
    header = {**header, "blobs": [len(v) for v in views]}
    raw = json.dumps(header, separators=(",", ":")).encode()
    if len(raw) > MAX_HEADER:
        raise WireError(f"header of {len(raw)} bytes exceeds {MAX_HEADER}")
    _write_all(fd, struct.pack(">I", len(raw)) + raw)
    for v in views:
        _write_all(fd, v)


def wait_readable(fd: int, spin_s: float) -> None:
    """Poll ``fd`` without sleeping for up to ``spin_s`` seconds (then the read blocks as usual).

    Inside a GPU timing loop a blocking read puts the thread to sleep, and the host then issues the
    next call from a cold core, late enough to leave idle gaps inside its event window."""
    deadline = time.perf_counter() + spin_s
    while time.perf_counter() < deadline:
        if select.select([fd], [], [], 0)[0]:
            return


def recv(fd: int, max_bytes: int, spin_s: float = 0.0) -> tuple[dict, list[bytearray]]:
    """One frame; ``max_bytes`` bounds the blobs' total size (a larger claim is refused unread).
    ``spin_s`` > 0 busy-polls that long for the frame before blocking (see ``wait_readable``)."""
    if spin_s > 0:
        wait_readable(fd, spin_s)
    (size,) = struct.unpack(">I", bytes(_read_exact(fd, 4)))
    if size > MAX_HEADER:
        raise WireError(f"header of {size} bytes exceeds {MAX_HEADER}")
    try:
        header = json.loads(bytes(_read_exact(fd, size)))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise WireError("header is not an object")
    sizes = header.get("blobs", [])
    if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
        raise WireError("blob sizes are not a list of non-negative integers")
    if sum(sizes) > max_bytes:
        raise WireError(f"{sum(sizes)} bytes of tensors announced, more than the {max_bytes} allowed")
    return header, [_read_exact(fd, s) for s in sizes]


# -- tensors ---------------------------------------------------------------------------------------
def describe(t: torch.Tensor) -> dict:
    name = str(t.dtype).replace("torch.", "")
    return {"dtype": name, "shape": list(t.shape)}


def tensor_bytes(t: torch.Tensor):
    """The tensor's elements in row-major order as a byte buffer (a host copy)."""
    flat = t.detach().contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    flat = flat.view(torch.uint8) if flat.element_size() > 1 or flat.dtype != torch.uint8 else flat
    return flat.cpu().numpy()


def pack(tensors: dict) -> tuple[list[dict], list]:
    """Descriptions and byte buffers of named tensors (scalars travel in the description)."""
    metas, blobs = [], []
    for name, value in tensors.items():
        if isinstance(value, torch.Tensor):
            metas.append({"name": name, **describe(value)})
            blobs.append(tensor_bytes(value))
        else:
            if not isinstance(value, (int, float, bool)) and value is not None:
                raise WireError(f"{name}: only tensors and int/float/bool scalars cross the boundary")
            metas.append({"name": name, "scalar": value})
    return metas, blobs


def rebuild(meta: dict, blob, device) -> torch.Tensor:
    """A plain tensor from a description and its bytes; refuses a size or dtype that does not add up."""
    dtype = DTYPES.get(meta.get("dtype"))
    if dtype is None:
        raise WireError(f"dtype {meta.get('dtype')!r} is not accepted")
    shape = meta.get("shape")
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise WireError(f"shape {shape!r} is not a list of non-negative integers")
    numel = int(np.prod(shape)) if shape else 1
    itemsize = torch.empty((), dtype=dtype).element_size()
    if numel * itemsize != len(blob):
        raise WireError(f"{numel} elements of {meta['dtype']} need {numel * itemsize} bytes, got {len(blob)}")
    if numel == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    raw = torch.frombuffer(blob, dtype=torch.uint8)
    if dtype == torch.bool:
        t = raw.to(torch.bool)
    else:
        t = raw.view(dtype)
    return t.reshape(shape).to(device)


def unpack(metas: list, blobs: list, device) -> dict:
    out, k = {}, 0
    for meta in metas:
        if "scalar" in meta:
            out[meta["name"]] = meta["scalar"]
        else:
            out[meta["name"]] = rebuild(meta, blobs[k], device)
            k += 1
    return out


# -- the perturbation of timed inputs ---------------------------------------------------------------
def perturbable(inputs: dict, fixed: set) -> list[str]:
    """Inputs whose values change between timed calls: floating tensors (fp8 included) with at
    least two elements, except those the task marks as fixed (structured values)."""
    return sorted(
        name for name, t in inputs.items()
        if isinstance(t, torch.Tensor) and t.dtype.is_floating_point and t.numel() >= 2 and name not in fixed
    )


def perturb(tensors: dict, names: list[str], seed: int, call: int) -> None:
    """Swap pairs of elements within rows (last dimension) of each named tensor, in place.

    Timed call ``call`` of a workload applies this to its input set before running, so no two
    timed calls see the same values and a result cached from an earlier call is wrong. Swapping
    within a row keeps every value the task's input builder made (ranges, signs, row sums), and the
    bytes are moved as integers, so the trusted side replays it exactly. The pairs come from
    ``numpy``'s generator seeded with (seed, call, tensor index): the same on both sides.
    """
    for index, name in enumerate(names):
        t = tensors[name]
        cols = t.shape[-1] if t.dim() else 1
        rows = t.numel() // max(cols, 1)
        if cols < 2 or rows < 1:
            continue
        rng = np.random.default_rng([seed, call, index])
        k = min(rows, max(1, -(-t.numel() // 4096)))
        row = np.arange(rows) if k == rows else rng.choice(rows, size=k, replace=False)
        a = rng.integers(0, cols, size=k)
        b = (a + rng.integers(1, cols, size=k)) % cols
        flat = t.view(-1).view(_BYTE_VIEW[t.element_size()]) if t.element_size() in _BYTE_VIEW else None
        if flat is None or not t.is_contiguous():
            continue
        ia = torch.as_tensor(row * cols + a, device=t.device)
        ib = torch.as_tensor(row * cols + b, device=t.device)
        va, vb = flat[ia].clone(), flat[ib]
        flat[ia] = vb
        flat[ib] = va
