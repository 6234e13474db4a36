"""The CPU time a candidate's other processes run while it is timed (d2k/execution/tree_cpu.py), and
the flag it raises (supervisor.timing_flags)."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

from d2k.execution.tree_cpu import OtherProcessesCpu
from d2k.supervisor import timing_flags

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux's /proc")


def _tree(child_code: str) -> subprocess.Popen:
    """A main process that forks one child running ``child_code`` and then sleeps."""
    code = textwrap.dedent(f"""
        import os, sys, time
        if os.fork() == 0:
            {child_code}
            os._exit(0)
        print("forked", flush=True)
        time.sleep(30)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "forked"
    return proc


def _measure(proc: subprocess.Popen, seconds: float) -> float | None:
    cpu = OtherProcessesCpu(proc.pid, namespaced=False)
    cpu.start()
    time.sleep(seconds)
    return cpu.stop()["other_processes_cpu_ms"]


def test_a_spinning_helper_process_is_counted_and_a_sleeping_one_is_not():
    spinning = _tree("end = time.time() + 30\n            while time.time() < end: pass")
    sleeping = _tree("time.sleep(30)")
    try:
        spun = _measure(spinning, 0.5)
        slept = _measure(sleeping, 0.5)
    finally:
        for proc in (spinning, sleeping):
            os.killpg(proc.pid, 9)   # the main process and its child
            proc.wait()
    # a spinning child runs most of the 500 ms on a core (loaded CI machines give it less)
    assert spun is not None and spun > 150, spun
    assert slept is not None and slept < 5, slept


def test_a_helper_that_exits_and_is_reaped_is_counted_through_its_parent():
    code = textwrap.dedent("""
        import os, sys, time
        print("ready", flush=True)
        sys.stdin.readline()
        pid = os.fork()
        if pid == 0:
            end = time.time() + 0.4
            while time.time() < end: pass
            os._exit(0)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
        time.sleep(30)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        cpu = OtherProcessesCpu(proc.pid, namespaced=False)
        cpu.start()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "reaped"
        ran = cpu.stop()["other_processes_cpu_ms"]
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    assert ran is not None and ran > 100, ran   # clock ticks: the 400 ms child, less what load took


def test_a_main_process_that_is_gone_gives_no_figure():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    cpu = OtherProcessesCpu(proc.pid, namespaced=False)
    cpu.start()
    assert cpu.stop() == {"other_processes_cpu_ms": None, "other_threads_cpu_ms": None}


def test_other_processes_cpu_flags_a_timing_beyond_a_quarter_of_the_timed_calls():
    samples = [0.05] * 20   # 1 ms of timed calls
    assert timing_flags({"other_processes_cpu_ms": 0.0, "other_threads_cpu_ms": 0.0}, samples) == []
    assert timing_flags({"other_processes_cpu_ms": 2.2}, samples) == []   # under 2 ms + a quarter of 1 ms
    flags = timing_flags({"other_processes_cpu_ms": 79.6, "other_threads_cpu_ms": 0.0}, samples)
    assert len(flags) == 1 and "its other processes 79.6 ms" in flags[0] and "threads" not in flags[0]
    flags = timing_flags({"other_processes_cpu_ms": 1.5, "other_threads_cpu_ms": 1.5}, samples)   # together over
    assert len(flags) == 1 and "threads but the first 1.5 ms" in flags[0]
    assert timing_flags({"other_processes_cpu_ms": None, "other_threads_cpu_ms": None}, samples) == []
    assert timing_flags({"other_processes_cpu_ms": "79.6"}, samples) == []   # only the trusted side's number


def test_a_thread_that_worked_and_ended_is_counted_apart_from_the_first_thread():
    code = textwrap.dedent("""
        import sys, threading, time
        def spin(seconds):
            end = time.time() + seconds
            while time.time() < end:
                pass
        print("ready", flush=True)
        sys.stdin.readline()
        spin(0.2)                                        # the first thread's own work: not counted
        worker = threading.Thread(target=spin, args=(0.3,))
        worker.start()
        worker.join()                                    # ended before the reading
        print("done", flush=True)
        time.sleep(30)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        cpu = OtherProcessesCpu(proc.pid, namespaced=False)
        cpu.start()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        ran = cpu.stop()
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    assert ran["other_processes_cpu_ms"] < 5, ran
    assert 100 < ran["other_threads_cpu_ms"] < 400, ran   # the 300 ms thread, less what load took


def test_in_a_pid_namespace_the_main_process_is_roots_single_child_and_is_not_counted():
    # root (as unshare) -> main, which spins itself (its own work: not counted) -> a helper that spins
    # (counted); with helper_spins False only the main process works
    def run(helper_spins: bool) -> float | None:
        helper = "spin(30)" if helper_spins else "time.sleep(30)"
        code = textwrap.dedent(f"""
            import os, sys, time
            def spin(seconds):
                end = time.time() + seconds
                while time.time() < end:
                    pass
            if os.fork() == 0:
                if os.fork() == 0:
                    {helper}
                    os._exit(0)
                print("forked", flush=True)
                spin(30)
                os._exit(0)
            time.sleep(30)
        """)
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert proc.stdout.readline().strip() == "forked"
            cpu = OtherProcessesCpu(proc.pid, namespaced=True)
            cpu.start()
            time.sleep(0.5)
            return cpu.stop()["other_processes_cpu_ms"]
        finally:
            os.killpg(proc.pid, 9)
            proc.wait()

    alone = run(helper_spins=False)
    assert alone is not None and alone < 5, alone   # the main process's own spinning is its calls' work
    helped = run(helper_spins=True)
    assert helped is not None and helped > 100, helped
