"""The trusted worker: checks and times one solution on a list of workloads.

    python -m d2k.execution.worker JOB.json      (the event key arrives on standard input)

The job (plain JSON, written by ``d2k.job_payload``) names the solution, the task's signature and
tolerances, the workloads and the timing settings. This process builds the inputs, runs the
reference and compares; the solution itself runs in a separate, sandboxed candidate process
(``d2k.execution.candidate`` inside ``d2k.execution.sandbox``) that receives input bytes and
returns output bytes over pipes. So the candidate can patch nothing here: not the comparison, not
the reference, not the tolerances, not the events.

Events go to ``job["events_path"]``, one JSON line each, authenticated with an HMAC whose key the
parent passes on standard input (never in a file or the environment): ``env``, then per workload
``start`` and ``result``, then ``done``. Imports: the standard library, torch, triton, numpy.
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import importlib.util
import json
import math
import os
import random
import select
import shutil
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

os.environ.setdefault("PYTHONHASHSEED", "0")

# timed calls at most with fresh inputs per call: each waits for a draw of the inputs and its
# transfer (device to host, the pipe or arena, host to device). The calls' count also keeps the
# inputs moved within FRESH_BYTES_BUDGET, down to the timing loop's own minimum: on an H100 a
# 1-GB set (cross_entropy_fwd_bwd at llama3 n4096) took 98 s for 200 calls (2026-12-05, session 24)
FRESH_MAX_REPS = 200
FRESH_BYTES_BUDGET = 8e9

# the shared-memory arena's size, by backend (interpreter: smoke tensors, inside its address-space
# limit); a frame larger than the arena crosses the pipe
ARENA_BYTES = {True: 1 << 30, False: 32 << 30}


def _memfd(size: int) -> int | None:
    """A shared-memory file of ``size`` bytes for ``wire.Arena``; None where memfd is missing."""
    from d2k.execution.shm import memfd

    try:
        return memfd(size)
    except (AttributeError, OSError):
        return None


# kernels that come from libraries rather than the solution (for the kernel-less flag)
LIBRARY_KERNEL_MARKERS = ("at::", "at_cuda_detail", "c10::", "cublas", "cutlass", "nvjet", "xmma", "gemm", "gemv",
                          "cub::", "thrust::", "memcpy", "memset", "Memcpy", "Memset", "cudnn", "flash::", "pytorch_")
# markers a solution's own kernel may carry too (a Triton `_gemm_persistent_kernel`; cuBLAS's
# `gemv2T_kernel_val` has no other marker): a name with only these is not known to be a library's
WEAK_KERNEL_MARKERS = ("gemm", "gemv")
STRONG_KERNEL_MARKERS = tuple(m for m in LIBRARY_KERNEL_MARKERS if m not in WEAK_KERNEL_MARKERS)


def sign(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def load_request(job: dict, solution_path: str) -> dict:
    """The ``load`` command that has the candidate import the job's solution (candidate._load reads
    it): its file as the sandbox sees it, entry point, kind and, for a compiled solution, whether
    torch.compile runs with dynamic shapes."""
    solution = job["solution"]
    return {"op": "load", "path": solution_path, "entry_point": solution.get("entry_point", "run"),
            "kind": solution["kind"], "compile_dynamic": bool(solution.get("compile_dynamic")),
            "backend": job["backend"], "memory_fraction": job.get("sandbox", {}).get("gpu_memory_fraction")}


def fresh_max_reps(settings: dict, set_bytes: int) -> int:
    """The most timed calls with a fresh draw of a ``set_bytes`` input set per call: at most
    ``FRESH_MAX_REPS``, and the draws within ``FRESH_BYTES_BUDGET``, but never under the timing
    loop's ``min_reps`` (nor over its ``max_reps``)."""
    ceiling = min(int(settings.get("max_reps", 1000)), FRESH_MAX_REPS)
    by_bytes = int(FRESH_BYTES_BUDGET // max(set_bytes, 1))
    return max(min(ceiling, by_bytes), min(int(settings.get("min_reps", 10)), ceiling))


class Events:
    """Appends authenticated JSON lines for the parent: ``{"event": ..., ..., "mac": HMAC}``."""

    def __init__(self, path: str, key: bytes):
        self.fh = open(path, "a", encoding="utf-8")
        self.key = key

    def emit(self, event: str, durable: bool = False, **fields) -> None:
        fields = {"event": event, "time": time.time(), **fields}
        body = json.dumps(fields, default=str, sort_keys=True)
        line = json.dumps({"body": body, "mac": sign(self.key, body.encode())})
        self.fh.write(line + "\n")
        self.fh.flush()
        if durable:
            os.fsync(self.fh.fileno())


def load_module(path, name: str):
    """Import the Python file at ``path`` as module ``name`` (registered in sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_failure(exc: CandidateFailed, sandbox_meta: dict) -> CandidateFailed:
    """What a candidate's failed ``load`` becomes in the result: the solution's failure to import,
    or, where the candidate's torch saw no device while this worker's did (checked before any
    candidate starts), the sandbox's fault, named as such (session 15: a bind hid the driver)."""
    from d2k.execution.sandbox import NO_CUDA_INSIDE

    if exc.reason == NO_CUDA_INSIDE:
        layers = ", ".join(name for name, on in sandbox_meta.get("layers", {}).items() if on)
        return CandidateFailed("error", "the sandbox hid the GPU: this worker sees a CUDA device, the candidate "
                               f"process does not (layers on: {layers}); a fault of d2k on this machine, not of "
                               "the solution (benchmarks/sandbox_cuda_probe.py shows which part)")
    return CandidateFailed(exc.status if exc.status in ("crashed", "failed", "skipped") else "error",
                           f"solution failed to import: {exc.reason}", exc.traceback)


def _short_traceback(limit: int = 2000) -> str:
    return traceback.format_exc()[-limit:]


class CheckFailed(Exception):
    """The solution computed something other than the reference."""


class CandidateFailed(Exception):
    """The candidate process raised, crashed or broke the protocol; ``status`` says which."""

    def __init__(self, status: str, reason: str, traceback_text: str | None = None):
        super().__init__(reason)
        self.status, self.reason, self.traceback = status, reason, traceback_text


def candidate_failure(reply: dict, default: str = "the candidate failed", prefix: str = "") -> CandidateFailed:
    """What a reply of the candidate's with ``ok`` false means for the evaluation: a status by its
    kind (a wrong or tampered output fails; running out of memory, or raising, is an error; a
    baseline whose library is absent is skipped) and its reason."""
    kind = reply.get("kind")
    status = {"output": "failed", "tampered": "failed", "oom": "error", "missing_library": "skipped"}.get(kind, "error")
    reason = str(reply.get("reason", default))
    if kind == "oom":
        reason = "out of memory: " + reason
    return CandidateFailed(status, prefix + reason, reply.get("traceback"))


class OutputTail:
    """Drains a pipe in a thread, keeping only the last ``limit`` bytes (a flood costs no memory)."""

    def __init__(self, fd: int, limit: int = 64 * 1024):
        self.fd, self.limit, self.tail, self.total = fd, limit, bytearray(), 0
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.total += len(chunk)
            self.tail += chunk
            if len(self.tail) > self.limit:
                del self.tail[: len(self.tail) - self.limit]

    def last_line(self) -> str:
        text = bytes(self.tail).decode("utf-8", "replace").strip()
        return text.splitlines()[-1][:300] if text else ""

    def last_chars(self, n: int = 300) -> str:
        return bytes(self.tail[-4 * n:]).decode("utf-8", "replace")[-n:]


# A solution's kernel cache lives on the host's disk between runs (its compiled kernels) and the
# solution can write anything there: one that left 64 MiB of ballast in it kept it (red team G,
# session 21). Over this size (or this many files) it is emptied before the solution's next start.
CACHE_MAX_BYTES = 4 << 30
CACHE_MAX_FILES = 200_000


def prune_kernel_cache(cache: Path, max_bytes: int = CACHE_MAX_BYTES, max_files: int = CACHE_MAX_FILES) -> bool:
    """Empty ``cache`` if it holds more than ``max_bytes`` or ``max_files``; True if it did."""
    if not cache.is_dir():
        return False
    size = files = 0
    for folder, _, names in os.walk(cache):
        for name in names:
            files += 1
            try:
                size += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
            if size > max_bytes or files > max_files:
                shutil.rmtree(cache, ignore_errors=True)
                return True
    return False


class CandidateProcess:
    """The sandboxed process that runs the solution; one per solution, restarted after a failure."""

    def __init__(self, job: dict, job_dir: Path, index, source: str | None = None):
        """``source``: a harness file to run instead of the job's solution (the trusted batch's null
        solution), with no kernel cache."""
        from d2k.execution import sandbox

        self.wire_s = 0.0  # seconds spent in writes to the candidate (see Checker.evaluate)
        self.wire_bytes = {"arena": 0, "pipe": 0}  # tensor bytes each way took, both directions
        solution = job["solution"]
        self.private = job_dir / f"candidate-{index}"
        shutil.rmtree(self.private, ignore_errors=True)
        self.private.mkdir(parents=True)
        for sub in ("inductor-cache", "cache"):
            (self.private / sub).mkdir()
        # a compiled solution's file is the reference, or the eager stand-in it compiles (solutions.resolve)
        own = source is None
        if own and solution.get("source") is not None:
            # the text d2k read and hashed into the solution's id, not the file as it is now
            (self.private / "solution.py").write_text(solution["source"], encoding="utf-8")
        else:
            if own:
                source = job["task"]["reference_path"] if solution["kind"] == "reference" else solution["path"]
            shutil.copyfile(source, self.private / "solution.py")
        settings = job.get("sandbox", {})
        # this solution's compiled kernels are kept between runs, in a cache no other solution sees
        cache = Path(settings["cache_root"]) / solution["solution_id"][:24] if settings.get("cache_root") and own else None
        if cache is not None:
            prune_kernel_cache(cache, int(settings.get("cache_max_bytes") or CACHE_MAX_BYTES))
            cache.mkdir(parents=True, exist_ok=True)
        prefix, env, self.meta = sandbox.plan(
            self.private, [Path(p) for p in settings.get("hide", [])], [Path(p) for p in settings.get("read_only", [])],
            job["backend"], settings.get("limits", {}), enabled=settings.get("enabled", True), cache_dir=cache)
        if self.meta["layers"]["unprivileged_user"]:
            for path in self.private.rglob("*"):
                os.chown(path, sandbox.NOBODY, sandbox.NOBODY)
        self.solution_path = f"{self.meta['root']}/solution.py"
        cmd_r, self.cmd_w = os.pipe()
        self.reply_r, reply_w = os.pipe()
        out_r, out_w = os.pipe()
        # large tensors cross through shared memory (wire.Arena); its size is reserved, not used
        arena_bytes = int(settings.get("arena_bytes", ARENA_BYTES[job["backend"] == "interpreter"]))
        arena_fd = _memfd(arena_bytes) if arena_bytes else None
        fds = (cmd_r, reply_w) + ((arena_fd,) if arena_fd is not None else ())
        argv = [*prefix, sys.executable, "-m", "d2k.execution.candidate", *map(str, fds)]
        # for the trusted batch, a freezer cgroup of its own, entered before the program runs, so
        # all it ever forks can be stopped at once (freeze.py: a SIGSTOP walk was outrun)
        self.cgroup = None
        if job.get("timing", {}).get("trusted_batch") and job["timing"].get("batch_freezer", "auto") != "sigstop":
            from d2k.execution.freeze import Cgroup

            self.cgroup = Cgroup.create(f"{os.getpid()}-{index}-{os.urandom(4).hex()}")
        cgroup = self.cgroup

        def start_child() -> None:
            if cgroup is not None:
                try:
                    cgroup.enter()
                except OSError:
                    pass  # found out below: the cgroup is dropped and the walk stops the tree
            sandbox.die_with_parent()

        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w, env=env,
                                     pass_fds=fds, start_new_session=True, preexec_fn=start_child)
        if self.cgroup is not None and self.proc.pid not in self.cgroup.members():
            # an empty cgroup freezes at once and would vouch for a tree it does not hold
            self.cgroup.remove()
            self.cgroup = None
        for fd in (cmd_r, reply_w, out_w):
            os.close(fd)
        self.output = OutputTail(out_r)
        self.reply_limit = int(settings.get("reply_bytes", 64 << 30))
        from d2k.execution import wire  # imports torch: after the spawn, so both start up at once

        self.wire = wire
        self.arena = wire.Arena(arena_fd) if arena_fd is not None else None

    def other_processes_cpu(self, threads: bool):
        """A reader of the CPU time this candidate's processes other than its main one run, and with
        ``threads`` its main process's threads but the first (tree_cpu.py)."""
        from d2k.execution.tree_cpu import OtherProcessesCpu

        return OtherProcessesCpu(self.proc.pid, bool(self.meta.get("layers", {}).get("pid_namespace")), threads)

    def died(self) -> CandidateFailed:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        import signal

        if code is not None and (code < 0 or code > 128):
            sig = -code if code < 0 else code - 128
            try:
                how = f"was killed by {signal.Signals(sig).name}"
            except ValueError:
                how = f"was killed by signal {sig}"
            if sig == signal.SIGSEGV and self.meta.get("layers", {}).get("pid_namespace"):
                # the candidate is its namespace's first process, which ignores its own SIGABRT: an
                # abort() ends in the forced SIGSEGV that follows (red team G, session 21)
                how += " (or an abort: the first process of its pid namespace cannot die of its own SIGABRT)"
        else:
            how = f"exited with code {code}"
        last = self.output.last_line()
        return CandidateFailed("crashed", f"the candidate process {how}" + (f" ({last})" if last else ""))

    def send(self, header: dict, blobs=None) -> None:
        started = time.perf_counter()
        try:
            self._count(blobs, via_arena=bool(self.wire.send(self.cmd_w, header, blobs, arena=self.arena)))
        except (BrokenPipeError, OSError):
            raise self.died() from None
        finally:
            self.wire_s += time.perf_counter() - started

    def receive(self, limit: int | None = None, spin_s: float = 0.0) -> tuple[dict, list]:
        try:
            reply, blobs = self.wire.recv(self.reply_r, self.reply_limit if limit is None else limit,
                                          spin_s=spin_s, arena=self.arena)
            self._count(blobs, via_arena="arena" in reply)
            return reply, blobs
        except self.wire.WireError as exc:
            if self.proc.poll() is None and "closed" not in str(exc):
                self.kill()
                hint = (" (a reply may hold twice the outputs' size by the task's signature: check their shapes "
                        "and dtypes)") if "announced" in str(exc) else ""
                raise CandidateFailed("failed", f"the candidate broke the protocol: {exc}{hint}") from None
            raise self.died() from None

    def _count(self, blobs, via_arena: bool) -> None:
        """Add a frame's tensor bytes to the way it took (a frame goes one way whole)."""
        self.wire_bytes["arena" if via_arena else "pipe"] += sum(self.wire.blob_size(b) for b in blobs or [])

    def request(self, header: dict, blobs=None, limit: int | None = None) -> tuple[dict, list]:
        self.send(header, blobs)
        reply, out = self.receive(limit)
        if not reply.get("ok"):
            raise candidate_failure(reply)
        return reply, out

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self.cgroup is not None:
            self.cgroup.remove()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.wire.send(self.cmd_w, {"op": "exit"})
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        for fd in (self.cmd_w, self.reply_r):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.arena is not None:
            self.arena.close()
        shutil.rmtree(self.private, ignore_errors=True)


