"""CPU time that a candidate's other processes spend while its calls are timed, read from /proc.

The clock that times a call runs in the candidate's main process. A process the solution forks can
do the call's work outside that clock. For example, it can write the output into shared memory
between the clock's stop and the harness's copy (``helper_process_race.py``, session 21's red team:
it passed at a third of the honest time). The guard, the thread watch and the hook watch look only
inside the main process, so they cannot see a helper process.

From the outside, the trusted side reads what each process of the candidate's tree other than the
main one ran on a CPU while the timing phase lasted. It reads the kernel's CPU clock of each
process, in ns, which counts every thread the process had, ended ones included (where that clock
cannot be read, the live threads' ``/proc/PID/task/TID/schedstat``). Children that exit and are
reaped within the tree are counted too, through their parent's ``cutime``/``cstime``, in clock
ticks. An honest solution
leaves nothing running: Triton's and the inductor's compiler processes have exited, or sit idle,
before timing starts. So a few ms of such CPU beside the timed calls' total means work done outside
them (``supervisor.timing_flags``).

The same goes for the main process's threads other than its first, read as the process's CPU
clock (every thread it ever had, ended ones included) less the first thread's run time. The
thread watch looks for them from inside, where a solution that blinds the guard's check blinds it
too (``guard_check_method_noop.py``). They are recorded under the interpreter only, where the
candidate computes on one thread (``OMP_NUM_THREADS=1``). On a GPU the driver's and the profiler's
threads run honestly beside the calls.

A library may leave a process of its own busy for a while after its first use: on a 16-core H100
an honest compiled reference's first workload read 4.2 s of its other processes' CPU against
0.5 s of timed calls, and its later workloads none (session 23): most likely the inductor's
compiler pool still starting its workers. So before the
phase begins the trusted side waits, up to a limit, until the tree is quiet (``settle()``). A
solution gains nothing from the wait: what its processes run during the phase still counts.

What this does not see: a helper that leaves the tree, which it can do only without the pid
namespace (a double fork is then reparented to the host's init).

Linux only; elsewhere ``stop()`` gives Nones and nothing is flagged.
"""

from __future__ import annotations

import os
import time

from d2k.execution.freeze import PROC, descendants, stat_fields, thread_states

_TICK_NS = 1e9 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def run_ns(pid: int) -> int | None:
    """The CPU time all of ``pid``'s threads have run, in ns; None when ``pid`` is gone."""
    tasks = PROC / str(pid) / "task"
    try:
        tids = os.listdir(tasks)
    except OSError:
        return None
    # a thread that ended between the listing and the read counts nothing
    return sum(thread_ns(pid, tid) or 0 for tid in tids)


def process_ns(pid: int) -> int | None:
    """The CPU time ``pid`` has run, every thread it ever had included (those that ended too), in
    ns, from the kernel's CPU clock of that process; the live threads' sum where that clock cannot
    be read; None when ``pid`` is gone."""
    try:
        # the clock id of another process's CPU clock (CPUCLOCK_SCHED of the whole thread group),
        # as clock_getcpuclockid() makes it
        return int(time.clock_gettime((~pid << 3) | 2) * 1e9)
    except (OSError, OverflowError, AttributeError):
        return run_ns(pid)


