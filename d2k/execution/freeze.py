"""Stopping a candidate's whole process tree while the trusted batch times the other process.

The trusted batch (batch.py) prices the loop's own work in a second candidate process. Work a
solution leaves running between its calls (a thread, a forked child) would slow that pricing and
shrink the difference the batch bounds, so while one process's call is timed the other process's
tree is stopped.

Where the machine lets the trusted side make cgroups, each candidate starts inside a freezer cgroup
of its own (``Cgroup``; v1's freezer hierarchy or v2's ``cgroup.freeze``), entered before its
program runs, so everything it ever forks is inside; freezing the cgroup stops every task in it
at once, and a frozen task ignores SIGCONT. Elsewhere the tree is stopped with SIGSTOP, walked
through ``/proc`` (a ``setsid`` daemon is still a descendant: inside the candidate's pid namespace
it is reparented to the namespace's first process). The walk can be outrun: a red team (session
21) kept burners alive through it by having each fork a successor and exit every 3 ms behind 300
idle children (a pid gone at its turn was dropped, its successor arrived after the list was
read), and had the kernel resume a stopped process group by orphaning it (SIGKILL from a timer
armed before the stop). So after each timed call the other tree is looked at again
(``still_stopped``): a call during which it was not wholly stopped does not count as alone, and
the trusted side flags a batch whose pricing calls were not all alone.

What neither stops: device work already queued on the GPU (a kernel left running on a side stream
keeps running; batch.py synchronises the device at the end of each call for that reason).

Linux only (``/proc``); elsewhere, or where the trusted side may not signal the candidate, nothing
is stopped and the batch records that it was not.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")


def stat_fields(path: Path) -> list[str] | None:
    """The fields of a ``/proc/PID/stat`` (or ``/proc/PID/task/TID/stat``) after the command name,
    which may hold spaces and parentheses: ``[0]`` is the state, ``[1]`` the parent, ``[13]`` and
    ``[14]`` the reaped children's user and system ticks; None when the process is gone."""
    try:
        fields = path.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields if len(fields) > 14 else None


def _children_lists() -> bool:
    """Does this kernel keep ``/proc/PID/task/TID/children`` (CONFIG_PROC_CHILDREN)?"""
    return (PROC / "self" / "task" / str(os.getpid()) / "children").exists()