SPAN_KEYS = ("span_samples_ms", "kernel_sum_ms", "kernels_per_call", "span_kernel_names", "calls_without_device_work",
             "span_lead_gap_us")


def malformed_timing(timing: dict, settings: dict | None = None) -> str | None:
    """What in a timing reply is not the numbers the timing loop makes (the reply comes from the
    candidate's process: a rewritten one must fail here, not crash the parent's statistics). A
    device span the job did not ask for is one: the parent would take it as the figure."""
    if "trusted_batch" in timing:
        return "the timing reported a trusted batch, which only the trusted side measures: the timing loop was replaced"
    if settings is not None and not settings.get("device_span"):
        forged = [k for k in SPAN_KEYS if k in timing]
        if forged:
            return f"the timing reported a device span ({forged[0]}) that the job did not ask for: the timing loop " \
                   "was replaced"

    for key in ("samples_ms", "span_samples_ms", "kernel_sum_ms", "kernels_per_call"):
        values = timing.get(key)
        if values is None:
            continue
        if not isinstance(values, list) or not all(
                type(v) in (int, float) and math.isfinite(v) for v in values):
            return f"the timing reported a malformed {key}: the timing loop was replaced"
    gaps = timing.get("span_lead_gap_us")
    if gaps is not None and (not isinstance(gaps, list) or not all(
            v is None or (type(v) in (int, float) and math.isfinite(v)) for v in gaps)):
        return "the timing reported a malformed span_lead_gap_us: the timing loop was replaced"
    if type(timing.get("triton_launches", 0)) is not int:
        return "the timing reported a malformed triton_launches: the timing loop was replaced"
    # the CUDA loop's diagnostics, which flags, notes and the report read: a count, finite numbers
    # (the profiler's slow-down may be absent), a yes or no
    # (a count of timed calls: a loop makes thousands at most, and the flag stores it as JSON)
    if "late_calls" in timing and not (type(timing["late_calls"]) is int and 0 <= timing["late_calls"] <= 10 ** 6):
        return "the timing reported a malformed late_calls: the timing loop was replaced"
    for key, optional in (("late_worst_us", False), ("hold_us", False), ("profiler_slowed", True)):
        if key in timing and not ((optional and timing[key] is None)
                                  or (type(timing[key]) in (int, float) and math.isfinite(timing[key]))):
            return f"the timing reported a malformed {key}: the timing loop was replaced"
    if "waits_for_device" in timing and type(timing["waits_for_device"]) is not bool:
        return "the timing reported a malformed waits_for_device: the timing loop was replaced"
    return None


