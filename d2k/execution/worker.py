"""The GPU worker: evaluates one solution on a list of workloads, in its own process.

    python -m d2k.execution.worker JOB.json

The job (plain JSON, written by ``d2k.job_payload``) names the solution, the task's signature and
tolerances, the workloads and the timing settings. The worker appends one JSON event per line to
``job["events_path"]``: ``env``, then per workload ``start`` and ``result``, then ``done``. The
parent process watches that file, enforces timeouts, restarts the worker after a crash, and computes
every reported statistic from the raw samples. Imports: the standard library, torch, triton, numpy.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import sys
import time
import traceback

from d2k.execution.compare import Mismatch, compare_tensor

os.environ.setdefault("PYTHONHASHSEED", "0")


class Events:
    def __init__(self, path: str):
        self.fh = open(path, "a", encoding="utf-8")

    def emit(self, event: str, durable: bool = False, **fields) -> None:
        fields = {"event": event, "time": time.time(), **fields}
        self.fh.write(json.dumps(fields, default=str) + "\n")
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


def _short_traceback(limit: int = 2000) -> str:
    return traceback.format_exc()[-limit:]


class Evaluator:
    """Correctness and timing of one callable against the task's reference."""

    def __init__(self, job: dict, reference_module, candidate, guard, timer):
        import torch

        self.torch = torch
        self.job = job
        self.task = job["task"]
        self.signature = self.task["signature"]
        self.interpreter = job["backend"] == "interpreter"
        self.device = "cpu" if self.interpreter else "cuda"
        self.reference_module = reference_module
        self.reference = reference_module.reference
        self.candidate = candidate
        self.guard = guard
        self.timer = timer
        self.is_reference = job["solution"]["kind"] == "reference"
        self.returned = [o["name"] for o in self.signature["outputs"] if not o.get("inplace")]
        self.mutated = [o["name"] for o in self.signature["outputs"] if o.get("inplace")]

    # -- helpers -------------------------------------------------------------------------------
    def sync(self):
        if not self.interpreter:
            self.guard.synchronize()

    def inputs(self, workload: dict, seed: int) -> dict:
        from d2k.execution.inputs import build_inputs

        return build_inputs(self.signature, workload, seed, self.device, self.interpreter, self.reference_module)

    def fresh(self, inputs: dict) -> dict:
        """Arguments for one call: inputs the op mutates are private copies."""
        return {k: (v.clone() if k in self.mutated else v) for k, v in inputs.items()}

    def call(self, fn, args: dict, who: str) -> dict:
        """Call ``fn`` and collect its outputs by name (cloned, so later calls cannot change them)."""
        torch = self.torch
        result = fn(**args)
        self.sync()
        self.guard.check()
        outputs = {}
        if self.returned:
            values = result
            if len(self.returned) == 1:
                if isinstance(result, (tuple, list)) and len(result) == 1:
                    values = result[0]
                values = [values]
            elif not isinstance(result, (tuple, list)) or len(result) != len(self.returned):
                got = type(result).__name__ if not isinstance(result, (tuple, list)) else f"{len(result)} values"
                raise OutputError(f"{who} must return {len(self.returned)} outputs ({', '.join(self.returned)}), got {got}")
            for name, value in zip(self.returned, values):
                if not isinstance(value, torch.Tensor):
                    raise OutputError(f"{who}: output {name} is {type(value).__name__}, not a tensor")
                outputs[name] = value.detach().clone()
        for name in self.mutated:
            outputs[name] = args[name].detach().clone()
        return outputs

    def canonical(self, outputs: dict, inputs: dict) -> dict:
        """Outputs in the task's canonical form (e.g. order-free results sorted), if it defines one."""
        hook = getattr(self.reference_module, "canonicalize", None)
        return dict(hook(dict(outputs), inputs)) if hook is not None else outputs

    # -- the phases ----------------------------------------------------------------------------
    def check(self, workload: dict) -> dict:
        torch = self.torch
        trials = []
        for trial in range(int(self.task.get("trials", 3))):
            seed = int(workload.get("seed", 0)) * 1_000_003 + trial
            inputs = self.inputs(workload, seed)
            snapshot = {k: v.clone() for k, v in inputs.items() if isinstance(v, torch.Tensor) and k not in self.mutated}
            first = self.call(self.candidate, self.fresh(inputs), "the solution")
            for name, before in snapshot.items():
                if not torch.equal(inputs[name], before):
                    raise CheckFailed(f"trial {trial}: the solution modified input {name}, which the op must not write")
            expected = self.call(self.reference, self.fresh(inputs), "the reference")
            second = self.call(self.candidate, self.fresh(inputs), "the solution")
            first, expected, second = (self.canonical(o, inputs) for o in (first, expected, second))
            stats = {}
            for name, ref in expected.items():
                tol = self.task["tolerance"][name]
                for label, outputs in (("first call", first), ("second call", second)):
                    try:
                        stats[name] = compare_tensor(name, outputs[name], ref, tol)
                    except Mismatch as exc:
                        raise CheckFailed(f"trial {trial} ({label}): {exc}") from None
            trials.append({"seed": seed, "outputs": stats})
            del inputs, snapshot, first, second, expected
        return {"trials": trials}

    def time(self, workload: dict) -> tuple[dict, list]:
        from d2k.execution.inputs import clone_inputs, tensor_bytes

        settings = self.job.get("timing", {})
        base = self.inputs(workload, int(workload.get("seed", 0)) * 1_000_003)
        set_bytes = max(tensor_bytes(base), 1)
        n_sets = int(min(8, max(2, float(settings.get("rotate_bytes", 2e9)) // set_bytes)))
        sets = [clone_inputs(base) for _ in range(n_sets)]
        fn = self.candidate
        mutated = self.mutated

        def restore(i):
            for name in mutated:
                sets[i][name].copy_(base[name])

        def call(i):
            fn(**sets[i])

        timing = self.timer.measure(call, n_sets, restore, probe=not self.interpreter)
        timing["input_bytes"] = set_bytes
        return timing, sets

    def cache_probe(self, workload: dict, sets: list) -> None:
        """Reuse a timed buffer with new values: a solution that caches results by pointer fails here."""
        torch = self.torch
        fresh = self.inputs(workload, int(workload.get("seed", 0)) * 1_000_003 + 104_729)
        reused = sets[0]
        for name, value in fresh.items():
            if isinstance(value, torch.Tensor):
                reused[name].copy_(value)
        got = self.canonical(self.call(self.candidate, reused, "the solution"), fresh)
        expected = self.canonical(self.call(self.reference, self.fresh(fresh), "the reference"), fresh)
        for name, ref in expected.items():
            try:
                compare_tensor(name, got[name], ref, self.task["tolerance"][name])
            except Mismatch as exc:
                raise CheckFailed(
                    "wrong result when a timed input buffer was reused with new values "
                    f"(results cached across calls?): {exc}"
                ) from None

    def evaluate(self, workload: dict) -> dict:
        record = {"workload": workload["id"], "status": "passed", "reason": None}
        if self.job.get("check", True) and not self.is_reference:
            record["correctness"] = self.check(workload)
        if self.job.get("time", True):
            timing, sets = self.time(workload)
            record["timing"] = timing
            if self.job.get("check", True) and not self.is_reference:
                self.cache_probe(workload, sets)
            del sets
        return record


class CheckFailed(Exception):
    """The solution computed something other than the reference."""


class OutputError(CheckFailed):
    """The solution returned the wrong number or kind of outputs."""


def _healthy(torch) -> bool:
    try:
        x = torch.zeros(16, device="cuda")
        x.add_(1)
        torch.cuda.synchronize()
        return float(x.sum().item()) == 16.0
    except Exception:
        return False


def run_evaluate(job: dict, events: Events) -> int:
    # Capture the timer before any candidate code is imported.
    import torch

    from d2k.execution.timing import CudaTimer, TimerGuard, WallTimer

    guard = TimerGuard()
    interpreter = job["backend"] == "interpreter"
    if not interpreter and not torch.cuda.is_available():
        events.emit("fatal", reason="backend cuda requested but torch sees no CUDA device", durable=True)
        return 2
    try:
        reference_module = load_module(job["task"]["reference_path"], f"d2k_reference_{job['task']['id']}")
    except Exception as exc:
        events.emit("fatal", reason=f"reference failed to import: {type(exc).__name__}: {exc}", traceback=_short_traceback(), durable=True)
        return 2
    solution = job["solution"]
    try:
        if solution["kind"] == "reference":
            candidate = reference_module.reference
        elif solution["kind"] == "compiled":
            # a baseline: the reference through torch.compile (default mode), checked like a solution
            candidate = torch.compile(reference_module.reference)
        else:
            module = load_module(solution["path"], "d2k_solution")
            candidate = getattr(module, solution.get("entry_point", "run"), None)
            if not callable(candidate):
                raise AttributeError(f"{os.path.basename(solution['path'])} defines no function {solution.get('entry_point', 'run')}()")
        guard.check()
    except BaseException as exc:  # SystemExit from a module body counts too
        events.emit("fatal", reason=f"solution failed to import: {type(exc).__name__}: {exc}", traceback=_short_traceback(), durable=True)
        return 2
    timer = WallTimer(guard, job.get("timing", {})) if interpreter else CudaTimer("cuda", guard, job.get("timing", {}))
    evaluator = Evaluator(job, reference_module, candidate, guard, timer)
    for workload in job["workloads"]:
        events.emit("start", workload=workload["id"], durable=True)
        t0 = time.perf_counter()
        try:
            record = evaluator.evaluate(workload)
        except CheckFailed as exc:
            record = {"workload": workload["id"], "status": "failed", "reason": str(exc)}
        except BaseException as exc:
            name = type(exc).__name__
            status = "error"
            if name == "OutOfMemoryError":
                reason = f"out of memory: {str(exc).splitlines()[0][:300]}"
            elif name == "TimerTampered":
                status, reason = "failed", str(exc)
            else:
                reason = f"{name}: {str(exc)[:500]}"
            record = {"workload": workload["id"], "status": status, "reason": reason, "traceback": _short_traceback()}
        record["seconds"] = round(time.perf_counter() - t0, 3)
        events.emit("result", durable=True, **record)
        gc.collect()
        if not interpreter:
            if not _healthy(torch):
                events.emit("unhealthy", reason="the CUDA context is unusable after this workload", durable=True)
                return 3
            torch.cuda.empty_cache()
    events.emit("done", durable=True)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m d2k.execution.worker JOB.json", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        job = json.load(fh)
    if job["backend"] == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"
    events = Events(job["events_path"])
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
    return run_evaluate(job, events)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: skip interpreter teardown, which a broken CUDA context can hang
    os._exit(code)
