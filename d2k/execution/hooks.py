"""The ways a solution could run its own code between its calls without starting a thread
(candidate side): profile and trace functions, audit hooks, ``sys.monitoring`` callbacks, Python
signal handlers and garbage-collector callbacks.

Each fires inside the harness's own code: a profile function on every call the timing loop makes,
so it can do a call's work after the stop time is read, or the next call's work once ``perturb``
has made its inputs final and before the clock starts; a signal handler between any two bytecodes
(it rewrote the timing reply on its way out). Red-team files in ``tests/adversarial/cpu/`` passed
with times 8 to 190 times too short this way before this module (2026-12-05).

``lock()`` runs before the solution is imported: the functions that install such hooks are
replaced by ones that refuse (a signal may still be ignored or reset, not given to Python code),
and the garbage collector's callbacks and the signal handlers are recorded. ``HookWatch.check()``
refuses what is in place anyway. A check cannot catch a hook that removes itself when it sees the
check coming (a profile function sees every call), so refusing the installers is the defence and
the check the backstop. Behind the replaced functions, ``audit_veto`` is an audit hook the
candidate installs before the import: the interpreter calls it for ``sys.setprofile``,
``sys.settrace`` and ``sys.addaudithook`` events however they are reached (an ``_lsprof``
profiler, a ``sys`` rebuilt with ``_imp``), and it refuses them while the solution's code is on
the stack. Automatic collection is off once the solution is imported, so no ``__del__`` of its
garbage runs inside the harness's code. What stays open (``ctypes``, a hook installed from a C
callable the harness itself runs): SECURITY.md, "What is not stopped".
"""

from __future__ import annotations

import _signal
import gc
import signal
import sys
import threading

from d2k.execution.timing import TimerTampered

# what check() calls, captured before any solution is imported (the candidate's guard keeps these
# names as they are: a solution replaced sys.getprofile with ``lambda: None``)
# (signal.getsignal is Python that calls _signal.getsignal by name: the C one is captured)
_getprofile, _gettrace, _gc_enabled, _getsignal = sys.getprofile, sys.gettrace, gc.isenabled, _signal.getsignal
# signal.valid_signals and gc.callbacks were read by name in every check, and a solution's
# replacements ran its code there (signal_valid_signals_rewrite.py, gc_callbacks_len_rewrite.py,
# 2026-12-05): the C function and the collector's own list, captured
_valid_signals = _signal.valid_signals
_GC_CALLBACKS = gc.callbacks
CAPTURED = ("_getprofile", "_gettrace", "_gc_enabled", "_getsignal", "_valid_signals", "_GC_CALLBACKS")

# (module, name) of every function that installs code to run on the interpreter's events
INSTALLERS = (
    (sys, "setprofile"), (sys, "settrace"), (sys, "addaudithook"),
    # Python 3.12's C functions behind threading's *_all_threads (the Python wrappers call them by
    # name, so replacing the wrappers alone left them reachable)
    (sys, "_setprofileallthreads"), (sys, "_settraceallthreads"),
    (threading, "setprofile"), (threading, "settrace"),
    (threading, "setprofile_all_threads"), (threading, "settrace_all_threads"),
)
MONITORING_INSTALLERS = ("use_tool_id", "register_callback", "set_events", "set_local_events")
MONITORING_TOOLS = range(6)


def _not_available(name: str) -> TimerTampered:
    return TimerTampered(f"{name} is not available to a solution: code that runs on the interpreter's events "
                         "runs inside the harness's timing loop")


def _refusal(name: str):
    def refuse(*args, **kwargs):
        raise _not_available(name)
    refuse.__name__ = refuse.__qualname__ = name.rsplit(".", 1)[-1]
    return refuse


def addaudithook(hook) -> None:
    """``sys.addaudithook`` in a candidate: the hook is not added, quietly. Libraries add audit hooks
    at import (filelock does, and torch.compile, fla-core and gemlite import it): a refusal that
    failed the evaluation failed all three on the H200 (2026-12-05). Nothing is installed either
    way, so no code of the solution's runs on the interpreter's audit events; the harness's own
    hook (``audit_veto``) keeps the original, reached another way, from adding one."""
    return None


VETOED_EVENTS = ("sys.addaudithook", "sys.setprofile", "sys.settrace", "sys._setprofileallthreads",
                 "sys._settraceallthreads")
# refused whoever asks: nothing of the harness's or an honest library's needs them once the
# harness's hook is in place
VETOED_ALWAYS = ("sys.addaudithook", "sys._setprofileallthreads", "sys._settraceallthreads")