def discarded_calls(timing: dict, settings: dict) -> int:
    """The timed calls the candidate's timing says it announced and then left out of samples_ms.

    Discarding is the profiler check's alone: one profiled run (at most ``span_max_reps`` calls, in
    span mode) whose median exceeded the slowest unprofiled probe by the slack
    (``timing.profiler_slowed``), then timed again without the profiler. A count without that
    would let a candidate drop the calls it likes least and keep the rest, so it fails the check."""
    try:
        discarded = max(0, int(timing.get("discarded_calls", 0) or 0))
    except (TypeError, ValueError):
        raise CheckFailed("the timing reported a malformed discarded_calls: the timing loop was replaced") from None
    if not discarded:
        return 0
    slowed = timing.get("profiler_slowed")
    max_reps = int(settings.get("span_max_reps", 300))
    slack = float(settings.get("profiler_slack", 1.25))
    if not settings.get("device_span") or isinstance(slowed, bool) or not isinstance(slowed, (int, float)) \
            or slowed < slack or discarded > max_reps:
        raise CheckFailed(f"the timing discarded {discarded} calls without the profiler check that allows it "
                          f"(span mode, profiler_slowed >= {slack}, at most {max_reps} calls): the timing loop was "
                          "replaced")
    return discarded


class CheckedCalls:
    """Which announced calls the trusted side checks: every call of ``always`` and a uniform sample of
    ``size`` of the others (a reservoir), each decided as the call is announced, after it was issued,
    from the trusted side's randomness."""

    def __init__(self, rng, size: int = 3, always=()):
        self.rng, self.size, self.always = rng, size, set(always)
        self.sampled: list[int] = []
        self.offered = 0

    @property
    def calls(self) -> list[int]:
        return sorted(self.always) + self.sampled

    def decide(self, call: int) -> tuple[bool, int | None]:
        """Whether ``call``'s outputs are kept for checking, and the earlier call it replaces (if any)."""
        if call in self.always:
            return True, None
        self.offered += 1
        if len(self.sampled) < self.size:
            self.sampled.append(call)
            return True, None
        if self.rng.random() >= self.size / self.offered:
            return False, None
        dropped = self.sampled.pop(self.rng.randrange(len(self.sampled)))
        self.sampled.append(call)
        return True, dropped


# the trusted batch prices each process from its warm calls (those after one of its own) when it
# has at least this many, otherwise from all its calls (batch.PRICE_QUANTILE of them)
WARM_CALLS_MIN = 8


