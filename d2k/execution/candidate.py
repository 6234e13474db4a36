"""The candidate process: imports one solution and runs it on command. It holds nothing trusted.

    python -m d2k.execution.candidate CMD_FD REPLY_FD [ARENA_FD]

It is started by the trusted worker (``d2k.execution.worker``) inside the sandbox
(``d2k.execution.sandbox``) and talks to it only through two pipes and, for large tensors, a
shared-memory arena the worker made (``d2k.execution.wire``). It
never sees the reference, the tolerances, the comparison, the store, the run folder or the content
paths: it receives input tensors as bytes, returns output tensors as bytes, and times calls when
asked. Whatever it reports is a claim: outputs are compared on the trusted side, and timings are
cross-checked there (see ``d2k.execution.worker``).

Commands: ``load`` (import the solution), ``call`` (one call on given inputs, outputs returned),
``time`` (the timing loop; after every timed call the trusted side says whether to keep that
call's outputs for checking, so which calls are checked is not known when they run), ``exit``.
"""

from __future__ import annotations

import builtins
import gc
import importlib.util
import json
import json.decoder
import json.encoder
import json.scanner
import json.tool  # noqa: F401 - before the guard freezes the json package (below)
import os
import struct
import sys
import tempfile
import time
import traceback

LAUNCHES = {"triton": 0}
# the builtins the harness's code between calls looks up by name (a replaced len or int would run
# the solution's code there, outside the timed window)
BUILTINS = ("len", "int", "float", "bool", "str", "min", "max", "sum", "abs", "round", "range", "enumerate", "zip",
            "sorted", "tuple", "list", "dict", "set", "isinstance", "type", "getattr", "hasattr", "callable",
            "iter", "next", "any", "all", "vars", "id", "repr", "print", "super", "object")


def _count_triton_launches() -> None:
    """Count launches of Triton kernels (compiled or interpreted), to flag solutions that launch
    none of their own. Installed before the solution is imported."""
    try:
        from triton.runtime import jit as triton_jit
    except Exception:
        return
    classes = [getattr(triton_jit, "JITFunction", None)]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except Exception:
        pass
    for cls in filter(None, classes):
        original = getattr(cls, "run", None)
        if original is None:
            continue

        def run(self, *args, __original=original, **kwargs):
            LAUNCHES["triton"] += 1
            return __original(self, *args, **kwargs)

        cls.run = run


# torch, bound by load() (before the solution is imported; the guard protects the name): an
# `import torch` in a command reads sys.modules, where a solution's proxy module ran its code after
# the keep decision (sysmodules_torch_fixup_kept.py, 2026-12-05)
_torch = None


