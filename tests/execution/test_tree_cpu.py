"""The CPU time a candidate's other processes and threads run while it is timed
(d2k/execution/tree_cpu.py), and the flag it raises (supervisor.timing_flags).

The processes below burn a fixed amount of CPU time (not of wall time) and say when they are done,
so a loaded machine changes how long a test takes, not what it reads."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from d2k.execution.tree_cpu import OtherProcessesCpu
from d2k.supervisor import timing_flags

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux's /proc")

# burn(s): run s seconds of CPU in the calling thread
PRELUDE = """
import os, signal, sys, threading, time
def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
def say(word):
    print(word, flush=True)
def wait_go():
    sys.stdin.readline()
"""


class Tree:
    """A process tree from ``body`` (after PRELUDE), driven line by line over its stdin/stdout."""

    def __init__(self, body: str):
        code = PRELUDE + textwrap.dedent(body)
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, start_new_session=True)

    def expect(self, word: str) -> None:
        assert self.proc.stdout.readline().strip() == word

    def go(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        os.killpg(self.proc.pid, 9)   # the whole tree
        self.proc.wait()


def measure(body: str, namespaced: bool = False) -> dict:
    """Start the reader once the tree says "ready", let it work ("go"), stop once it says "done"."""
    tree = Tree(body)
    try:
        tree.expect("ready")
        cpu = OtherProcessesCpu(tree.proc.pid, namespaced=namespaced)
        cpu.start()
        tree.go()
        tree.expect("done")
        return cpu.stop()
    finally:
        tree.close()


def test_a_helper_process_that_works_is_counted_and_an_idle_one_is_not():
    # the helper works 0.3 s of CPU after "go", the main process only waits for it
    worked = measure("""
        r, w = os.pipe()
        if os.fork() == 0:
            os.read(r, 1)
            burn(0.3)
            say("done")
            time.sleep(30)
        say("ready")
        wait_go()
        os.write(w, b"x")
        time.sleep(30)
    """)
    idle = measure("""
        if os.fork() == 0:
            time.sleep(30)
        say("ready")
        wait_go()
        burn(0.3)          # the main process's own work: its calls', not counted
        say("done")
        time.sleep(30)
    """)
    assert 250 < worked["other_processes_cpu_ms"] < 400, worked
    assert idle["other_processes_cpu_ms"] < 5, idle


def test_a_helper_that_exits_and_is_reaped_is_counted_through_its_parent():
    ran = measure("""
        say("ready")
        wait_go()
        pid = os.fork()
        if pid == 0:
            burn(0.4)
            os._exit(0)
        os.waitpid(pid, 0)
        say("done")
        time.sleep(30)
    """)
    # counted in clock ticks (10 ms) once reaped
    assert 350 < ran["other_processes_cpu_ms"] < 470, ran


def test_a_worker_that_had_worked_before_and_is_reaped_by_another_helper_adds_nothing():
    # main -> pool -> worker, which worked 0.4 s before the phase; during the phase the pool ends and
    # reaps it (its whole life's CPU moves to the pool's cutime): nothing new ran
    ran = measure("""
        r, w = os.pipe()
        if os.fork() == 0:                          # the pool
            worker = os.fork()
            if worker == 0:
                burn(0.4)
                os.write(w, b"w")
                signal.pause()
                os._exit(0)
            os.read(r, 1)                           # the worker's work is over
            say("ready")
            os.read(r, 1)                           # the main process's "go"
            os.kill(worker, 9)
            os.waitpid(worker, 0)
            say("done")
            time.sleep(30)
        wait_go()
        os.write(w, b"g")
        time.sleep(30)
    """)
    assert ran["other_processes_cpu_ms"] < 20, ran   # not the worker's 400 ms (ticks: up to 10 ms off)


def test_a_thread_that_worked_and_ended_is_counted_apart_from_the_first_thread():
    ran = measure("""
        say("ready")
        wait_go()
        burn(0.2)                                   # the first thread's own work: not counted
        worker = threading.Thread(target=burn, args=(0.3,))
        worker.start()
        worker.join()                               # ended before the reading
        say("done")
        time.sleep(30)
    """)
    assert ran["other_processes_cpu_ms"] < 5, ran
    assert 250 < ran["other_threads_cpu_ms"] < 400, ran


def test_in_a_pid_namespace_the_main_process_is_roots_single_child_and_is_not_counted():
    # root (as unshare) -> main -> helper; the main process's own work is not counted, the helper's is
    body = """
        r, w = os.pipe()
        if os.fork() == 0:                          # main
            if os.fork() == 0:                      # helper
                os.read(r, 1)
                burn({helper})
                say("done")
                time.sleep(30)
            say("ready")
            wait_go()
            burn(0.3)
            os.write(w, b"x")
            time.sleep(30)
        time.sleep(30)
    """
    alone = measure(body.format(helper=0.0), namespaced=True)
    helped = measure(body.format(helper=0.3), namespaced=True)
    assert alone["other_processes_cpu_ms"] < 5, alone
    assert 250 < helped["other_processes_cpu_ms"] < 400, helped


def test_a_main_process_that_is_gone_gives_no_figure():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    cpu = OtherProcessesCpu(proc.pid, namespaced=False)
    cpu.start()
    assert cpu.stop() == {"other_processes_cpu_ms": None, "other_threads_cpu_ms": None}


def test_cpu_beside_the_calls_is_flagged_beyond_a_quarter_of_the_timed_calls():
    samples = [0.05] * 20   # 1 ms of timed calls
    assert timing_flags({"other_processes_cpu_ms": 0.0, "other_threads_cpu_ms": 0.0}, samples) == []
    assert timing_flags({"other_processes_cpu_ms": 2.2}, samples) == []   # under 2 ms + a quarter of 1 ms
    flags = timing_flags({"other_processes_cpu_ms": 79.6, "other_threads_cpu_ms": 0.0}, samples)
    assert len(flags) == 1 and "its other processes 79.6 ms" in flags[0] and "threads" not in flags[0]
    flags = timing_flags({"other_processes_cpu_ms": 1.5, "other_threads_cpu_ms": 1.5}, samples)   # together over
    assert len(flags) == 1 and "threads but the first 1.5 ms" in flags[0]
    assert timing_flags({"other_processes_cpu_ms": None, "other_threads_cpu_ms": None}, samples) == []
    assert timing_flags({"other_processes_cpu_ms": "79.6"}, samples) == []   # only the trusted side's number
    flags = timing_flags({"other_processes_cpu_ms": 79.6, "settled": False, "settle_ms": 20000.0}, samples)
    assert len(flags) == 1 and "busy before the timing too, which waited 20.0 s" in flags[0]


def test_threads_are_read_only_when_asked_for():
    tree = Tree("""
        say("ready")
        wait_go()
        say("done")
        time.sleep(30)
    """)
    try:
        tree.expect("ready")
        cpu = OtherProcessesCpu(tree.proc.pid, namespaced=False, threads=False)
        cpu.start()
        tree.go()
        tree.expect("done")
        ran = cpu.stop()
    finally:
        tree.close()
    assert ran["other_processes_cpu_ms"] is not None and ran["other_threads_cpu_ms"] is None


def settle(body: str, limit_s: float, threads: bool = False) -> tuple[dict, dict]:
    """Settle a reader on the tree from ``body`` once it says "ready": what ``settle`` returned,
    then what the reader reads over the next 0.2 s."""
    tree = Tree(body)
    try:
        tree.expect("ready")
        cpu = OtherProcessesCpu(tree.proc.pid, namespaced=False, threads=threads)
        settled = cpu.settle(limit_s=limit_s)
        cpu.start()
        time.sleep(0.2)
        return settled, cpu.stop()
    finally:
        tree.close()


def test_settle_waits_for_a_helper_that_works_a_while_then_idles():
    # a library's pool warming up: busy for a fixed CPU time after import, then idle for good
    settled, after = settle("""
        if os.fork() == 0:
            burn(0.4)
            time.sleep(60)
        say("ready")
        time.sleep(60)
    """, limit_s=30.0)
    assert settled["settled"] is True and settled["settle_cpu_ms"] >= 150.0
    assert after["other_processes_cpu_ms"] < 5.0


def test_settle_waits_for_a_helper_that_a_loaded_machine_starves():
    """A busy helper that gets almost no CPU (niced to 19 on a core a busy process holds) runs
    under the quiet threshold in every window; it is still runnable, so settle waits for it. By CPU
    time alone it settled at once, and the helper's work fell beside the timed calls."""
    core = min(os.sched_getaffinity(0))
    hog = subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"])
    try:
        settled, after = settle(f"""
            if os.fork() == 0:
                os.sched_setaffinity(0, {{{core}}})
                os.nice(19)
                burn(0.03)
                time.sleep(60)
            say("ready")
            time.sleep(60)
        """, limit_s=120.0)
    finally:
        hog.kill()
        hog.wait()
    assert settled["settled"] is True and settled["settle_cpu_ms"] >= 25.0, settled
    assert after["other_processes_cpu_ms"] < 5.0


