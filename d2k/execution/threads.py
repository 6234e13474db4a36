"""Python threads a solution leaves running between its calls (candidate side).

The timing loop runs in the candidate's process, so a thread the solution starts can reach the
loop's own objects through the main thread's frames (``sys._current_frames()``) and rewrite them
while the harness times the calls: the list of per-call times, the events, the input sets. No
function is replaced, so the timer guard sees nothing (``tests/adversarial/cpu/thread_rewrite.py``
passed with a time four times too short before this check). A solution has no reason to run its
own code outside its calls: every result must be complete when ``run`` returns.

``ThreadWatch`` is created before the solution is imported. ``check()`` (after every call, timed
or not, and before every reply) fails the evaluation when a thread started since then is running
the solution's code: a frame whose globals are the solution module's, or whose code comes from
its file. Other threads started since (a library's idle pool, say) are only listed, so the trusted
side can flag the record. Like the guard this is Python-level: code exec'd from a string into
globals of its own, under another file name, is listed, not stopped (SECURITY.md, "What is not
stopped").
"""

from __future__ import annotations

import os
import sys
import threading

# at module level: an import statement in a check reads sys.modules, where a solution's proxy
# module ran its code inside the check (sysmodules_timing_threadwatch_rewrite.py, 2026-12-05)
from d2k.execution.timing import TimerTampered

# A file is known by its device and inode, read with os.stat's C function captured before any
# solution: nothing Python runs on the way, so nothing the solution rebinds. posixpath.realpath
# (used before 2026-12-05's session 20) looked os.lstat up by name at every call, and a solution
# that replaced os.lstat ran its own code inside this check, from every reply, after the keep
# decision: it fixed the kept copies of calls that had returned garbage (fixup_kept_lstat.py).
# (No cache: its entries could be rewritten by the solution; a stat of a cached dentry costs a
# microsecond or two, outside every timed window.)
_stat = os.stat
_str = str.__str__  # an exact str from a str subclass, without running the subclass's methods


def file_id(name) -> tuple[int, int] | None:
    """(device, inode) of the file ``name`` names (links followed); None if there is none."""
    try:
        st = _stat(_str(name) if type(name) is not str else name)
    except (OSError, ValueError, TypeError):
        return None
    return (st.st_dev, st.st_ino)


def _is_solution_frame(frame, solution_globals: dict | None, solution_file: tuple | None) -> bool:
    code = frame.f_code
    if solution_globals is not None and frame.f_globals is solution_globals:
        return True
    # code exec'd from a string is not refused by its name: the standard library does that too
    # (dataclasses' generated __init__, namedtuple), in any thread
    # the name's type first: a str subclass's __bool__ (``co_filename or ""``) ran inside this
    # check, after the window, from a code object the solution compiled under such a name
    # (thread_filename_bool_defer.py, 2026-12-05, session 21's red team)
    # (file_id takes an exact str of it without running the subclass's code; an empty name stats to None)
    return solution_file is not None and file_id(code.co_filename) == solution_file


class ThreadWatch:
    """Threads started after construction (i.e. by the solution or what it imported)."""

    def __init__(self):
        self.main = threading.get_ident()
        # a frozenset, frozen by the guard: a thread that added its own ident to a set here was
        # never looked at (read in the code by session 21's red team)
        self.before = frozenset(sys._current_frames())
        # (globals,): a dict attribute would be frozen by its entries, which the solution changes
        self.solution_scope: tuple = (None,)
        self.solution_file: tuple | None = None  # its (device, inode)

    def arm(self, solution_globals: dict | None, solution_file: str) -> None:
        self.solution_scope = (solution_globals,)
        self.solution_file = file_id(solution_file)

    def solution_frame(self, frame):
        """The first frame of the solution's code on the stack from ``frame`` up, or None."""
        while frame is not None:
            if _is_solution_frame(frame, self.solution_scope[0], self.solution_file):
                return frame
            frame = frame.f_back
        return None

    def refuse_solution_caller(self, frame) -> None:
        """Raise ``TimerTampered`` if the solution's code is on this thread's stack from ``frame`` up."""
        found = self.solution_frame(frame)
        if found is not None:
            raise TimerTampered(f"the solution's code ({found.f_code.co_name}, line {found.f_lineno}) sent one "
                                "of the harness's messages: only the harness speaks for the candidate")

    def check(self) -> list[str]:
        """Raise ``TimerTampered`` if a new thread runs the solution's code; otherwise return a
        short description of each other new thread still alive (at most five)."""
        others = []
        # The main thread's entry is this very frame: held in a local, it would make a cycle (the
        # frame refers to itself) that keeps this frame, its caller's and their locals (a timed
        # call's outputs and copies) alive until a collection, and automatic collection is off in a
        # candidate (hooks.py). On the H200 that kept two outputs per timed call and ran
        # silu_and_mul's largest workload out of memory (2026-12-05). So the main thread's frame is
        # never bound, and no frame outlives the loop.
        frames = {ident: frame for ident, frame in sys._current_frames().items()
                  if ident != self.main and ident not in self.before}
        try:
            for frame in frames.values():
                found = self.solution_frame(frame)
                if found is not None:
                    raise TimerTampered(
                        f"a thread the solution started was running its code ({found.f_code.co_name}, line "
                        f"{found.f_lineno}) outside its calls: results must be complete when run returns, "
                        "and the timing loop's objects are reachable from such a thread")
                stack = []
                while frame is not None and len(stack) < 4:
                    stack.append(frame.f_code.co_name)
                    frame = frame.f_back
                others.append(" < ".join(stack))
        finally:
            frames = frame = found = None
        return others[:5]