def _file_id(fd: int) -> tuple:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _load(cmd: dict):
    """The solution's callable and module, as the worker's ``load`` command (worker.load_request)
    describes them: its file, entry point and kind, and for a compiled one whether its compile has
    dynamic shapes."""
    # every field read before the module's code runs
    path, entry_point, kind = cmd["path"], cmd.get("entry_point", "run"), cmd.get("kind", "file")
    dynamic = True if cmd.get("compile_dynamic") else None
    spec = importlib.util.spec_from_file_location("d2k_solution", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {os.path.basename(path)}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["d2k_solution"] = module
    spec.loader.exec_module(module)
    if kind == "compiled":
        import torch

        # torch.compile of the reference, or of a task's eager stand-in baseline (its run()); with
        # dynamic shapes where the task asks (a static compile of a host loop over data-dependent
        # counts recompiles on every new routing)
        fn = module.reference if hasattr(module, "reference") else module.run
        return torch.compile(fn, dynamic=dynamic), module
    if kind == "reference":
        return module.reference, module  # the reference timed as a baseline (it is checked against nothing)
    fn = getattr(module, entry_point, None)
    if not callable(fn):
        raise AttributeError(f"{os.path.basename(path)} defines no function {entry_point}()")
    return fn, module


class Candidate:
    def __init__(self, cmd_fd: int, reply_fd: int, arena_fd: int | None = None):
        from d2k.execution import wire

        self.wire = wire
        self.cmd_fd, self.reply_fd = cmd_fd, reply_fd
        self.arena = wire.Arena(arena_fd) if arena_fd is not None else None
        self.fn = None
        self.device = "cpu"
        self.interpreter = True
        self.guard = None
        self.threads = None
        self.equal = None
        self.timers = None
        self.reply_stat = None  # (device, inode) of the reply pipe, taken before the solution is imported
        self.cmd_stat = None  # and of the command pipe
        self.last_inputs = None  # (descriptions, bytes) of the last call's inputs

    def reply(self, header: dict, blobs=None) -> None:
        if self.reply_stat is not None and (_file_id(self.reply_fd) != self.reply_stat
                                            or _file_id(self.cmd_fd) != self.cmd_stat):
            # a pipe of the solution's dup2'd over the reply fd relayed (and rewrote) every message;
            # one over the command fd read each seed first and computed the call ahead of it
            # (cmd_relay_precompute.py, session 21's fourth red team). Every read of a command in the
            # timing loop follows a reply, so this is checked before each.
            from d2k.execution.timing import TimerTampered

            raise TimerTampered("the solution replaced the command or reply pipe")
        if self.threads is not None:
            # only the harness speaks for the candidate: a solution that never returned from a call
            # and sent the timing protocol's messages itself (announcing calls it never ran, with
            # times of its choosing) passed before this check (takeover_protocol.py)
            self.threads.refuse_solution_caller(sys._getframe(1))
        self.wire.send(self.reply_fd, header, blobs, arena=self.arena)

    def sync(self) -> None:
        if not self.interpreter:
            self.guard.synchronize()

    # -- commands ---------------------------------------------------------------------------------
    def load(self, cmd: dict) -> dict:
        global _torch
        import torch

        _torch = torch

        from d2k.execution import hooks, threads
        from d2k.execution.hooks import HookWatch
        from d2k.execution.threads import ThreadWatch
        from d2k.execution.timing import TimerGuard

        self.interpreter = cmd["backend"] == "interpreter"
        self.device = "cpu" if self.interpreter else "cuda"
        if not self.interpreter and not torch.cuda.is_available():
            from d2k.execution.sandbox import NO_CUDA_INSIDE

            return {"ok": False, "reason": NO_CUDA_INSIDE}
        if not self.interpreter and cmd.get("memory_fraction"):
            torch.cuda.set_per_process_memory_fraction(float(cmd["memory_fraction"]))
        from d2k.execution import batch, timing, wire

        self.guard = TimerGuard()  # the timing primitives, captured before any candidate code runs
        # the timer classes, taken now: an import inside time() read sys.modules, where a solution
        # put a timing module of its own (sysmodules_timing_swap.py)
        self.timers = (timing.CudaTimer, timing.WallTimer, timing.TimerTampered)
        self.batch_module = batch  # the trusted batch's loop, and how a call's outputs are named
        self.reply_stat = _file_id(self.reply_fd)
        self.cmd_stat = _file_id(self.cmd_fd)
        self.equal = torch.equal  # for the unchanged-inputs fact, captured before the solution can patch it
        # no profile, trace, audit or monitoring hook and no Python signal handler may run the
        # solution's code inside the harness's (hooks.py); the guard keeps the refusals in place
        add_audit_hook = sys.addaudithook  # before the lock replaces it (the harness's own veto, below)
        hook_watch = HookWatch()
        for owner, attr in [*hook_watch.lock(), *((hooks, name) for name in hooks.CAPTURED),
                            (HookWatch, "check"), (timing, "_dict_get")]:
            self.guard.protect(f"{getattr(owner, '__name__', owner)}.{attr}", owner, attr)
        self.guard.hooks = hook_watch
        self.guard.freeze(hook_watch)  # its record of the handlers and callbacks there were
        for owner, attrs in ((timing.CudaTimer, ("measure", "flush_l2", "recording", "annotate")),
                             (timing.WallTimer, ("measure",)),
                             (timing, ("device_spans", "spans_from_events", "trace_events", "profile_streams", "l2_bytes")),
                             (wire, ("perturb", "pack", "unpack", "send", "recv", "byte_view", "spin_s",
                                     "_write_all", "_read_exact", "wait_readable", "blob_size", "describe",
                                     "ARENA_MIN_BYTES", "MAX_HEADER", "WireError",
                                     "_TENSOR", "_TORCH", "_GENERATOR", "_SEED", "_ITEM", "_NO_TORCH_FUNCTION",
                                     "_BYTE_VIEW")),
                             # what reply() calls by name from this module, after the keep decision
                             (sys.modules[__name__], ("_file_id", "_torch", "LAUNCHES")),
                             (builtins, BUILTINS), (gc, ("enable", "disable", "collect")),
                             (torch._C, ("DisableTorchFunction",)),
                             (Candidate, ("outputs", "time", "call", "reply", "serve", "batch")),
                             (ThreadWatch, ("check", "refuse_solution_caller", "solution_frame")),
                             (threads, ("_is_solution_frame", "file_id", "_stat", "_str")),
                             (batch, ("named_outputs",)),
                             # reply() reads its caller's frame with sys._getframe, after the keep
                             # decision: a replaced one ran the solution's code there
                             (sys, ("_current_frames", "_getframe")),
                             # what the replies and commands are encoded, decoded and written with: a
                             # patched json.dumps could rewrite the timing on its way out, a patched
                             # json.loads the timing settings on their way in
                             (json, ("dumps", "loads", "load")),
                             (json.JSONEncoder, ("encode", "iterencode", "default")),
                             (json.JSONDecoder, ("decode", "raw_decode")),
                             (json.encoder, ("c_make_encoder", "_make_iterencode", "encode_basestring",
                                             "encode_basestring_ascii")),
                             (json.decoder, ("scanstring",)), (json.scanner, ("make_scanner",)),
                             (os, ("write", "read", "readv", "close", "unlink")), (struct, ("pack", "unpack")),
                             (tempfile, ("mkstemp",)), (torch.profiler.profile, ("export_chrome_trace",)),
                             # what the timer looks up by name at run time: the profiler (the span),
                             # the hold and the flush (these through the C types, see TimerGuard)
                             (torch.profiler, ("profile", "record_function", "ProfilerActivity")),
                             (torch.cuda, ("_sleep", "current_stream", "Stream")),
                             (torch, ("sum", "profiler", "cuda", "_C", "Tensor")),
                             # what Event.record looks up by name (the current stream) on its way
                             (torch._C, ("_cuda_getCurrentStream", "_cuda_sleep", "_cuda_synchronize",
                                         "_CudaStreamBase", "_CudaEventBase")),
                             # the tensor methods that copy and serialise outputs on this side
                             # what every attribute read on a tensor goes through (a __getattribute__
                             # added to torch.Tensor fixed kept copies in outputs(): session 21)
                             (torch.Tensor, ("__getattribute__", "__getattr__", "__setattr__", "__delattr__")),
                             (torch.Tensor, ("clone", "detach", "contiguous", "reshape", "view", "cpu", "numpy",
                                             "copy_", "zero_", "sum", "__torch_function__", "is_contiguous",
                                             "untyped_storage", "numel", "data_ptr", "device", "dtype", "shape",
                                             "element_size", "dim", "size", "stride", "__dict__")),
                             (os, ("fstat",))):
            for attr in attrs:
                self.guard.protect(f"{getattr(owner, '__name__', owner)}.{attr}", owner, attr)
        self.guard.watch_modules()
        # the guard's own captured primitives and its table of originals, as they are now
        self.guard.freeze(self.guard, mutable=("frozen",))
        # the harness modules' globals whole: a name rebound in one (wire's json or bytes) ran the
        # solution's code in the reply or the perturbation (wire_json_binding.py, round 3)
        for module in (wire, timing, hooks, threads, batch):
            self.guard.freeze(module)
        # json's own modules whole too: json.dumps reads JSONEncoder from its globals at every call
        # and json.loads detect_encoding, so a rebound name there ran the solution's code as the
        # harness encoded a reply or decoded the keep decision (json_module_encoder_binding.py,
        # json_detect_encoding_defer.py, session 21's red team). json.tool is imported with this module: an
        # honest solution importing it would otherwise add a key to the package.
        for module in (json, json.encoder, json.decoder, json.scanner):
            self.guard.freeze(module)
        # the harness's classes whole: a __getattribute__ or a property added to one beats every
        # name the guard keeps on its instances (Candidate.__getattribute__ did a call's work in
        # after(); TimerGuard.perf_counter as a property scaled the clock; TimerGuard.check = no-op
        # switched every check off: session 21's fourth red team)
        for klass in (Candidate, timing.TimerGuard, timing.WallTimer, timing.CudaTimer, timing.TimerTampered,
                      ThreadWatch, HookWatch, wire.Arena, wire.WireError):
            self.guard.freeze(klass)
        self.threads = ThreadWatch()  # which threads exist before the solution's code runs
        self.threads.arm(None, cmd["path"])  # its file now; its module's globals once imported
        # the interpreter's own veto on hook installers, whatever route the solution takes to them
        add_audit_hook(hooks.audit_veto(self.threads.solution_frame))
        _count_triton_launches()
        # this object too, before the import: its guard, its outputs method or its fds replaced on
        # the instance had the timer read a scaled clock and the copies fixed after the keep
        # decision (round 3 of the 2026-12-05 red team: candidate_guard_shadow.py, ..._outputs_...)
        self.guard.freeze(self, mutable=("last_inputs", "fn"))
        self.fn, module = _load(cmd)
        # the module object itself, not sys.modules' entry (a decoy there hid the solution's threads)
        self.threads.arm(module.__dict__, cmd["path"])
        self.guard.freeze(self.threads)  # which code counts as the solution's, and which threads were there
        # no automatic collection from here on: a __del__ of the solution's garbage (or a gc
        # callback) would run inside the harness's code, outside the timed window; the harness
        # collects after each reply (gc.enable does nothing for the solution: hooks.py)
        gc.disable()
        self.guard.check()
        self.threads.check()
        return {"ok": True}

    def outputs(self, result, args: dict, returned: list[str], mutated: list[str]) -> tuple[list, list, dict]:
        """Outputs by name (returned ones, then inputs the op writes), with what the honest harness
        can tell about them; the trusted side trusts only the bytes."""
        torch = _torch

        values = self.batch_module.named_outputs(result, args, returned, mutated)
        if isinstance(values, str):
            return [], [], {"error": values}
        facts = {"contiguous": {k: bool(v.is_contiguous()) for k, v in values.items()},
                 "device": {k: str(v.device) for k, v in values.items()}}
        input_ptrs = {t.untyped_storage().data_ptr() for t in args.values() if isinstance(t, torch.Tensor) and t.numel()}
        facts["aliases_input"] = [k for k in returned
                                  if values[k].numel() and values[k].untyped_storage().data_ptr() in input_ptrs]
        metas, blobs = self.wire.pack(values)
        return metas, blobs, facts

    def signature_mismatch(self, names: list[str]) -> str | None:
        """Why ``run`` cannot take the task's arguments, in words, or None if it can."""
        import inspect

        try:
            params = inspect.signature(self.fn).parameters
        except (TypeError, ValueError):
            return None
        if any(p.kind == p.VAR_KEYWORD for p in params.values()):
            return None
        accepted = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        unknown = [n for n in names if n not in accepted]
        missing = [n for n, p in params.items()
                   if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n not in names]
        if not unknown and not missing:
            return None
        return (f"run() does not take the task's arguments: the task passes {', '.join(names)}; "
                f"run() expects {', '.join(accepted) or 'none'}"
                + (f" (it has no parameter for {', '.join(unknown)})" if unknown else "")
                + (f" (it needs {', '.join(missing)}, which the task does not pass)" if missing else ""))

    def call(self, cmd: dict, blobs: list) -> tuple[dict, list]:
        torch = _torch

        if cmd.get("reuse"):
            # the same inputs as the last call, rebuilt from the bytes kept then (a second call on
            # one input set: no need to send large tensors twice)
            if self.last_inputs is None:
                return {"ok": False, "kind": "output", "reason": "no earlier inputs to reuse"}, []
            metas, blobs = self.last_inputs
        else:
            metas = cmd["inputs"]
            self.last_inputs = (metas, blobs)
        inputs = self.wire.unpack(metas, blobs, self.device)
        mutated = cmd.get("mutated", [])
        # private copies, on the device, of the bytes of every input the op must not write
        before = {k: self.wire.byte_view(v).clone() for k, v in inputs.items()
                  if isinstance(v, torch.Tensor) and k not in mutated}
        launches = LAUNCHES["triton"]
        try:
            result = self.fn(**inputs)
        except TypeError as exc:
            mismatch = self.signature_mismatch(list(inputs))
            if mismatch:
                return {"ok": False, "kind": "output", "reason": mismatch}, []
            raise exc
        self.sync()
        self.guard.check()
        self.threads.check()
        metas, out_blobs, facts = self.outputs(result, inputs, cmd.get("returned", []), mutated)
        if "error" in facts:
            return {"ok": False, "kind": "output", "reason": facts["error"]}, []
        facts["modified_inputs"] = [k for k, old in before.items() if not self.equal(old, self.wire.byte_view(inputs[k]))]
        facts["triton_launches"] = LAUNCHES["triton"] - launches
        return {"ok": True, "outputs": metas, "facts": facts}, out_blobs

    def time(self, cmd: dict, blobs: list) -> tuple[dict, list]:
        torch = _torch

        c_clone = torch._C.TensorBase.clone  # an immutable type's method: no solution can replace it
        # captured here, not looked up in after(): a replaced one ran the call's work there, after
        # the window (disable_torch_function_patch.py)
        no_torch_function = torch._C.DisableTorchFunction
        Tensor = torch.Tensor  # compared by identity in after()

        CudaTimer, WallTimer, TimerTampered = self.timers  # imported before the solution, not looked up now
        wire = self.wire
        self.last_inputs = None
        base = wire.unpack(cmd["inputs"], blobs, self.device)
        mutated = cmd.get("mutated", [])
        returned = cmd.get("returned", [])
        n_sets = int(cmd["n_sets"])
        # each timed call's perturbation seed arrives just before that call, on request: none is
        # known while warm-up or an earlier call runs, so no output can be computed ahead of its call
        names = list(cmd["perturb"])
        # with fresh inputs per call (wire.refill) the seed comes with a new draw of the whole set
        fresh_bytes = int(cmd.get("fresh_bytes") or 0)
        # each set's pristine values: perturbed before each timed call, copied into the working
        # tensors of inputs the op writes
        pristine = [{k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in base.items()} for _ in range(n_sets)]
        sets = [{k: (v.clone() if k in mutated else p[k]) for k, v in p.items()} for p in pristine]
        del base
        threads_alive: set[str] = set()

        def restore(i):
            for name in mutated:
                sets[i][name].copy_(pristine[i][name])

        def before(i, j):
            # nothing the solution left may run while its inputs are made final: no replaced name,
            # no hook, no thread running its code (they would compute the output here, unclocked)
            self.guard.check()
            if any(type(k) is not str for k in pristine[i]) or any(type(k) is not str for k in sets[i]):
                raise TimerTampered("the solution put a key of its own into the harness's input sets")
            for d in (pristine[i], sets[i]):
                for t in d.values():
                    kind = type(t)
                    if kind is torch.Tensor:
                        if t.__dict__:
                            # an object hung on an input runs its __del__ when the harness lets the
                            # sets go (input_attr_del_rewrite.py rewrote the timing reply so, round 3)
                            raise TimerTampered("the solution attached attributes to the harness's input tensors")
                    elif not (kind is int or kind is float or kind is bool or t is None):
                        # an input's class swapped for a subclass of the solution's ran its
                        # __torch_function__ inside the perturbation and computed the output there,
                        # before the clock (input_class_perturb_precompute.py, session 21's red team)
                        raise TimerTampered(f"the solution changed the type of an input to {kind.__name__}")
            self.reply({"op": "seed", "call": j})
            # a fresh draw is copied from the shared arena straight into the set's tensors (no
            # private host copy first: ~1 GB a call for the largest sets); nothing keeps a view
            answer, drawn = wire.recv(self.cmd_fd, fresh_bytes, spin_s=wire.spin_s(self.interpreter), arena=self.arena,
                                      arena_views=bool(fresh_bytes))
            if fresh_bytes:
                wire.refill(pristine[i], answer["fresh"], drawn)
            del drawn
            # a plain int, held in this frame only (a dict of seeds ran the __eq__ of keys a solution
            # put into it: seeds_key_eq.py)
            wire.perturb(pristine[i], names, int(answer["seed"]), j)
            restore(i)

        def call(i):
            return self.fn(**sets[i])

        def after(i, j, result):
            # First, before any of the harness's Python runs: nothing the solution replaced during
            # its call, even what would put itself back once it ran (a harness name rebound, a
            # proxy in sys.modules), may be reached from here, where the window is closed and the
            # copies and the keep decision are still to come (2026-12-05, session 20's red team)
            self.guard.check()
            # Every call's outputs are copied before the call is announced and before the trusted
            # side says whether it keeps them, so what is checked cannot depend on that decision.
            # The copies use the C method (TensorBase is immutable) with torch functions disabled:
            # nothing the solution patched or pushed can compute them.
            # Only exact types are read, and they are told by identity: the copy of a list subclass
            # ran the solution's __iter__ after the window closed, and its __getitem__ again after the
            # keep decision (a lazy list computed only the calls that were checked and returned zeros
            # from the others); ``type(result) in (...)`` ran the __eq__ of a metaclass of the
            # solution's, which did the call's work there (metaclass_eq_result_defer.py, session 21).
            kind = type(result)
            if not (result is None or kind is Tensor or kind is tuple or kind is list):
                raise TimerTampered(f"timed call {j} returned a {kind.__module__}.{kind.__qualname__}: "
                                    "a result must be exactly a torch.Tensor, a tuple or a list (a subclass runs its "
                                    "own code when the harness reads it)")
            with no_torch_function():
                copies = result
                if kind is Tensor:
                    copies = c_clone(result)
                elif result is not None:
                    copies = tuple(c_clone(r) if type(r) is Tensor else r for r in result)
                written = {name: c_clone(sets[i][name]) for name in mutated}
            threads_alive.update(self.threads.check())  # between calls: no solution code may be running
            self.reply({"op": "issued", "call": j})
            # on the GPU, wait hot: the next call must be issued as fast as the warm-up measured
            decision, _ = wire.recv(self.cmd_fd, 0, spin_s=wire.spin_s(self.interpreter))
            if decision.get("keep"):
                # a kept call's outputs leave the process now, before any more of the solution's code
                # runs: a copy held here until the end could be overwritten by a later call with the
                # right answer (fixup_kept.py returned garbage from its timed calls and passed so)
                metas, blobs_j, facts = self.outputs(copies, written, returned, mutated)
                self.reply({"op": "kept", "call": j, "outputs": metas, "facts": facts}, blobs_j)
                del blobs_j
            del copies, written, result
            # Automatic collection is off (a __del__ would run inside the harness's code), so garbage
            # in cycles, the solution's or a library's, would pile up over the whole loop: collected
            # here, where a __del__ it runs can do no harm to the figures. This call's kept outputs
            # have left the process (nothing it writes now is checked), and the next call's seed is
            # not known yet (before() asks for it), so nothing can be computed ahead of that call.
            gc.collect(1)

        settings = cmd.get("settings", {})
        timer = WallTimer(self.guard, settings) if self.interpreter else CudaTimer("cuda", self.guard, settings)
        self.guard.freeze(timer, mutable=("_recording",))  # its flush buffer, mode, hold, methods
        def launch_count() -> int:
            # the counter's value is the solution's to write (its launches raise it): an int of a
            # subclass of its own would run its __sub__ here, before the figures are snapshotted
            count = LAUNCHES["triton"]
            if type(count) is not int:
                raise TimerTampered("the solution replaced the harness's launch counter")
            return count

        launches = launch_count()
        timing = timer.measure(call, n_sets, restore, probe=not self.interpreter, before=before, after=after)
        timing["triton_launches"] = launch_count() - launches
        # the figures as measured, before the checks below run any Python: a name the solution had
        # replaced ran its code inside them and divided the samples in place
        # (signal_valid_signals_rewrite.py, gc_callbacks_len_rewrite.py, 2026-12-05)
        measured = json.dumps(timing, sort_keys=True)
        self.guard.check()
        self.guard.thaw(timer)
        threads_alive.update(self.threads.check())
        # Everything the solution could have hung a __del__ or a weakref callback on dies here, and is
        # collected, before the figures are compared with what was measured: the timer, the loop's
        # closures, the input sets. (A weakref callback on the timer, which died as this method
        # returned, rewrote the figures and the snapshot beside them: session 21's fourth red team.)
        timer = call = before = after = restore = launch_count = None  # noqa: F841
        sets.clear()
        pristine.clear()
        gc.collect()
        if not self.interpreter:
            torch.cuda.empty_cache()
        self.guard.check()
        if json.dumps(timing, sort_keys=True) != measured:
            raise TimerTampered("the timing changed while the harness checked it")
        if threads_alive:
            timing["threads_alive"] = sorted(threads_alive)[:5]  # started since the import, running no solution code
        snapshot = json.dumps(timing, sort_keys=True)
        return {"ok": True, "timing": timing, "timing_snapshot": snapshot}, []

    def batch(self, cmd: dict, blobs: list) -> tuple[dict, list]:
        """The trusted batch (batch.py): once the inputs are ready, each call on the seed the trusted
        side sends for it, its outputs sent back at once. With ``null`` (the trusted side's pricing
        process, which holds no solution) the calls return outputs of those shapes allocated once
        and compute nothing. Nothing here has to be honest: the trusted side keeps the clock and
        holds the outputs it checks before the next call starts."""
        torch = _torch

        wire, batch = self.wire, self.batch_module
        pristine = wire.unpack(cmd["inputs"], blobs, self.device)
        returned, mutated = cmd.get("returned", []), cmd.get("mutated", [])
        fn = self.fn
        if cmd.get("null") is not None:
            empty = tuple(torch.empty(tuple(m["shape"]), dtype=wire.DTYPES[m["dtype"]], device=self.device)
                          for m in cmd["null"])

            def fn(**_):
                return empty[0] if len(empty) == 1 else empty
        working = {k: (v.clone() if k in mutated else v) for k, v in pristine.items()}
        names = list(cmd["perturb"])
        self.reply({"op": "ready"})
        spin = wire.spin_s(self.interpreter)
        for j in range(int(cmd["calls"])):
            seed, _ = wire.recv(self.cmd_fd, 0, spin_s=spin)
            # as in the timing loop, nothing replaced may run as the inputs are made final: a
            # perturbation of the solution's, cheaper than the harness's or put off past calls it
            # faked, undercut the pricing process's share of the loop (session 21's batch red team)
            self.guard.check()
            clock = self.guard.perf_counter
            t0 = clock()
            values = batch.batch_call(fn, pristine, working, names, int(seed["seed"]), j, returned, mutated)
            t1 = clock()
            # the whole device, not the current stream: work the call left on a stream of its own is
            # in its round trip, and none of it is still running when the process is stopped for the
            # other side's calls (a kernel that never ends hangs the batch into its timeout)
            self.sync()
            t2 = clock()
            metas, out = wire.pack(values)
            # where this side's part of the round trip went (the call with its perturbation, the
            # synchronisation, the packing), for diagnosis only: the trusted side flags nothing on it
            phases = [round((t1 - t0) * 1e6, 1), round((t2 - t1) * 1e6, 1), round((clock() - t2) * 1e6, 1)]
            self.reply({"op": "outputs", "call": j, "outputs": metas, "phases_us": phases}, out)
            del values, out
        return {"ok": True}, []

    # -- the loop ---------------------------------------------------------------------------------
    def serve(self) -> int:
        wire = self.wire
        while True:
            try:
                cmd, blobs = wire.recv(self.cmd_fd, 1 << 40, arena=self.arena)
            except wire.WireError:
                return 0  # the trusted side went away
            op = cmd.get("op")
            if op == "exit":
                return 0
            t0 = time.perf_counter()
            try:
                if op == "load":
                    header, out = self.load(cmd), []
                elif op == "call":
                    header, out = self.call(cmd, blobs)
                elif op == "time":
                    header, out = self.time(cmd, blobs)
                elif op == "batch":
                    header, out = self.batch(cmd, blobs)
                else:
                    header, out = {"ok": False, "reason": f"unknown command {op!r}"}, []
            except BaseException as exc:  # noqa: BLE001 - everything the solution raises is reported
                name = type(exc).__name__
                kind = "oom" if name == "OutOfMemoryError" else "tampered" if name == "TimerTampered" else "raised"
                if op == "load" and isinstance(exc, ImportError) and cmd.get("kind") == "baseline":
                    kind = "missing_library"  # a baseline whose library is absent here is skipped
                header, out = {"ok": False, "kind": kind, "reason": f"{name}: {str(exc)[:500]}",
                               "traceback": traceback.format_exc()[-2000:]}, []
            header["seconds"] = round(time.perf_counter() - t0, 4)
            snapshot = header.pop("timing_snapshot", None)
            del blobs
            if self.guard is not None and header.get("ok", True):
                # the last look before anything leaves: what the solution ran since the op's own
                # checks (or in a thread) must not have replaced the code that encodes the reply
                try:
                    self.guard.check()
                    self.threads.check()
                    if snapshot is not None and json.dumps(header.get("timing"), sort_keys=True) != snapshot:
                        raise RuntimeError("the timing reply changed after the timing loop returned it")
                except Exception as exc:  # noqa: BLE001 - TimerTampered, or a guard the solution broke
                    header, out = {"ok": False, "kind": "tampered", "reason": f"TimerTampered: {exc}"[:500],
                                   "seconds": header["seconds"]}, []
            self.reply(header, out)
            del header, out
            # the collection the harness turned off runs here, once the reply is out (a __del__ it
            # runs cannot change what was sent; what it leaves behind meets the next op's checks):
            # the young generation after a call (cheap), everything after a timing or a load
            gc.collect(0 if op == "call" else 2)


def main(argv: list[str]) -> int:
    from d2k.execution.sandbox import die_with_parent

    # again, here: the kernel clears the parent-death signal when the credentials change, so the one
    # the sandbox set before dropping the user was gone, and a candidate whose worker was killed
    # (a timeout) lived on under init as uid 65534 (outlive_timeout.py; orphans were found)
    die_with_parent()
    if os.getppid() == 1:
        return 0  # the parent died before the signal was armed (outside a pid namespace)
    # torch's profiler warns on every profiled evaluation (the probe, the span) that it "clears
    # events at the end of each cycle": the harness's own noise, which filled each record's
    # candidate_output_tail on the GPU and hid what the solution printed
    import warnings
    warnings.filterwarnings("ignore", message="Warning: Profiler clears events", category=UserWarning)
    cmd_fd, reply_fd = int(argv[0]), int(argv[1])
    arena_fd = int(argv[2]) if len(argv) > 2 else None
    return Candidate(cmd_fd, reply_fd, arena_fd).serve()


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