def test_settle_gives_up_at_its_limit_on_a_helper_that_never_idles():
    settled, _ = settle("""
        if os.fork() == 0:
            burn(120)
        say("ready")
        time.sleep(60)
    """, limit_s=0.3)
    assert settled["settled"] is False and 300.0 <= settled["settle_ms"] < 5000.0 and settled["settle_cpu_ms"] > 10.0


def test_settle_returns_after_one_window_on_a_quiet_tree():
    settled, _ = settle("""
        say("ready")
        time.sleep(60)
    """, limit_s=30.0, threads=True)
    assert settled["settled"] is True and settled["settle_ms"] < 1000.0


WARMING_POOL = '''
import os
import time

import torch

# like a compiler pool that starts its workers at first use: a child busy for a while, then idle;
# the solution itself computes honestly
if os.fork() == 0:
    end = time.thread_time() + 3.0
    while time.thread_time() < end:
        pass
    time.sleep(600)


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
'''


@pytest.mark.parametrize("settle_s", [0.0, 20.0])
def test_a_library_process_busy_from_import_is_waited_for_not_flagged(tmp_path, settle_s):
    from d2k.content import Benchmark
    from d2k.solutions import resolve
    from d2k.store import Store
    from d2k.supervisor import Limits
    from d2k.sweep import Plan, run_sweep

    bench = Benchmark.load(only=["rmsnorm"])
    first = sorted(bench.select_workloads("rmsnorm", "smoke"), key=lambda w: w.axes["H"])[:1]
    path = tmp_path / "warming_pool.py"
    path.write_text(WARMING_POOL)
    store = Store(tmp_path / "pool.duckdb")
    result = run_sweep(bench, store, [Plan(resolve(bench, "rmsnorm", str(path)), first)], "interpreter", "test", {},
                       limits=Limits(per_workload_s=120), timing={"settle_s": settle_s})
    store.close()
    record = result.records[0]
    timing = record["timing"] if isinstance(record["timing"], dict) else json.loads(record["timing"])
    if settle_s == 0.0:   # the reading without the wait: the pool's start reads as work beside the calls
        assert record["status"] == "timing_suspect" and "other processes" in record["reason"], record["reason"]
    else:
        assert record["status"] == "passed", record["reason"]
        assert timing["settled"] is True and timing["settle_cpu_ms"] > 100.0 and timing["other_processes_cpu_ms"] < 2.0
