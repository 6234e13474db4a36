"""Stopping a candidate's whole process tree while the trusted batch times the other process.

The trusted batch (batch.py) prices the loop's own work in a second candidate process. Work a
solution leaves running between its calls (a thread, a forked child) would slow that pricing and
shrink the difference the batch bounds, so while one process's call is timed the other process's
tree is stopped with SIGSTOP, threads and descendants (a ``setsid`` daemon is still a descendant:
inside the candidate's pid namespace it is reparented to the namespace's first process).

What this cannot stop: device work already queued on the GPU (a kernel left running on a side
stream keeps running). The batch alternates the two processes in a random order per call, so such
work falls on the solution's own calls as often as on the pricing ones.

Linux only (``/proc``); elsewhere, or where the trusted side may not signal the candidate, nothing
is stopped and the batch records that it was not.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")


def _children_lists() -> bool:
    """Does this kernel keep ``/proc/PID/task/TID/children`` (CONFIG_PROC_CHILDREN)?"""
    return (PROC / "self" / "task" / str(os.getpid()) / "children").exists()


def _parents() -> dict[int, list[int]]:
    """Every process's children, from each one's parent in ``/proc/PID/stat`` (the slower way)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir(PROC):
        if not entry.isdigit():
            continue
        try:
            # the parent follows the state, after the command name (which may hold parentheses)
            ppid = int((PROC / entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(root: int) -> list[int]:
    """``root`` and every process below it, parents before children (from each thread's
    ``children`` list in ``/proc``, or every process's parent where the kernel keeps no such
    list); empty when ``root`` is gone."""
    by_parent = None if _children_lists() else _parents()
    found, queue = [], [root]
    while queue:
        pid = queue.pop(0)
        tasks = PROC / str(pid) / "task"
        try:
            tids = os.listdir(tasks)
        except OSError:
            continue
        found.append(pid)
        if by_parent is not None:
            queue += by_parent.get(pid, [])
            continue
        for tid in tids:
            try:
                queue += [int(c) for c in (tasks / tid / "children").read_text().split()]
            except (OSError, ValueError):
                pass
    return found


def _stopped(pid: int) -> bool:
    """Is every thread of ``pid`` stopped (or gone)?"""
    tasks = PROC / str(pid) / "task"
    try:
        tids = os.listdir(tasks)
    except OSError:
        return True
    for tid in tids:
        try:
            # the state follows the command name, which may hold spaces and parentheses
            state = (tasks / tid / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("T", "t", "Z", "X"):
            return False
    return True


class Freezer:
    """Stops and resumes one process tree; ``works`` is False once a signal was refused (then
    ``stop`` does nothing)."""

    def __init__(self, root: int, settle_s: float = 0.5):
        self.root = root
        self.settle_s = settle_s
        self.works = PROC.is_dir()
        self.frozen: list[int] = []
        self.settled = False  # did every stopped process reach the stopped state in time

    def stop(self) -> bool:
        """Stop the tree; True when every process found is stopped. Repeats the walk until it finds
        nothing new, so a child forked during the walk is stopped too."""
        if not self.works:
            return False
        if self.frozen:
            # already stopped, and a stopped tree cannot fork: walking it again (thousands of
            # threads a solution may start) only cost time next to the other process's call
            return self.settled
        done: set[int] = set()
        for _ in range(8):
            new = [p for p in descendants(self.root) if p not in done]
            if not new:
                break
            for pid in new:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    continue
                except PermissionError:
                    self.works = False
                    self.resume()
                    return False
                done.add(pid)
                self.frozen.append(pid)
        # SIGSTOP lands when each thread is next scheduled; wait (briefly) until it has
        deadline = time.perf_counter() + self.settle_s
        while True:
            self.settled = all(_stopped(p) for p in self.frozen)
            if self.settled or time.perf_counter() >= deadline:
                return self.settled
            time.sleep(0)

    def resume(self) -> None:
        """Resume what ``stop`` stopped (children after their parents were stopped: all at once)."""
        while self.frozen:
            try:
                os.kill(self.frozen.pop(), signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass
