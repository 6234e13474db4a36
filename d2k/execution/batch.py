"""The trusted batch: a solution's calls run back to back and timed from the trusted side.

Every figure the timing loop reports is measured inside the candidate's process, where a solution
that reaches memory through ``ctypes`` can rewrite it (SECURITY.md, "What is not stopped"). The
batch is a cross-check that needs nothing on the candidate's side to be honest:

1. The candidate gets the inputs and prepares them.
2. For each of ``n`` calls the trusted side sends a perturbation seed and reads its own clock; the
   candidate runs the call (on the inputs perturbed by the seeds up to it, as in the timing loop),
   keeps a copy of its outputs and commits to them by sending their digest; the trusted side reads
   its clock again when the digest arrives.
3. Only then does the trusted side name the calls it checks. Their outputs must match their
   committed digests and the reference on the same inputs.

No output can be computed before the seeds arrive, and none can be left for later: a call
skipped or faked inside the clock needs a digest of outputs not yet computed, and is caught when it
is checked (with ``k`` of ``n`` checked, a candidate that skips a fraction f of the calls goes
unseen with probability about (1 - f)^k).

The trusted side runs the same protocol against a second candidate process of its own, which
holds no solution code (a null solution: outputs allocated once, nothing computed), to price the
loop's own work and the round trip in the same kind of process. The two processes' calls are
shuffled together (the worker's ``Checker.batch``), and while one is timed the other's process
tree is stopped (freeze.py): work the solution leaves running between its calls cannot choose to
fall on the pricing calls, and its threads do not run during them. A call right after another
process's call pays for the caches that one evicted (under the interpreter, about 0.4 ms after a
7 ms call), so each side is priced by the median of its warm calls, those right after one of its
own, as in a round of its own.

The difference of the two medians is a lower bound on what the solution's calls cost, as far as the loop's own work (perturbation,
copies, digests) cannot be skipped, and it can be: a candidate that fuses the perturbation into its
own kernel and skips the copies undercuts the null price. So the bound is loose by at most the
loop's own cost per call, and it says most for long calls. On a GPU each round trip holds the
call's host time and a synchronisation, so for short kernels it bounds the host's time more than
the device span (not yet measured on the H200). Work already queued on the GPU keeps running
while its process is stopped, but it cannot choose which call it slows: a warm pricing call comes
at least two calls after the solution's last one, a warm solution call right after it, so work
left behind reaches the solution's own warm calls before the pricing ones. (On a GPU a kernel left
in the solution's context shares the SMs with its next call, while the pricing process's context
waits for a time slice; how the two compare there is not measured.) Opt in with the timing
setting ``trusted_batch``.
"""

from __future__ import annotations

import torch

from d2k.execution import wire

KEY_WIDTH = 4096  # digest keys, tiled over each output's 4-byte words


def digest_keys(key: int, device) -> torch.Tensor:
    """The digest's multipliers, drawn from ``key`` (the same on both sides)."""
    generator = torch.Generator().manual_seed(int(key) & ((1 << 63) - 1))
    return torch.randint(1, 2**31 - 1, (KEY_WIDTH,), generator=generator, dtype=torch.int64).to(device)


def digest(tensors: list, keys: torch.Tensor) -> torch.Tensor:
    """A keyed sum over the outputs' bytes, as 4-byte words times the keys, in int64 arithmetic
    (wrapping, so the order of the sum does not matter): a 0-dim int64 tensor on ``keys``'s device,
    the same for the same bytes on the CPU and on a GPU. Computing it needs every byte of the
    outputs, and the keys are drawn per batch."""
    total = torch.zeros((), dtype=torch.int64, device=keys.device)
    for t in tensors:
        raw = t.detach().contiguous().reshape(-1).view(torch.uint8)
        pad = (-raw.numel()) % (4 * KEY_WIDTH)
        if pad:
            raw = torch.cat([raw, raw.new_zeros(pad)])
        words = raw.view(torch.int32).view(-1, KEY_WIDTH).to(torch.int64)
        # a polynomial in the outputs' sums: which output holds which bytes counts
        total = total * 1_000_003 + (words * keys).sum()
    return total


def named_outputs(result, args: dict, returned: list[str], mutated: list[str]) -> dict | str:
    """A call's outputs by name (the returned ones in order, then the inputs the op writes), or why
    the result is not the task's outputs. Exact types only: a tuple or list subclass would run its
    own code when read."""
    values = {}
    if returned:
        items = result
        sequence = type(result) in (tuple, list)
        if len(returned) == 1:
            if sequence and len(result) == 1:
                items = result[0]
            items = [items]
        elif not sequence or len(result) != len(returned):
            got = f"{type(result).__module__}.{type(result).__qualname__}" if not sequence else f"{len(result)} values"
            return f"must return {len(returned)} outputs ({', '.join(returned)}), got {got}"
        for name, value in zip(returned, items):
            if type(value) is not torch.Tensor:
                return f"output {name} is a {type(value).__module__}.{type(value).__name__}, not exactly a torch.Tensor"
            values[name] = value
    for name in mutated:
        values[name] = args[name]
    return values


def batch_call(fn, pristine: dict, working: dict, names: list[str], seed: int, j: int, returned: list[str],
               mutated: list[str], keys: torch.Tensor) -> tuple[int, dict]:
    """Call ``j`` of a batch: the inputs perturbed by ``seed`` (cumulatively, as in the timing loop,
    so the trusted side replays them the same way), the inputs the op writes restored from the
    perturbed values, ``fn`` called, a copy of its outputs kept by name; returns the copy's digest
    (reading it waits for the device) and the copy."""
    wire.perturb(pristine, names, seed, j)
    for name in mutated:
        working[name].copy_(pristine[name])
    values = named_outputs(fn(**working), working, returned, mutated)
    if isinstance(values, str):
        raise ValueError(f"batch call {j}: {values}")
    copies = {name: value.detach().clone() for name, value in values.items()}
    return int(digest(list(copies.values()), keys)), copies