def thread_ns(pid: int, tid: int) -> int | None:
    """The CPU time one thread has run, in ns; None when it is gone."""
    try:
        return int((PROC / str(pid) / "task" / str(tid) / "schedstat").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None


def runnable(pid: int, skip_first_thread: bool = False) -> bool:
    """Is a thread of ``pid`` running or waiting for a CPU (state R)? A busy thread that a loaded
    machine starves runs little in a window, but it is never asleep. ``skip_first_thread``: the
    main thread is not asked about (the candidate's, which the caller is talking to)."""
    return "R" in (thread_states(pid, pid if skip_first_thread else None) or [])


def reaped_ns(pid: int) -> int | None:
    """The CPU time of ``pid``'s reaped children (``cutime + cstime``), in ns; None when gone."""
    fields = stat_fields(PROC / str(pid) / "stat")
    return None if fields is None else int((int(fields[13]) + int(fields[14])) * _TICK_NS)


class OtherProcessesCpu:
    """The CPU time that the processes of a candidate's tree other than its main process run
    between ``start()`` and ``stop()``, and the threads of the main process other than its first.

    ``root`` is the process d2k started. With the pid namespace it is ``unshare``, whose single
    child is the candidate (orphans in the namespace are reparented to that child, not to root).
    Without it, root is the candidate itself. ``threads``: read the main process's other threads
    too (the interpreter; on a GPU the driver's and the profiler's threads run honestly)."""

    def __init__(self, root: int, namespaced: bool, threads: bool = True):
        self.root = root
        self.namespaced = namespaced
        self.threads = threads
        self.main: int | None = None
        self.before: dict[int, int] = {}
        self.reaped_before: int | None = None
        self.threads_before: int | None = None

    def _tree(self) -> tuple[int | None, list[int]]:
        """(the main process, the others); ``root`` is in neither where it is ``unshare``."""
        tree = descendants(self.root)
        if not tree:
            return None, []
        if self.namespaced:
            if self.main is None:
                children = [p for p in tree[1:] if _parent(p) == self.root]
                self.main = children[0] if len(children) == 1 else None
            main = self.main
        else:
            main = self.main = self.root
        return main, [p for p in tree if p not in (self.root, main)]

    def start(self) -> None:
        main, others = self._tree()
        self.before = {p: _used(p) for p in others}
        self.reaped_before = reaped_ns(main) if main is not None else None
        self.threads_before = _side_threads_ns(main) if main is not None and self.threads else None

    def settle(self, limit_s: float, window_s: float = 0.05, quiet: float = 0.1) -> dict:
        """Wait until the other processes (and threads, where read) run under ``quiet`` of one core
        over a ``window_s`` window and none of them is runnable at its end, at most ``limit_s``.
        (CPU time alone took a helper that the machine starved for an idle one: on two loaded
        cores, a library pool's 3-s warm-up once ran under 10 % of a core for a window, the phase
        began, and its work beside the calls failed an honest solution.) Returns ``settle_ms`` (the
        wall time it waited, the last quiet window included), ``settle_cpu_ms`` (what they ran
        meanwhile) and ``settled`` (False when the limit came first; the phase is timed anyway,
        and what they run during it is flagged)."""
        began = time.monotonic()
        ran_ms = 0.0
        while True:
            self.start()
            time.sleep(window_s)
            readings = self.stop()
            if readings["other_processes_cpu_ms"] is None:
                return {"settle_ms": None, "settle_cpu_ms": None, "settled": None}   # nothing to read
            used = sum(v for v in readings.values() if v)
            ran_ms += used
            waited = time.monotonic() - began
            settled = used <= quiet * window_s * 1e3 and not self._any_runnable()
            if settled or waited >= limit_s:
                return {"settle_ms": round(waited * 1e3, 1), "settle_cpu_ms": round(ran_ms, 3), "settled": settled}

    def _any_runnable(self) -> bool:
        """Is one of the other processes, or (where read) a thread of the main process but its
        first, running or waiting for a CPU?"""
        main, others = self._tree()
        if any(runnable(p) for p in others):
            return True
        return bool(self.threads and main is not None and runnable(main, skip_first_thread=True))

    def stop(self) -> dict:
        """Milliseconds of CPU run since ``start()``: ``other_processes_cpu_ms`` by the other
        processes, ``other_threads_cpu_ms`` by the main process's threads but its first (those that
        ended included); None where it cannot be read (no /proc, no main process found) or, for the
        threads, was not asked for."""
        main, others = self._tree()
        if main is None or self.reaped_before is None:
            return {"other_processes_cpu_ms": None, "other_threads_cpu_ms": None}
        # each other process's own run time and its reaped children's (a helper may hand the work
        # to short-lived children of its own)
        total = sum(_used(p) - self.before.get(p, 0) for p in others)
        reaped = reaped_ns(main)
        if reaped is not None:
            total += reaped - self.reaped_before
        # a process reaped during the phase brings its whole life's CPU to its parent, the main
        # process or another of the tree (an idle compiler pool that shuts its workers down, say):
        # take off what it had already used when the phase began
        total -= sum(used for p, used in self.before.items() if p not in others)
        threads = _side_threads_ns(main) if self.threads_before is not None else None
        side = None if threads is None else max(0, threads - self.threads_before)
        return {"other_processes_cpu_ms": max(0, total) / 1e6,
                "other_threads_cpu_ms": None if side is None else side / 1e6}


def _side_threads_ns(pid: int) -> int | None:
    """What ``pid``'s threads other than its first have run, ended ones included, in ns."""
    whole, first = process_ns(pid), thread_ns(pid, pid)
    return None if whole is None or first is None else whole - first


def _used(pid: int) -> int:
    """``pid``'s run time and its reaped children's, in ns (0 once it is gone)."""
    return (process_ns(pid) or 0) + (reaped_ns(pid) or 0)


def _parent(pid: int) -> int | None:
    fields = stat_fields(PROC / str(pid) / "stat")
    return None if fields is None else int(fields[1])