def audit_veto(solution_frame):
    """An audit hook that refuses the events installing hooks while the solution's code is on the
    stack (``solution_frame(frame)``: its first frame from there up, or None). The interpreter
    raises them however the hook is installed: ``_lsprof.Profiler.enable`` and an original
    ``sys.setprofile`` rebuilt with ``_imp`` went past the replaced functions
    (lsprof_timer_work_in_before.py, imp_restore_audit.py); an audit hook cannot be removed, and
    one raising on ``sys.addaudithook`` keeps any other from being added."""
    getframe = sys._getframe

    def veto(event, args):
        if event not in VETOED_EVENTS:
            return
        if event in VETOED_ALWAYS:
            # whoever asks (a thread running exec'd code under another file name had no solution
            # frame on its stack: thread_exec_audit_veto.py, thread_exec_audit_veto_cuda.py)
            raise TimerTampered(f"{event} is not available once the harness's own hook is in place")
        if solution_frame(getframe(1)) is not None:
            raise _not_available(event)
    return veto


def _no_op() -> None:
    """gc.enable in a candidate process: automatic collection stays off (see HookWatch.lock)."""


def _signal_setter(original):
    def set_signal(signalnum, handler):
        if callable(handler):
            raise TimerTampered("signal.signal with a Python handler is not available to a solution: the handler "
                                "would run inside the harness's code")
        return original(signalnum, handler)
    set_signal.__name__ = set_signal.__qualname__ = "signal"
    return set_signal


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


def _handlers() -> dict:
    found = {}
    for sig in _valid_signals():
        try:
            found[sig] = _getsignal(sig)
        except (OSError, ValueError):
            pass
    return found


class HookWatch:
    """What may run the solution's code on the interpreter's events; refuses the installers."""

    def __init__(self):
        self.gc_callbacks = tuple(_GC_CALLBACKS)
        self.handlers = _handlers()
        self.monitoring = getattr(sys, "monitoring", None)
        self.tools = {t: self.monitoring.get_tool(t) for t in MONITORING_TOOLS} if self.monitoring else {}

    def lock(self) -> list[tuple]:
        """Replace the installers (before the solution is imported); returns ``(owner, name)`` of each
        replaced one, for the guard to keep as they now are."""
        replaced = []
        for owner, name in INSTALLERS:
            if hasattr(owner, name):
                setattr(owner, name, addaudithook if (owner, name) == (sys, "addaudithook")
                        else _refusal(f"{owner.__name__}.{name}"))
                replaced.append((owner, name))
        if self.monitoring is not None:
            for name in MONITORING_INSTALLERS:
                if hasattr(self.monitoring, name):
                    setattr(self.monitoring, name, _refusal(f"sys.monitoring.{name}"))
                    replaced.append((self.monitoring, name))
        # both: signal.signal is Python that calls _signal.signal by name
        signal.signal = _signal_setter(signal.signal)
        _signal.signal = _signal_setter(_signal.signal)
        replaced += [(signal, "signal"), (_signal, "signal"), (_signal, "getsignal")]
        # the candidate turns automatic collection off once the solution is imported; the solution
        # may not turn it back on (quietly: a library that pairs disable and enable keeps working)
        gc.enable = _no_op
        replaced.append((gc, "enable"))
        return replaced

    def check(self) -> None:
        if _getprofile() is not None or _gettrace() is not None:
            raise TimerTampered("the solution installed a profile or trace function: it would run inside the "
                                "harness's timing loop")
        if getattr(threading, "_profile_hook", None) is not None or getattr(threading, "_trace_hook", None) is not None:
            raise TimerTampered("the solution installed a profile or trace function for new threads")
        if self.monitoring is not None and any(self.monitoring.get_tool(t) != name for t, name in self.tools.items()):
            raise TimerTampered("the solution registered a sys.monitoring tool")
        if gc.callbacks is not _GC_CALLBACKS:
            raise TimerTampered("the solution replaced gc.callbacks")
        if len(_GC_CALLBACKS) != len(self.gc_callbacks) or any(
                a is not b for a, b in zip(_GC_CALLBACKS, self.gc_callbacks)):
            raise TimerTampered("the solution added a garbage-collector callback")
        now = _handlers()
        changed = [s for s, h in now.items() if callable(h) and h is not self.handlers.get(s)]
        if changed:
            raise TimerTampered(f"the solution gave signal {_signal_name(changed[0])} a Python handler: it would run "
                                "inside the harness's code")
        if _gc_enabled():
            raise TimerTampered("the solution turned automatic garbage collection back on: a __del__ of its garbage "
                                "would run inside the harness's code")
