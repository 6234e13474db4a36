"""The trusted batch: a solution's calls timed from the trusted side, their outputs in hand.

Every figure the timing loop reports is measured inside the candidate's process, where a solution
that reaches memory through ``ctypes`` can rewrite it (SECURITY.md, "What is not stopped"). The
batch is a cross-check that needs nothing on the candidate's side to be honest:

1. The candidate gets the inputs and prepares them.
2. For each of ``n`` calls the trusted side sends a perturbation seed and reads its own clock; the
   candidate runs the call (on the inputs perturbed by the seeds up to it, as in the timing loop)
   and sends its outputs back; the trusted side reads its clock again once it holds a private copy
   of them (``wire.recv``: out of the pipe, or copied out of the shared arena).
3. The trusted side compares ``k`` of the calls with the reference on the same inputs, chosen in
   secret before the batch, and drops the others' outputs.

No output can be computed before its seed arrives, and none can be finished after its round trip:
the trusted side already holds it. A candidate that fakes a fraction f of the calls goes unseen
with probability about (1 - f)^k. (Until 2026-12-05's session 20 the candidate kept its outputs and
sent a keyed digest of them, linear in their bytes, under a key it was given: the red team fitted
the low bits of right outputs, computed later, to digests it had sent for garbage, and passed.
``benchmarks/studies/2026-12-05-session20-interleaved-batch/redteam``.)

The trusted side runs the same protocol against a second candidate process of its own, which holds
no solution code (a null solution: outputs allocated once, nothing computed, sent back the same
way), to price the loop's own work, the outputs' transfer and the round trip in the same kind of
process. The two processes' calls are shuffled together (the worker's ``Checker.batch``), and while
one is timed the other's process tree is stopped (freeze.py): work the solution leaves running
between its calls cannot choose to fall on the pricing calls, and its threads do not run during
them. A call right after the other process's pays for the caches that one evicted (under the
interpreter, about 0.3 ms after a 7 ms call), so each side is priced by its warm calls, those right
after one of its own, as in a round of its own; and by their low quantile (``PRICE_QUANTILE``), not
their median, since a loaded machine slows long calls more often than short ones (the honest
expert's warm median reached 2.5x its in-process median beside a parallel test run), while no
call of the solution takes less than its own work.

The difference of the two prices is a lower bound on what the solution's calls cost, as far as the
loop's own work (perturbation, transfer) cannot be skipped, and it can be in part: a candidate that
fuses the perturbation into its own kernel undercuts the null price. So the bound is loose by at
most the loop's own cost per call, and it says most for long calls. Each call ends with a
device-wide synchronisation before its outputs are sent, so work the call put on a stream of its
own is inside its round trip and none of it runs on while the process is stopped. What a thread of
the solution's launches after that synchronisation can still run on (a stopped process's queued
kernels keep running), but it cannot choose which call it slows: a warm pricing call comes at least
two calls after the solution's last one, a warm solution call right after it, so work left behind
reaches the solution's own warm calls before the pricing ones.

On a GPU the bound is on the call's host work and device work together, while the figure it is
held against is the device's alone (the timing loop hides the host's issue time behind a held
stream, by design). Measured on an H100 (2026-12-05, session 24: eleven honest expert evaluations
of rmsnorm, silu_and_mul and fp8_blockwise_gemm, ``benchmarks/studies/2026-12-05-session24-h100``):
each side's warm round trip is 2-45 ms, mostly the host's (the trusted side's copy of the outputs,
the candidate's Python call and the wake-ups, ``phases_ms``), and the two processes' prices differ
by -0.9 to +2.0 ms whatever the kernel takes, 2-914 us there. So a default ``allowance_ms`` of
0.05 ms flagged six of the eleven. The GPU's default is ``BATCH_ALLOWANCE_GPU_MS``, 1.5 times the
largest gap seen (in-sample: set on those eleven): the batch bounds a GPU figure only where the
call takes several milliseconds, and says nothing about short kernels. Opt in with the timing
setting ``trusted_batch``.
"""

from __future__ import annotations

import torch

from d2k.execution import wire

# read through the C descriptors (a solution can rebind torch.Tensor's Python attributes)
_IS_META, _LAYOUT, _STRIDED = torch._C.TensorBase.is_meta.__get__, torch._C.TensorBase.layout.__get__, torch.strided

# each side's price: this quantile of its warm round trips
PRICE_QUANTILE = 0.2

# on a GPU, how far the two prices may differ either way before the flag is raised (see above)
BATCH_ALLOWANCE_GPU_MS = 3.0


def _neighbours(n: int, q: float) -> tuple[int, int, float]:
    """The two order statistics (of ``n``) the ``q`` quantile lies between, and how far along."""
    at = q * (n - 1)
    below = int(at)
    return below, min(below + 1, n - 1), at - below


def low_quantile(values: list[float], q: float = PRICE_QUANTILE) -> float:
    """The ``q`` quantile of ``values`` (linear between the two nearest order statistics)."""
    ordered = sorted(values)
    below, above, frac = _neighbours(len(ordered), q)
    return ordered[below] + (ordered[above] - ordered[below]) * frac


def price_setters(timed: list[tuple[float, int]], q: float = PRICE_QUANTILE) -> set[int]:
    """The calls, of ``(seconds, call)`` pairs, that ``low_quantile`` of their seconds is read from
    or lies below: the ones a faked call would have to be to move it."""
    ordered = sorted(timed)
    _, above, _ = _neighbours(len(ordered), q)
    return {j for _, j in ordered[:above + 1]}


def named_outputs(result, args: dict, returned: list[str], mutated: list[str]) -> dict | str:
    """A call's outputs by name (the returned ones in order, then the inputs the op writes), or why
    the result is not the task's outputs. Exact types only: a tuple or list subclass would run its
    own code when read."""
    values = {}
    if returned:
        items = result
        kind = type(result)
        sequence = kind is tuple or kind is list  # by identity: ``in (...)`` runs a metaclass's __eq__
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
            if _IS_META(value) or _LAYOUT(value) is not _STRIDED:
                # no bytes to send (a meta tensor crashed the candidate in its reply, and the run was
                # reported crashed instead of failed: red team G, session 21)
                return f"output {name} is a {'meta' if _IS_META(value) else str(_LAYOUT(value))} tensor, not a dense one"
            values[name] = value
    for name in mutated:
        values[name] = args[name]
    return values


def batch_call(fn, pristine: dict, working: dict, names: list[str], seed: int, j: int, returned: list[str],
               mutated: list[str]) -> dict:
    """Call ``j`` of a batch: the inputs perturbed by ``seed`` (cumulatively, as in the timing loop,
    so the trusted side replays them the same way), the inputs the op writes restored from the
    perturbed values, ``fn`` called; returns its outputs by name, to be sent at once."""
    wire.perturb(pristine, names, seed, j)
    for name in mutated:
        working[name].copy_(pristine[name])
    values = named_outputs(fn(**working), working, returned, mutated)
    if isinstance(values, str):
        raise ValueError(f"batch call {j}: {values}")
    return values