class Checker:
    """Correctness and timing of the candidate against the task's reference, on the trusted side."""

    def __init__(self, job: dict, reference_module, candidate: CandidateProcess, null_process=None):
        """``null_process()``: the trusted batch's pricing process (a candidate holding no solution)."""
        import torch

        from d2k.execution import wire
        from d2k.execution.compare import Mismatch, compare_tensor

        self.torch, self.wire = torch, wire
        self.Mismatch, self.compare_tensor = Mismatch, compare_tensor
        self.job = job
        self.task = job["task"]
        self.signature = self.task["signature"]
        self.interpreter = job["backend"] == "interpreter"
        self.device = "cpu" if self.interpreter else "cuda"
        self.reference_module = reference_module
        self.reference = reference_module.reference
        self.candidate = candidate
        self.null_process = null_process
        self.is_reference = job["solution"]["kind"] == "reference"
        self.returned = [o["name"] for o in self.signature["outputs"] if not o.get("inplace")]
        self.mutated = [o["name"] for o in self.signature["outputs"] if o.get("inplace")]
        self.fixed = set(getattr(reference_module, "FIXED_INPUTS", ()))
        if self.interpreter:
            # inputs built to dodge a defect of the interpreter (its fp8 rounding) stay as built there
            self.fixed |= set(getattr(reference_module, "INTERPRETER_FIXED_INPUTS", ()))
        # a fresh draw of the inputs for every timed call (wire.refill): the task asks for it where
        # a row's order-free statistics would otherwise repeat from call to call (SECURITY.md)
        wanted = job.get("timing", {}).get("fresh_inputs", "task")
        self.fresh_inputs = bool(getattr(reference_module, "FRESH_INPUTS_PER_CALL", False)) if wanted == "task" \
            else bool(wanted)
        # the timing loop's fixed inputs: with fresh inputs, also those whose builder guarantees
        # something the perturbation would break (routing logits drawn with no near-tie, which a
        # rotation against the bias undoes): each call's fresh draw already changes them. With fresh
        # inputs off they are perturbed as any other, so nothing stays the same from call to call;
        # and so they are in the trusted batch, which draws no fresh inputs (self.fixed there)
        self.timing_fixed = self.fixed | (set(getattr(reference_module, "UNPERTURBED_WHEN_FRESH", ()))
                                          if self.fresh_inputs else set())
        self.rng = random.SystemRandom()
        self.triton_launches = 0

    # -- helpers -------------------------------------------------------------------------------
    def sync(self):
        if not self.interpreter:
            self.torch.cuda.synchronize()

    def inputs(self, workload: dict, seed: int) -> dict:
        from d2k.execution.inputs import build_inputs

        return build_inputs(self.signature, workload, seed, self.device, self.interpreter, self.reference_module)

    def fresh(self, inputs: dict) -> dict:
        """Arguments for one reference call: inputs the op mutates are private copies."""
        return {k: (v.clone() if k in self.mutated else v) for k, v in inputs.items()}

    def run_reference(self, args: dict) -> dict:
        torch = self.torch
        result = self.reference(**args)
        self.sync()
        outputs = {}
        if self.returned:
            values = [result] if len(self.returned) == 1 and not isinstance(result, (tuple, list)) else list(result)
            if len(self.returned) == 1 and len(values) != 1:
                values = [result]
            for name, value in zip(self.returned, values):
                outputs[name] = value.detach().clone() if isinstance(value, torch.Tensor) else value
        for name in self.mutated:
            outputs[name] = args[name].detach().clone()
        return outputs

    def received(self, metas: list, blobs: list, facts: dict, who: str) -> dict:
        """Outputs rebuilt from the candidate's bytes (plain tensors), after the shape checks."""
        try:
            outputs = self.wire.unpack(metas, blobs, self.device)
        except self.wire.WireError as exc:
            raise CheckFailed(f"{who}: malformed output: {exc}") from None
        missing = [n for n in self.returned + self.mutated if n not in outputs]
        if missing:
            raise CheckFailed(f"{who}: outputs {', '.join(missing)} missing")
        if not self.interpreter:
            off = [n for n, d in (facts.get("device") or {}).items() if not str(d).startswith("cuda")]
            if off:
                raise CheckFailed(f"{who}: output {off[0]} is on {facts['device'][off[0]]}, not the GPU")
        return outputs

    def run_candidate(self, workload: dict, inputs: dict, who: str, reuse: bool = False) -> dict:
        """One call of the candidate on ``inputs``; ``reuse``: the same inputs as its last call,
        which it rebuilds from the bytes it kept (nothing is sent again)."""
        command = {"op": "call", "returned": self.returned, "mutated": self.mutated}
        limit = self.reply_bytes(workload, inputs, calls=1)
        if reuse:
            reply, out = self.candidate.request({**command, "reuse": True}, limit=limit)
        else:
            metas, blobs = self.wire.pack(inputs)
            reply, out = self.candidate.request({**command, "inputs": metas}, blobs, limit=limit)
        facts = reply.get("facts") if isinstance(reply.get("facts"), dict) else {}
        launches = facts.get("triton_launches", 0)
        if type(launches) is not int:
            raise CheckFailed(f"{who}: the call reported a malformed triton_launches: the candidate's harness was replaced")
        self.triton_launches += launches
        modified = facts.get("modified_inputs") or []
        if modified:
            raise CheckFailed(f"{who} modified input {modified[0]}, which the op must not write")
        return self.received(reply.get("outputs", []), out, facts, who)

    def reply_bytes(self, workload: dict, inputs: dict, calls: int) -> int:
        """The most tensor bytes a reply may announce: twice what ``calls`` calls' outputs take by the
        signature (plus 1 MiB), so a candidate cannot make this process allocate without bound;
        the configured ceiling where an output's size cannot be computed ahead."""
        from d2k.execution.inputs import numel, tensor_bytes

        total = tensor_bytes({name: inputs[name] for name in self.mutated})
        try:
            total += sum(numel(shape) * dtype.itemsize for dtype, shape in self.returned_specs(workload))
        except Exception:  # a shape the signature cannot state ahead (data-dependent)
            return self.candidate.reply_limit
        return min(self.candidate.reply_limit, 2 * total * calls + (1 << 20))

    def returned_specs(self, workload: dict) -> list[tuple]:
        """(dtype, shape) of each returned output by the signature, in order; raises where a shape
        cannot be stated ahead (it depends on the data)."""
        from d2k.execution.inputs import resolve_dtypes, spec_dtype, spec_shape

        dtypes = resolve_dtypes(workload, self.interpreter)
        specs = {s["name"]: s for s in self.signature["outputs"]}
        return [(spec_dtype(specs[n], dtypes, self.interpreter), spec_shape(specs[n], workload)) for n in self.returned]

    def canonical(self, outputs: dict, inputs: dict) -> dict:
        """Outputs in the task's canonical form (e.g. order-free results sorted), if it defines one."""
        hook = getattr(self.reference_module, "canonicalize", None)
        return dict(hook(dict(outputs), inputs)) if hook is not None else outputs

    def compare(self, got: dict, expected: dict, label: str) -> dict:
        stats = {}
        for name, ref in expected.items():
            try:
                stats[name] = self.compare_tensor(name, got[name], ref, self.task["tolerance"][name])
            except self.Mismatch as exc:
                raise CheckFailed(f"{label}: {exc}") from None
        return stats

    # -- the phases ----------------------------------------------------------------------------
    def check(self, workload: dict) -> dict:
        trials = []
        for trial in range(int(self.task.get("trials", 3))):
            seed = int(workload.get("seed", 0)) * 1_000_003 + trial
            inputs = self.inputs(workload, seed)
            first = self.run_candidate(workload, inputs, "the solution")
            expected = self.run_reference(self.fresh(inputs))
            second = self.run_candidate(workload, inputs, "the solution", reuse=True)
            first, expected, second = (self.canonical(o, inputs) for o in (first, expected, second))
            stats = self.compare(first, expected, f"trial {trial} (first call)")
            self.compare(second, expected, f"trial {trial} (second call)")
            trials.append({"seed": seed, "outputs": stats})
            del inputs, first, second, expected
        return {"trials": trials}

    def replay(self, base: dict, names: list, seeds: list[int], calls: list[int], n_sets: int,
               workload: dict | None = None, fresh_seeds: list[int] | None = None):
        """Yields ``(call, inputs)`` for each of ``calls``: the inputs that timed call ran on, i.e.
        its set's values after every perturbation up to it (call ``j``'s from ``seeds[j]``). One
        pass per set, in call order, so each perturbation is applied once (not once per checked
        call). With fresh inputs, call ``j`` ran on the draw from ``fresh_seeds[j]``, perturbed
        once by ``seeds[j]``."""
        if fresh_seeds is not None:
            for j in sorted(calls):
                state = self.inputs(workload, fresh_seeds[j])
                self.wire.perturb(state, names, seeds[j], j)
                yield j, state
                del state
            return
        for i in sorted({c % n_sets for c in calls}):
            state = {k: (v.clone() if isinstance(v, self.torch.Tensor) else v) for k, v in base.items()}
            wanted = sorted(c for c in calls if c % n_sets == i)
            for j in range(i, wanted[-1] + 1, n_sets):
                self.wire.perturb(state, names, seeds[j], j)
                if j in wanted:
                    yield j, state
            del state

    def time(self, workload: dict) -> dict:
        from d2k.execution.inputs import tensor_bytes

        torch = self.torch
        settings = self.job.get("timing", {})
        base = self.inputs(workload, int(workload.get("seed", 0)) * 1_000_003)
        set_bytes = max(tensor_bytes(base), 1)
        # under the interpreter two sets and four calls suffice: calls 2 and 3 reuse a set
        n_sets = 2 if self.interpreter else int(min(8, max(2, float(settings.get("rotate_bytes", 2e9)) // set_bytes)))
        names = self.wire.perturbable(base, self.timing_fixed)
        # call j's perturbation seed, drawn when call j asks for it, just before it runs (see candidate.time)
        seeds: list[int] = []
        # and, with fresh inputs, the seed of its inputs' draw, sent with them
        fresh_seeds: list[int] | None = [] if self.fresh_inputs else None
        if fresh_seeds is not None:
            # each timed call waits for a draw and its transfer: fewer calls
            settings = {**settings, "max_reps": fresh_max_reps(settings, set_bytes)}
        metas, blobs = self.wire.pack(base)
        # what the solution's other processes run meanwhile, read from /proc (tree_cpu.py), and its
        # other threads where the candidate computes on one (OMP_NUM_THREADS=1, the interpreter): a
        # GPU process's driver and profiler threads run honestly beside the calls
        others = self.candidate.other_processes_cpu(threads=self.interpreter)
        # a library's own processes may still be busy from its first use (the inductor's compiler
        # pool starting its workers): wait for quiet first, or their CPU would read as the calls' work
        settled = others.settle(limit_s=float(settings.get("settle_s", 20.0)))
        others.start()
        started = time.perf_counter()
        self.candidate.send({"op": "time", "inputs": metas, "returned": self.returned, "mutated": self.mutated,
                             "n_sets": n_sets, "perturb": names, "settings": settings,
                             "fresh_bytes": set_bytes if fresh_seeds is not None else 0}, blobs)
        # On a GPU call 0 is the profiled probe, whose kernel time bounds the timed median: always checked
        probe_calls = 0 if self.interpreter else 1
        sample = CheckedCalls(self.rng, always=range(probe_calls) if not self.is_reference else ())
        seen = 0
        # each kept call's outputs arrive right after the decision to keep them (see candidate.time)
        kept: dict[int, tuple[dict, list]] = {}
        limit = self.reply_bytes(workload, base, calls=1)
        while True:
            # answer each "issued" at once: the candidate waits for the decision between timed calls
            reply, out = self.candidate.receive(limit=limit, spin_s=self.wire.spin_s(self.interpreter))
            if reply.get("op") == "seed":
                # only the next call's seed, once, after the call before it was decided
                if reply.get("call") != seen or len(seeds) != seen:
                    raise CheckFailed(f"the timing asked for call {reply.get('call')}'s perturbation where call "
                                      f"{seen}'s was next: the timing loop was replaced")
                seeds.append(self.rng.getrandbits(62))
                if fresh_seeds is None:
                    self.candidate.send({"seed": seeds[seen]})
                else:
                    fresh_seeds.append(self.rng.getrandbits(62))
                    drawn = self.inputs(workload, fresh_seeds[seen])
                    fresh_metas, fresh_blobs = self.wire.pack(drawn)
                    self.candidate.send({"seed": seeds[seen], "fresh": fresh_metas}, fresh_blobs)
                    del drawn, fresh_blobs
                continue
            if reply.get("op") == "issued":
                j = int(reply.get("call", -1))
                if j != seen or len(seeds) != seen + 1:
                    raise CheckFailed(f"the timing announced call {j} where call {seen} was next, or a call "
                                      "that never asked for its perturbation: the timing loop was replaced")
                seen += 1
                # (a reference's outputs are not compared: nothing of its is kept)
                keep, dropped = sample.decide(j) if not self.is_reference else (False, None)
                kept.pop(dropped, None)
                self.candidate.send({"keep": keep})
                if keep:
                    reply, out = self.candidate.receive(limit=limit, spin_s=self.wire.spin_s(self.interpreter))
                    if reply.get("op") != "kept":
                        break  # the timing ended (it failed) instead of sending the kept outputs
                    if reply.get("call") != j:
                        raise CheckFailed(f"the timing sent call {reply.get('call')}'s outputs where call {j}'s were "
                                          "kept: the timing loop was replaced")
                    kept[j] = (reply, out)
                continue
            break
        wall_ms = (time.perf_counter() - started) * 1e3
        other_cpu = others.stop()
        if not reply.get("ok"):
            raise candidate_failure(reply, "timing failed")
        timing = reply.get("timing") if isinstance(reply.get("timing"), dict) else {}
        malformed = malformed_timing(timing, settings)
        if malformed:
            raise CheckFailed(malformed)
        timing = dict(timing)
        self.triton_launches += timing.pop("triton_launches", 0)
        reps = len(timing.get("samples_ms") or [])
        # calls timed under the profiler and then re-timed without it (timing.profiler_slowed) were
        # announced too; their times are not in samples_ms
        discarded = discarded_calls(timing, settings)
        if reps == 0 or seen != probe_calls + reps + discarded or timing.get("probe_calls", 0) != probe_calls:
            # every timed call must be announced as it is issued (that is when the checked ones are chosen)
            raise CheckFailed(f"the timing reported {timing.get('probe_calls', 0)} probe and {reps + discarded} timed "
                              f"calls but announced {seen}: the timing loop was replaced or bypassed")
        checked = []
        if not self.is_reference:
            missing = sorted(set(sample.calls) - set(kept))
            if missing:
                raise CheckFailed(f"timed call {missing[0]}: its outputs were asked for and not returned")
            for j, inputs in self.replay(base, names, seeds, sorted(sample.calls), n_sets, workload, fresh_seeds):
                entry, blobs_j = kept.pop(j)
                label = "the profiled probe call (call 0)" if j < probe_calls else f"timed call {j}"
                if entry.get("facts", {}).get("error"):
                    raise CheckFailed(f"{label}: {entry['facts']['error']}")
                got = self.received(entry.get("outputs", []), blobs_j, entry.get("facts", {}), label)
                expected = self.run_reference(self.fresh(inputs))
                got, expected = self.canonical(got, inputs), self.canonical(expected, inputs)
                self.compare(got, expected, f"{label} of {probe_calls + reps + discarded} "
                                            "(results must be right on every call, not only when checked)")
                checked.append(j)
                del expected, got
        timing.update({"input_bytes": set_bytes, "checked_calls": checked, "trusted_wall_ms": round(wall_ms, 3),
                       "perturbed_inputs": names, "fresh_inputs": fresh_seeds is not None,
                       **{k: None if v is None else round(v, 3) for k, v in other_cpu.items()}, **settled})
        del base
        gc.collect()
        if not self.interpreter:
            torch.cuda.empty_cache()
        return timing

    def batch_open(self, proc: CandidateProcess, base: dict, names: list, calls: int,
                   null: list | None = None) -> None:
        """Start a trusted batch in ``proc`` (batch.py): the inputs go over, then ``ready``."""
        metas, blobs = self.wire.pack(base)
        proc.send({"op": "batch", "inputs": metas, "perturb": names, "calls": calls, "null": null,
                   "returned": self.returned, "mutated": self.mutated}, blobs)
        self.batch_expect(proc.receive(limit=1 << 20)[0], "ready")

    @staticmethod
    def batch_expect(reply: dict, op: str) -> None:
        if reply.get("op") == op:
            return
        if reply.get("ok") is False:
            raise candidate_failure(reply, "failed", prefix="trusted batch: ")
        raise CheckFailed(f"trusted batch: the candidate answered {str(reply.get('op'))[:40]!r} where {op!r} was "
                          "due: the batch loop was replaced")

    def batch_call(self, proc: CandidateProcess, j: int, seed: int, out_limit: int) -> tuple[float, dict, list, dict]:
        """Call ``j`` of an open batch: its round trip on this process's clock, from sending the seed
        to holding a private copy of the call's outputs; returns (seconds, reply, output bytes,
        phases). The phases split the round trip on this clock (``send``: writing the seed;
        ``wait``: until the reply can be read, the candidate's part, which starts inside ``send``
        when this process loses its core right after the write; ``read``: taking the reply and
        copying its outputs out; ``send_wait``: the two together) and add the candidate's own report
        of its part (``cand_call``, ``cand_sync``, ``cand_pack`` and their sum ``cand_total``:
        diagnosis only, the candidate's process says it)."""
        started = time.perf_counter()
        proc.send({"seed": seed})
        sent = time.perf_counter()
        self.wire.wait_readable(proc.reply_r, self.wire.spin_s(self.interpreter))
        select.select([proc.reply_r], [], [])
        ready = time.perf_counter()
        reply, out = proc.receive(limit=out_limit)
        ended = time.perf_counter()
        self.batch_expect(reply, "outputs")
        if reply.get("call") != j:
            raise CheckFailed(f"trusted batch: call {j}'s outputs were due, not {str(reply)[:80]}: the batch loop "
                              "was replaced")
        # send_wait and cand_total per call: the medians of the parts do not add up (a call whose
        # time fell in its send and another whose fell in its wait), the median of the sums does
        phases = {"send": sent - started, "wait": ready - sent, "read": ended - ready, "send_wait": ready - started}
        told = reply.get("phases_us")
        if isinstance(told, list) and len(told) == 3 and all(type(v) in (int, float) and math.isfinite(v) for v in told):
            phases.update({f"cand_{k}": v / 1e6 for k, v in zip(("call", "sync", "pack"), told)})
            phases["cand_total"] = sum(told) / 1e6
        return ended - started, reply, out, phases

    def batch_close(self, proc: CandidateProcess) -> None:
        """The end of ``proc``'s batch (its loop's final answer)."""
        reply, _ = proc.receive(limit=1 << 20)
        if not reply.get("ok"):
            self.batch_expect(reply, "ok")

    def null_outputs(self, workload: dict, base: dict) -> list[dict]:
        """What the pricing process returns (shapes and dtypes of the returned outputs): by the
        signature, or from one reference call where a shape depends on the data."""
        try:
            return [{"dtype": str(dtype).replace("torch.", ""), "shape": [int(d) for d in shape]}
                    for dtype, shape in self.returned_specs(workload)]
        except Exception:  # a shape the signature cannot state ahead
            expected = self.run_reference(self.fresh(base))
            return [self.wire.describe(expected[n]) for n in self.returned]

    def batch(self, workload: dict) -> dict:
        """The trusted batch (batch.py): the solution's calls, each timed on this process's clock
        from its seed's sending until this process holds a copy of its outputs; ``batch_checked``
        of them, chosen in secret beforehand, compared with the reference. As many calls go to a
        process holding no solution, which prices the loop's own work, the transfer and the round
        trip. The two processes' calls are shuffled together, and the process not being timed is
        stopped (freeze.py): work the solution leaves running cannot pick which calls it slows,
        and its threads are stopped during the pricing calls. Each side is priced by the low
        quantile of its warm calls (those right after one of its own)."""
        import statistics

        from d2k.execution import batch
        from d2k.execution.freeze import Freezer

        settings = self.job.get("timing", {})
        base = self.inputs(workload, int(workload.get("seed", 0)) * 1_000_003)
        # the batch draws no fresh inputs, so it perturbs the inputs a fresh draw replaces in the
        # timing loop (UNPERTURBED_WHEN_FRESH): its calls must differ too, at the price of a margin
        # a rotation may lose on its few checked calls
        names = self.wire.perturbable(base, self.fixed)
        out_limit = self.reply_bytes(workload, base, calls=1)
        budget = float(settings.get("batch_bytes") or (1e9 if self.interpreter else 4e9))
        n = int(min(int(settings.get("batch_calls") or (60 if self.interpreter else 50)),
                    max(4, budget // max(out_limit // 2, 1))))
        seeds = [self.rng.getrandbits(62) for _ in range(n)]
        null_seeds = [self.rng.getrandbits(62) for _ in range(n)]
        # which calls are compared: drawn now, known to this process only
        checked = sorted(self.rng.sample(range(n), min(n, max(1, int(settings.get("batch_checked", 3))))))
        result = {"calls": n, "checked_calls": checked, "price_quantile": batch.PRICE_QUANTILE, "perturbed_inputs": names,
                  # on a GPU a round trip holds the call's host work, which the device-side figure
                  # leaves out by design, and a synchronisation: the flag leaves this much room
                  # there (batch.py, "On a GPU"; BATCH_ALLOWANCE_GPU_MS)
                  "allowance_ms": 0.0 if self.interpreter else float(settings.get("batch_allowance_ms",
                                                                                  batch.BATCH_ALLOWANCE_GPU_MS))}

        def lost_null(exc: BaseException) -> None:  # the pricing process is the harness's own
            result["null_error"] = f"{type(exc).__name__}: {exc}"[:300]
            self.null_process(drop=True)

        # every call's outputs must have the task's dtypes and shapes, checked or not (a solution
        # answered unchecked calls with one-element tensors: session 21's batch red team)
        null_specs = self.null_outputs(workload, base)
        specs = {name: (d.get("dtype"), d.get("shape")) for name, d in zip(self.returned, null_specs)}
        self.batch_open(self.candidate, base, names, n)
        null = None
        try:
            null = self.null_process()
            self.batch_open(null, base, names, n, null=null_specs)
        except (CandidateFailed, CheckFailed, OSError) as exc:
            lost_null(exc)
            null = None
        freezers = {"s": Freezer(self.candidate.proc.pid, cgroup=self.candidate.cgroup)}
        if null is not None:
            freezers["n"] = Freezer(null.proc.pid, cgroup=null.cgroup)
        seconds, null_seconds, got = [], [], {}
        # the two processes' calls ("s" the solution's, "n" the pricing process's) in a random order
        # the candidate cannot predict; a call that follows one of its own process's is "warm" (its
        # caches hold its own work, as in a round of its own), one that follows the other's pays
        # for what that one evicted
        slots = ["s"] * n + (["n"] * n if null is not None else [])
        self.rng.shuffle(slots)
        order = []
        warm: dict[str, list[tuple[float, int]]] = {"s": [], "n": []}  # each side's warm calls: (seconds, call)
        alone = {"s": 0, "n": 0}  # calls timed while the other process's tree was stopped
        warm_phases: dict[str, list[dict]] = {"s": [], "n": []}  # where each warm round trip's time went
        try:
            try:
                for slot in slots:
                    if slot == "n" and null is None:
                        continue
                    other = "n" if slot == "s" else "s"
                    freezers[slot].resume()
                    stopped = other in freezers and freezers[other].stop()
                    if slot == "s":
                        j = len(seconds)
                        t, reply, out, phases = self.batch_call(self.candidate, j, seeds[j], out_limit)
                        seconds.append(t)
                        for meta in reply.get("outputs", []):
                            want = specs.get(meta.get("name"))
                            if want is not None and (meta.get("dtype"), meta.get("shape")) != want:
                                raise CheckFailed(f"trusted batch call {j}: output {meta.get('name')} is "
                                                  f"{meta.get('dtype')} {meta.get('shape')}, not {want[0]} {want[1]}")
                        # every call's outputs kept as received (the byte budget sized the batch for
                        # that) and unpacked after the batch: the calls that set the price are only
                        # known then, and a checked call must take the trusted side no longer than
                        # another (a longer pause would tell the candidate its other calls go unchecked)
                        got[j] = (reply.get("outputs", []), out)
                        del reply, out
                    else:
                        try:
                            t, _, _, phases = self.batch_call(null, len(null_seconds), null_seeds[len(null_seconds)],
                                                              out_limit)
                        except (CandidateFailed, CheckFailed, OSError) as exc:
                            freezers.pop("n").resume()
                            lost_null(exc)
                            null = None
                            continue
                        null_seconds.append(t)
                    # alone only if the other tree was stopped before the call and still is after
                    # it (the kernel resumes an orphaned process group; a walk can be outrun)
                    alone[slot] += bool(stopped and freezers[other].still_stopped())
                    if order and order[-1] == slot:
                        warm[slot].append((t, len(seconds if slot == "s" else null_seconds) - 1))
                        warm_phases[slot].append(phases)
                    order.append(slot)
            finally:
                for freezer in freezers.values():
                    freezer.resume()
            self.batch_close(self.candidate)
        except BaseException as exc:
            if null is not None:  # its batch is left open: its protocol state is unknown
                self.null_process(drop=True)
            if isinstance(exc, CheckFailed):
                # so is the solution's: it waits for a seed, and would read the next workload's
                # command as one (the batch's shape check fails mid-batch)
                exc.restart = True
            raise
        if null is not None:
            try:
                self.batch_close(null)
            except (CandidateFailed, CheckFailed, OSError) as exc:
                lost_null(exc)
                null = None
        # Also compared: the calls that set the solution's price (those at or below its low quantile).
        # A solution that told warm calls from cold ones by its own clock and faked a few warm ones
        # moved the price, and went unseen unless one of three random calls was a fake (session 21's
        # batch red team); now a fake that sets the price is checked.
        def priced_from(all_calls: list, warm_calls: list) -> list[tuple[float, int]]:
            # the warm calls where there are enough of them (about half the calls are)
            return warm_calls if len(warm_calls) >= WARM_CALLS_MIN else [(t, j) for j, t in enumerate(all_calls)]

        price_calls = batch.price_setters(priced_from(seconds, warm["s"]))
        result["price_calls_checked"] = sorted(price_calls - set(checked))
        for j, inputs in self.replay(base, names, seeds, sorted(set(checked) | price_calls), 1):
            received = self.received(*got.pop(j), {}, f"trusted batch call {j}")
            expected = self.run_reference(self.fresh(inputs))
            outputs, expected = self.canonical(received, inputs), self.canonical(expected, inputs)
            self.compare(outputs, expected, f"trusted batch call {j} of {n} (results must be right on every call)")
            del expected, outputs
        del got

        def price_ms(all_calls: list, warm_calls: list) -> float:
            return round(batch.low_quantile([t for t, _ in priced_from(all_calls, warm_calls)]) * 1e3, 4)

        result.update({"per_call_ms": price_ms(seconds, warm["s"]),
                       "median_ms": round(statistics.median(seconds) * 1e3, 4),
                       "warm_calls": {"solution": len(warm["s"]), "null": len(warm["n"])},
                       "calls_alone": {"solution": alone["s"], "null": alone["n"]},
                       "freezer": freezers["s"].kind,
                       "order": "".join(order), "samples_ms": [round(t * 1e3, 4) for t in seconds],
                       # medians over each side's warm calls: which part of the round trip the two
                       # processes' prices differ in (diagnosis; nothing is flagged on it)
                       "phases_ms": {side: {k: round(statistics.median(p[k] for p in calls) * 1e3, 4)
                                            for k in calls[0] if all(k in p for p in calls)}
                                     for side, calls in (("solution", warm_phases["s"]), ("null", warm_phases["n"]))
                                     if calls}})
        if null is not None and len(null_seconds) == n:
            result["null_per_call_ms"] = price_ms(null_seconds, warm["n"])
            result["null_median_ms"] = round(statistics.median(null_seconds) * 1e3, 4)
            result["null_samples_ms"] = [round(t * 1e3, 4) for t in null_seconds]
        return result

    def evaluate(self, workload: dict) -> dict:
        record = {"workload": workload["id"], "status": "passed", "reason": None}
        self.triton_launches = 0
        # where an evaluation's wall time goes: checking, timing, and of each the seconds spent writing
        # to the candidate's pipe (inputs and decisions; a write blocks until the candidate reads)
        self.candidate.wire_s = 0.0
        self.candidate.wire_bytes = {"arena": 0, "pipe": 0}
        started = time.perf_counter()
        if self.job.get("check", True) and not self.is_reference:
            record["correctness"] = self.check(workload)
        checked = time.perf_counter()
        wire_check = self.candidate.wire_s
        if self.job.get("time", True):
            record["timing"] = self.time(workload)
            record["timing"]["phases_s"] = {
                "check": round(checked - started, 4), "check_sends": round(wire_check, 4),
                "time": round(time.perf_counter() - checked, 4),
                "time_sends": round(self.candidate.wire_s - wire_check, 4)}
            # tensor bytes that crossed the boundary, by way (shared-memory arena or pipe)
            record["timing"]["wire_bytes"] = dict(self.candidate.wire_bytes)
            # what the job asked for, set here on the trusted side (the store's skip test reads it)
            record["timing"]["device_span_requested"] = bool(self.job.get("timing", {}).get("device_span"))
            if self.job.get("timing", {}).get("trusted_batch") and not self.is_reference:
                record["timing"]["trusted_batch"] = self.batch(workload)
        record["own_kernels"] = self.own_kernels(record.get("timing") or {})
        return record

    def own_kernels(self, timing: dict) -> bool | None:
        """Did the solution launch a kernel of its own (not a library's)? None for baselines."""
        if self.job["solution"]["kind"] in ("reference", "compiled"):
            return None
        names = list((timing.get("profile") or {}).get("kernel_names") or []) + list(timing.get("span_kernel_names") or [])
        if any(not any(m in name for m in LIBRARY_KERNEL_MARKERS) for name in names):
            return True
        if names and (timing.get("profile") or {}).get("available") and \
                all(any(m in n for m in STRONG_KERNEL_MARKERS) for n in names):
            # every kernel the profiler saw is a library's beyond doubt: the launch counter, which
            # lives in the candidate's process where one line can raise it, does not overrule that
            return False
        return bool(self.triton_launches)


def _read_key() -> bytes:
    key = sys.stdin.buffer.read(64)
    return key if len(key) >= 16 else b""


def run_evaluate(job: dict, events: Events, job_dir: Path) -> int:
    index = 0
    candidate = None

    def spawn_candidate():
        nonlocal index
        events.emit("loading", durable=True)
        proc = CandidateProcess(job, job_dir, index)
        index += 1
        events.emit("sandbox", durable=True, **proc.meta)
        return proc

    # The first candidate process boots (its own torch import) while this one imports torch and
    # the reference: the two start-ups overlap instead of adding up.
    booting = spawn_candidate()
    import torch

    interpreter = job["backend"] == "interpreter"
    fatal = None
    if not interpreter and not torch.cuda.is_available():
        fatal = {"reason": "backend cuda requested but torch sees no CUDA device"}
    else:
        try:
            reference_module = load_module(job["task"]["reference_path"], f"d2k_reference_{job['task']['id']}")
        except Exception as exc:
            fatal = {"reason": f"reference failed to import: {type(exc).__name__}: {exc}", "traceback": _short_traceback()}
    if fatal:
        booting.close()
        events.emit("fatal", durable=True, **fatal)
        return 2

    def start_candidate():
        nonlocal booting
        proc, booting = booting or spawn_candidate(), None
        try:
            proc.request(load_request(job, proc.solution_path))
        except CandidateFailed as exc:
            proc.close()
            raise load_failure(exc, proc.meta) from None
        events.emit("loaded", durable=True)
        return proc

    null = []  # the trusted batch's pricing process, started when a batch first needs it

    def null_process(drop: bool = False) -> CandidateProcess | None:
        """The pricing process, started on first use; ``drop``: close it (after a failure, its
        protocol state is unknown), so the next use starts a fresh one."""
        if drop:
            while null:
                null.pop().close()
            return None
        if not null:
            from d2k.execution import null_solution

            proc = CandidateProcess(job, job_dir, "null", source=null_solution.__file__)
            proc.request({"op": "load", "path": proc.solution_path, "entry_point": "run", "kind": "file",
                          "backend": job["backend"],
                          "memory_fraction": job.get("sandbox", {}).get("gpu_memory_fraction")})
            null.append(proc)
        return null[0]

    try:
        candidate = start_candidate()
    except CandidateFailed as exc:
        events.emit("fatal", status=exc.status, reason=exc.reason, traceback=exc.traceback, durable=True)
        return 2
    for workload in job["workloads"]:
        events.emit("start", workload=workload["id"], durable=True)
        t0 = time.perf_counter()
        restart = False
        try:
            if candidate is None:
                candidate = start_candidate()
            record = Checker(job, reference_module, candidate, null_process).evaluate(workload)
        except CheckFailed as exc:
            record = {"workload": workload["id"], "status": "failed", "reason": str(exc)}
            restart = getattr(exc, "restart", False)
        except CandidateFailed as exc:
            record = {"workload": workload["id"], "status": exc.status, "reason": exc.reason, "traceback": exc.traceback}
            restart = True
        except BaseException as exc:  # the trusted side's own failure (e.g. the reference ran out of memory)
            name = type(exc).__name__
            reason = (f"out of memory: {str(exc).splitlines()[0][:300]}" if name == "OutOfMemoryError"
                      else f"{name}: {str(exc)[:500]}")
            record = {"workload": workload["id"], "status": "error", "reason": reason, "traceback": _short_traceback()}
            restart = True
        if candidate is not None and candidate.output.total > 0:
            record["candidate_output_bytes"] = candidate.output.total
            # what it printed, the end of it: every H200 evaluation of 2026-12-05 printed 265 bytes
            # that the record could not show
            record["candidate_output_tail"] = candidate.output.last_chars()
        record["seconds"] = round(time.perf_counter() - t0, 3)
        events.emit("result", durable=True, **record)
        if restart and candidate is not None:
            # a raise may leave the candidate's CUDA context poisoned: the next workload gets a fresh one
            candidate.close()
            candidate = None
        gc.collect()
        if not interpreter:
            torch.cuda.empty_cache()
    for proc in [candidate, *null]:
        if proc is not None:
            proc.close()
    events.emit("done", durable=True)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m d2k.execution.worker JOB.json", file=sys.stderr)
        return 2
    from d2k.execution.sandbox import undumpable

    undumpable()
    key = _read_key()
    with open(argv[0], encoding="utf-8") as fh:
        job = json.load(fh)
    if job["backend"] == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"
    events = Events(job["events_path"], key)
    kind = job.get("kind", "evaluate")
    if kind == "environment":
        from d2k.execution.envinfo import collect

        events.emit("env", durable=True, **collect(job["backend"]))
        events.emit("done", durable=True)
        return 0
    if kind == "calibrate":
        from d2k.execution.calibrate import calibrate

        events.emit("calibration", durable=True, **calibrate(job.get("timing")))
        events.emit("done", durable=True)
        return 0
    return run_evaluate(job, events, Path(argv[0]).resolve().parent)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: skip interpreter teardown, which a broken CUDA context can hang
    os._exit(code)