def _parents() -> dict[int, list[int]]:
    """Every process's children, from each one's parent in ``/proc/PID/stat`` (the slower way)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir(PROC):
        if not entry.isdigit():
            continue
        fields = stat_fields(PROC / entry / "stat")
        if fields is None:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
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


def thread_states(pid: int, skip_tid: int | None = None) -> list[str] | None:
    """The state letter of each live thread of ``pid`` (but ``skip_tid``); None when ``pid`` is gone.
    A thread that ends while they are read is left out."""
    tasks = PROC / str(pid) / "task"
    try:
        tids = os.listdir(tasks)
    except OSError:
        return None
    states = (stat_fields(tasks / tid / "stat") for tid in tids if tid != str(skip_tid))
    return [fields[0] for fields in states if fields is not None]


def _stopped(pid: int) -> bool:
    """Is every thread of ``pid`` stopped (or gone)?"""
    return all(state in ("T", "t", "Z", "X") for state in thread_states(pid) or [])


CGROUP_ROOT = Path("/sys/fs/cgroup")


class Cgroup:
    """A freezer cgroup of one candidate's own: made before it starts, entered by its first process
    before its program runs (``enter``, from the spawn's preexec), frozen and thawed as a whole."""

    def __init__(self, path: Path, version: int):
        self.path, self.version = path, version

    @classmethod
    def create(cls, name: str) -> Cgroup | None:
        """A new cgroup named ``name``, or None where this machine does not let us make one."""
        candidates = []
        if (CGROUP_ROOT / "freezer" / "cgroup.procs").exists():
            candidates.append((CGROUP_ROOT / "freezer", 1))
        if (CGROUP_ROOT / "cgroup.controllers").exists():
            try:
                own = next(line.split("::", 1)[1].strip() for line in Path("/proc/self/cgroup").read_text().splitlines()
                           if line.startswith("0::"))
                candidates.append((CGROUP_ROOT / own.lstrip("/"), 2))
            except (OSError, StopIteration):
                pass
        for base, version in candidates:
            path = base / f"d2k-{name}"
            try:
                path.mkdir()
            except OSError:
                continue
            if (path / ("freezer.state" if version == 1 else "cgroup.freeze")).exists():
                return cls(path, version)
            try:
                path.rmdir()
            except OSError:
                pass
        return None

    def enter(self) -> None:
        """Move the calling process in (its children then start inside)."""
        with open(self.path / "cgroup.procs", "w") as fh:
            fh.write(str(os.getpid()))

    def _write(self, name: str, value: str) -> None:
        with open(self.path / name, "w") as fh:
            fh.write(value)

    def frozen(self) -> bool:
        try:
            if self.version == 1:
                return (self.path / "freezer.state").read_text().strip() == "FROZEN"
            return "frozen 1" in (self.path / "cgroup.events").read_text()
        except OSError:
            return False

    def freeze(self, settle_s: float) -> bool:
        """Freeze every task inside; True once the kernel says all are frozen (a task in an
        uninterruptible wait can hold v1's freezer in FREEZING past ``settle_s``: then False)."""
        try:
            self._write("freezer.state" if self.version == 1 else "cgroup.freeze", "FROZEN" if self.version == 1 else "1")
        except OSError:
            return False
        deadline = time.perf_counter() + settle_s
        while not self.frozen():
            if time.perf_counter() >= deadline:
                return False
            time.sleep(0)
        return True

    def thaw(self) -> None:
        try:
            self._write("freezer.state" if self.version == 1 else "cgroup.freeze", "THAWED" if self.version == 1 else "0")
        except OSError:
            pass

    def members(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def remove(self) -> None:
        """Kill whatever is left inside and remove the cgroup."""
        self.thaw()
        for _ in range(50):
            left = self.members()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)
        try:
            self.path.rmdir()
        except OSError:
            pass


class Freezer:
    """Stops and resumes one process tree (through its cgroup where it has one); ``works`` is False
    once a signal was refused (then ``stop`` does nothing)."""

    def __init__(self, root: int, settle_s: float = 0.5, cgroup: Cgroup | None = None):
        self.root = root
        self.settle_s = settle_s
        self.cgroup = cgroup
        self.works = PROC.is_dir()
        self.frozen: list[int] = []
        self.settled = False  # did every stopped process reach the stopped state in time

    @property
    def kind(self) -> str:
        """How the tree is stopped: ``cgroup``, ``sigstop``, or ``none`` (no /proc, or a signal was refused)."""
        return "cgroup" if self.cgroup is not None else "sigstop" if self.works else "none"

    def still_stopped(self) -> bool:
        """Is the tree, looked at afresh, wholly stopped now? (After a timed call of the other
        process: the kernel resumes an orphaned process group, and a walk can be outrun.)"""
        if self.cgroup is not None:
            return self.cgroup.frozen()
        if not self.works or not self.frozen:
            return False
        known = set(self.frozen)
        return all(pid in known and _stopped(pid) for pid in descendants(self.root)) and \
            all(_stopped(pid) for pid in self.frozen)

    def stop(self) -> bool:
        """Stop the tree; True when every process found is stopped. Repeats the walk until it finds
        nothing new, so a child forked during the walk is stopped too."""
        if self.cgroup is not None:
            if not self.settled:
                self.frozen = [self.root]  # a freeze was asked for: resume thaws, whatever came of it
                self.settled = self.cgroup.freeze(self.settle_s)
            return self.settled
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
        if self.cgroup is not None:
            if self.frozen:
                self.cgroup.thaw()
                self.frozen, self.settled = [], False
            return
        while self.frozen:
            try:
                os.kill(self.frozen.pop(), signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass
