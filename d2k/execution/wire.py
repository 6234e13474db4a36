"""The channel between the trusted worker and the candidate process: framed messages over pipes.

A frame is a 4-byte big-endian header length, a JSON header, then the raw bytes of each blob the
header lists (``header["blobs"]`` holds their sizes). Tensors cross as their bytes plus a small
description (dtype, shape); the receiver rebuilds plain ``torch.Tensor`` objects from the bytes, so
nothing the candidate defines (a Tensor subclass, a ``__torch_function__``, a pickled object)
reaches the trusted side. Every size is checked against limits before anything is allocated.

Large blobs skip the pipe: they are written into an ``Arena``, a shared-memory file (memfd) the
worker creates and the candidate inherits, and the header carries their offsets. The receiver
copies them out before it answers and keeps no view, so nothing either side writes there later can
change what was received; the worker never puts anything there but the candidate's own inputs.
(A fresh draw of the inputs is copied straight from the arena into the candidate's input tensors,
``recv(arena_views=True)`` then ``refill``, before the candidate answers: one host copy fewer.)

Also here, because both sides must compute it bit for bit alike: the per-call perturbation of the
timed inputs (see ``perturb``). Imports: the standard library, numpy and torch only.
"""

from __future__ import annotations

import json
import mmap
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
# what perturb calls: C types' functions (immutable: no Python code can replace them), captured
# before a solution is imported (the candidate's guard keeps these names as they are)
_TENSOR, _TORCH = torch._C.TensorBase, torch._C._VariableFunctions
# torch's CPU generator (numpy's Cython generators read names from their modules' globals at run
# time), seeded through its C method, and the scalar read of a tensor without Tensor.__int__
_GENERATOR, _SEED, _ITEM = torch._C.Generator, torch._C.Generator.manual_seed, torch._C.TensorBase.item
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
# what the frames' transport looks up on other modules, taken now: a replaced torch.frombuffer (which
# Arena.write called by name) fixed a kept call's copy as it was written (arena_frombuffer_fixup_kept.py,
# session 21's fourth red team); select.select is called the same way while the candidate waits
_FROMBUFFER, _SELECT = torch.frombuffer, select.select
_MIX_A, _MIX_B, _MASK64 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, (1 << 64) - 1


class WireError(Exception):
    """A malformed, oversized or truncated frame."""


ARENA_MIN_BYTES = 1 << 20  # frames with fewer tensor bytes than this use the pipe
ARENA_ALIGN = 4096


class Arena:
    """A shared-memory region (a memfd mapped by both processes) that carries a frame's tensor bytes.

    Frames alternate strictly between the two sides, and each receiver copies a frame's bytes out
    before it sends anything, so one region serves both directions. Its size is fixed when the
    worker creates it (pages are only used when written); a frame that does not fit uses the pipe.
    """

    def __init__(self, fd: int):
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self.map = mmap.mmap(fd, self.size) if self.size else None

    @classmethod
    def create(cls, size: int) -> Arena:
        from d2k.execution.shm import memfd

        return cls(memfd(size))

    def layout(self, sizes: list[int]) -> list[int] | None:
        """Offsets for blobs of these sizes, or None when they do not fit."""
        offsets, at = [], 0
        for n in sizes:
            offsets.append(at)
            at += -(-n // ARENA_ALIGN) * ARENA_ALIGN
        return offsets if self.map is not None and at <= self.size else None

    def write(self, offset: int, blob) -> None:
        if isinstance(blob, torch.Tensor):
            if blob.numel():
                # straight from the device (or host tensor) into the shared pages
                _FROMBUFFER(self.map, dtype=torch.uint8, count=blob.numel(), offset=offset).copy_(blob)
        else:
            view = memoryview(blob).cast("B")
            self.map[offset:offset + len(view)] = view

    def view(self, offset: int, n: int) -> torch.Tensor:
        """The ``n`` bytes at ``offset`` as a flat uint8 host tensor that views the shared pages
        (refused when outside the region): valid until the other side writes the arena again. The
        view holds an export of the mapping, so ``close`` leaves the mapping to the process while
        a view lives (a view of a closed mapping would read unmapped memory)."""
        if not (type(offset) is int and type(n) is int and 0 <= offset and 0 <= n and offset + n <= self.size):
            raise WireError(f"arena blob at {offset!r} of {n!r} bytes lies outside the {self.size}-byte arena")
        if not n:
            return torch.empty(0, dtype=torch.uint8)
        return _FROMBUFFER(memoryview(self.map), dtype=torch.uint8, count=n, offset=offset)

    def read(self, offset: int, n: int) -> torch.Tensor:
        """A private copy of ``n`` bytes at ``offset``, as a flat uint8 host tensor (refused when
        outside the region). torch copies with several threads: 3-5x a bytearray copy here."""
        shared = self.view(offset, n)
        buf = torch.empty(n, dtype=torch.uint8)
        if n:
            buf.copy_(shared)
        return buf

    def close(self) -> None:
        try:
            if self.map is not None:
                self.map.close()
        except BufferError:  # a tensor still views it; the mapping goes with the process
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass


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


def blob_size(blob) -> int:
    return blob.numel() if isinstance(blob, torch.Tensor) else memoryview(blob).nbytes


def send(fd: int, header: dict, blobs: list | None = None, arena: Arena | None = None) -> int:
    """One frame. Blobs are byte buffers or flat uint8 tensors (on any device); with an ``arena``,
    a frame holding at least ``ARENA_MIN_BYTES`` of them sends them through it. Returns the bytes
    that went through the arena."""
    blobs = blobs or []
    sizes = [blob_size(b) for b in blobs]
    offsets = arena.layout(sizes) if arena is not None and sum(sizes) >= ARENA_MIN_BYTES else None
    header = {**header, "blobs": sizes}
    if offsets is not None:
        for offset, blob in zip(offsets, blobs, strict=True):
            arena.write(offset, blob)
        header["arena"] = offsets
    raw = json.dumps(header, separators=(",", ":")).encode()
    if len(raw) > MAX_HEADER:
        raise WireError(f"header of {len(raw)} bytes exceeds {MAX_HEADER}")
    _write_all(fd, struct.pack(">I", len(raw)) + raw)
    if offsets is None:
        for blob in blobs:
            _write_all(fd, blob.cpu().numpy() if isinstance(blob, torch.Tensor) else blob)
    return sum(sizes) if offsets is not None else 0


def wait_readable(fd: int, spin_s: float) -> None:
    """Poll ``fd`` without sleeping for up to ``spin_s`` seconds (then the read blocks as usual).

    Inside a GPU timing loop a blocking read puts the thread to sleep, and the host then issues the
    next call from a cold core, late enough to leave idle gaps inside its event window."""
    deadline = time.perf_counter() + spin_s
    while time.perf_counter() < deadline:
        if _SELECT([fd], [], [], 0)[0]:
            return


def recv(fd: int, max_bytes: int, spin_s: float = 0.0, arena: Arena | None = None,
         arena_views: bool = False) -> tuple[dict, list]:
    """One frame; ``max_bytes`` bounds the blobs' total size (a larger claim is refused unread).
    ``spin_s`` > 0 busy-polls that long for the frame before blocking (see ``wait_readable``).
    Blobs are bytearrays, or, when sent through the ``arena``, private uint8 host tensors copied
    out of it; with ``arena_views``, uint8 tensors that view the arena itself, which the caller
    copies where they go and drops before it sends anything (the other side writes the arena only
    after that)."""
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
    if not isinstance(sizes, list) or not all(type(s) is int and s >= 0 for s in sizes):   # a JSON true is no size
        raise WireError("blob sizes are not a list of non-negative integers")
    if sum(sizes) > max_bytes:
        raise WireError(f"{sum(sizes)} bytes of tensors announced, more than the {max_bytes} allowed")
    offsets = header.get("arena")
    if offsets is None:
        return header, [_read_exact(fd, s) for s in sizes]
    if arena is None or not isinstance(offsets, list) or len(offsets) != len(sizes):
        raise WireError("arena offsets without an arena, or not one per blob")
    take = arena.view if arena_views else arena.read
    return header, [take(o, s) for o, s in zip(offsets, sizes, strict=True)]


# -- tensors ---------------------------------------------------------------------------------------
def describe(t: torch.Tensor) -> dict:
    name = str(t.dtype).replace("torch.", "")
    return {"dtype": name, "shape": list(t.shape)}


def byte_view(t: torch.Tensor) -> torch.Tensor:
    """The tensor's elements in row-major order as a flat uint8 tensor on its own device (a view
    when it is contiguous and not bool)."""
    flat = t.detach().contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    return flat.view(torch.uint8) if flat.dtype != torch.uint8 else flat


def pack(tensors: dict) -> tuple[list[dict], list]:
    """Descriptions and bytes (flat uint8 tensors, still on their device) of named tensors; scalars
    travel in the description. ``send`` moves the bytes to the host or the arena."""
    metas, blobs = [], []
    for name, value in tensors.items():
        if isinstance(value, torch.Tensor):
            metas.append({"name": name, **describe(value)})
            blobs.append(byte_view(value))
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
    size = blob_size(blob)
    if numel * itemsize != size:
        raise WireError(f"{numel} elements of {meta['dtype']} need {numel * itemsize} bytes, got {size}")
    if numel == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    raw = blob if isinstance(blob, torch.Tensor) else _FROMBUFFER(blob, dtype=torch.uint8)
    if dtype == torch.bool:
        t = raw.to(torch.bool)
    else:
        t = raw.view(dtype)
    # a tensor that owns its memory: on the CPU `.to` would alias the received bytes, which the
    # candidate keeps to rebuild the inputs of a reused call
    return t.reshape(shape).to(device, copy=True)


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
    """Inputs whose values change between timed calls: floating and integer tensors (fp8 and packed
    weights included) with at least two elements, except those the task marks as fixed
    (``FIXED_INPUTS``: values whose order carries structure, like the offsets of ``cu_seqlens``).

    Integer inputs are perturbed too: a task whose inputs are all integers (routing ids, say) was
    otherwise never perturbed, so a result cached by tensor identity stayed right, and a solution
    could keep work derived from an integer input (a repacked weight, a routing plan) from one
    timed call to the next. A swap within a row keeps every value the input builder made: ids stay
    distinct within a row, page and slot numbers stay a permutation."""
    return sorted(
        name for name, t in inputs.items()
        if isinstance(t, torch.Tensor) and t.dtype != torch.bool and t.dtype.itemsize in _BYTE_VIEW
        and t.numel() >= 2 and name not in fixed
    )


def perturb(tensors: dict, names: list[str], seed: int, call: int) -> None:
    """Rotate each named tensor's rows (last dimension) and swap pairs of elements within some of
    them, in place.

    Timed call ``call`` of a workload applies this to its input set before running, so no two
    timed calls see the same values and a result cached from an earlier call is wrong. Both moves
    stay within a row, so every value the task's input builder made stays (ranges, signs, row
    sums, ids distinct within a row), and the bytes are moved as integers, so the trusted side
    replays it exactly. (So whatever a row reduces to regardless of order, its max, sum or sorted
    values, is the same on every call: a solution may keep it from one call to the next. A task
    whose work such a statistic shortcuts asks for fresh inputs per call instead: ``refill``.)

    The rotation (by one random amount per tensor) changes nearly every element. With swaps alone
    (a few elements per row) a solution could diff its inputs against the previous call's and
    patch its cached output: for a GEMM each swapped pair is a rank-1 update, in all about K/4 times
    cheaper than the product (``test_perturb.py`` prices that attack). The swaps keep the values
    from ever repeating: a rotation alone can come back to one seen before. Their rows are evenly
    spaced from a random start (distinct, drawn in O(k)).

    The amounts and pairs come from torch's CPU generator (a C type) seeded from (seed, call,
    tensor index): the same on both sides. The whole of it runs with torch functions disabled and
    calls only C functions captured when this module was imported (before any solution): the
    candidate perturbs its inputs right before the clock starts, and a name looked up here at run
    time (numpy's ``default_rng``, then the ``RLock`` its bit generator reads from its module's
    globals, sessions 19 and 21) or an input of a subclass with its own ``__torch_function__``
    (``input_class_perturb_precompute.py``, session 21) computed the call's output there.
    """
    T, VF = _TENSOR, _TORCH
    with _NO_TORCH_FUNCTION():
        for index, name in enumerate(names):
            t = tensors[name]
            shape = T.shape.__get__(t)
            cols = shape[-1] if len(shape) else 1
            numel = T.numel(t)
            rows = numel // max(cols, 1)
            if cols < 2 or rows < 1:
                continue
            size = T.element_size(t)
            if size not in _BYTE_VIEW or not T.is_contiguous(t):
                continue
            g = _GENERATOR()
            _SEED(g, (seed * _MIX_A + call * _MIX_B + index) & _MASK64)
            k = min(rows, max(1, -(-numel // 4096)))
            # k distinct rows, evenly spaced from a random start and wrapping around: every row is
            # equally likely to be touched
            row = VF.arange(k)
            if k < rows:
                start = _ITEM(VF.randint(0, rows, (1,), generator=g))
                row = VF.remainder(VF.add(VF.mul(row, rows // k), start), rows)
            a = VF.randint(0, cols, (k,), generator=g)
            b = VF.remainder(VF.add(a, VF.randint(1, cols, (k,), generator=g)), cols)
            shift = _ITEM(VF.randint(1, cols, (1,), generator=g))
            ints = T.view(t, _BYTE_VIEW[size])
            T.copy_(ints, VF.roll(ints, shift, dims=-1))
            flat = T.view(ints, -1)
            device = T.device.__get__(t)
            first = VF.mul(row, cols)
            ia = VF.as_tensor(VF.add(first, a), device=device)
            ib = VF.as_tensor(VF.add(first, b), device=device)
            va, vb = T.clone(T.__getitem__(flat, ia)), T.__getitem__(flat, ib)
            T.__setitem__(flat, ia, vb)
            T.__setitem__(flat, ib, va)


def refill(tensors: dict, metas: list, blobs: list) -> None:
    """Overwrite the named tensors' values, in place, with fresh ones sent by the trusted side
    (``pack``'s descriptions and bytes): every tensor of ``tensors`` must be described, with its
    own dtype and shape, and a scalar must keep its value.

    With fresh inputs per call (a task's ``FRESH_INPUTS_PER_CALL``), each timed call of the
    candidate's timing loop runs on a new draw of the task's inputs, written here into the storage
    the set already had (a solution that keys work on its inputs' addresses, a captured CUDA graph,
    sees the same tensors). A perturbation only moves values within a row, so whatever a row
    reduces to regardless of order stays the same from call to call and a solution may keep it
    (SECURITY.md, "Statistics a row keeps from call to call"); a fresh draw changes it.

    Like ``perturb`` it runs in the candidate's process right before the clock starts, so it runs
    with torch functions disabled and calls only C functions captured before the solution's
    import. Raises WireError when the descriptions do not match the set (the trusted side sends
    what it built from the same signature: a mismatch is a defect, not a solution's doing)."""
    T = _TENSOR
    with _NO_TORCH_FUNCTION():
        described = {m.get("name"): m for m in metas if isinstance(m, dict)}
        if set(described) != set(tensors):
            raise WireError(f"fresh inputs {sorted(map(str, described))} do not match the set's {sorted(tensors)}")
        k = 0
        for meta in metas:
            name, target = meta["name"], tensors[meta["name"]]
            if "scalar" in meta:
                if meta["scalar"] != target:
                    raise WireError(f"fresh input {name} changed a scalar")
                continue
            if type(target) is not torch.Tensor:
                raise WireError(f"fresh input {name} is a tensor where the set holds a scalar")
            dtype = str(T.dtype.__get__(target)).replace("torch.", "")
            shape = list(T.shape.__get__(target))
            if meta.get("dtype") != dtype or meta.get("shape") != shape:
                raise WireError(f"fresh input {name} is {meta.get('dtype')}{meta.get('shape')}, the set's {dtype}{shape}")
            blob = blobs[k]
            k += 1
            size = T.element_size(target)
            if size not in _BYTE_VIEW or not T.is_contiguous(target) or T.numel(target) * size != blob_size(blob):
                raise WireError(f"fresh input {name}: {blob_size(blob)} bytes for a tensor of {T.numel(target) * size}")
            if T.numel(target) == 0:
                continue
            raw = blob if type(blob) is torch.Tensor else _FROMBUFFER(blob, dtype=torch.uint8)
            ints = T.view(T.view(target, _BYTE_VIEW[size]), -1)
            T.copy_(ints, T.view(T.view(raw, _BYTE_VIEW[size]), -1))
