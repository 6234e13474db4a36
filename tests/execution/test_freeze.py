"""freeze.py: the trusted batch stops the process it is not timing, threads and descendants
included (a setsid daemon too), and resumes it whole."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from d2k.execution import freeze

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# a process with a spinning thread, a child and a setsid grandchild; every one counts in a file
TREE = r'''
import os, sys, threading, time
out = sys.argv[1]
def count(tag):
    n = 0
    while True:
        n += 1
        if n % 2000 == 0:  # written whole, then renamed: a reader never sees it half written
            with open(f"{out}.{tag}.new", "w") as f:
                f.write(str(n))
            os.replace(f"{out}.{tag}.new", f"{out}.{tag}")
threading.Thread(target=count, args=("thread",), daemon=True).start()
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        count("daemon")
    count("child")
count("main")
'''


def _counts(base, tags) -> dict:
    found = {}
    for tag in tags:
        try:
            found[tag] = int(open(f"{base}.{tag}").read() or 0)
        except (OSError, ValueError):
            found[tag] = 0
    return found


def _wait_counting(base, tags) -> None:
    """Until every process of the tree has counted (up to 20 s)."""
    deadline = time.time() + 20
    while not all(_counts(base, tags).values()) and time.time() < deadline:
        time.sleep(0.05)
    assert all(_counts(base, tags).values()), _counts(base, tags)


def test_stop_holds_every_thread_and_descendant_and_resume_releases_them(tmp_path):
    base = str(tmp_path / "count")
    proc = subprocess.Popen([sys.executable, "-c", TREE, base], start_new_session=True)
    tags = ("thread", "child", "daemon", "main")
    try:
        _wait_counting(base, tags)
        assert len(freeze.descendants(proc.pid)) == 3
        freezer = freeze.Freezer(proc.pid, settle_s=2.0)
        assert freezer.stop()
        held = _counts(base, tags)
        time.sleep(0.3)
        assert _counts(base, tags) == held  # nothing moved while stopped
        freezer.resume()
        time.sleep(0.3)
        moved = _counts(base, tags)
        assert all(moved[t] > held[t] for t in tags), (held, moved)
    finally:
        for pid in reversed(freeze.descendants(proc.pid)):
            subprocess.run(["kill", "-9", str(pid)], check=False)
        proc.wait(timeout=10)


def test_a_tree_that_is_gone_stops_nothing():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    freezer = freeze.Freezer(proc.pid)
    assert freeze.descendants(proc.pid) == []
    assert freezer.stop() and freezer.frozen == []


def test_without_children_lists_the_tree_comes_from_each_process_parent(tmp_path, monkeypatch):
    base = str(tmp_path / "count")
    proc = subprocess.Popen([sys.executable, "-c", TREE, base], start_new_session=True)
    try:
        deadline = time.time() + 20
        while len(freeze.descendants(proc.pid)) < 3 and time.time() < deadline:
            time.sleep(0.05)
        with_lists = sorted(freeze.descendants(proc.pid))
        monkeypatch.setattr(freeze, "_children_lists", lambda: False)
        assert sorted(freeze.descendants(proc.pid)) == with_lists and len(with_lists) == 3
    finally:
        for pid in reversed(freeze.descendants(proc.pid)):
            subprocess.run(["kill", "-9", str(pid)], check=False)
        proc.wait(timeout=10)


# burners that outran the SIGSTOP walk (red team F, session 21): each forks a successor and exits
# every few milliseconds, so a pid listed by the walk is gone at its turn; the successor counts
HOPPER = r'''
import os, sys, time
out = sys.argv[1]
def burn():
    n = 0
    while True:
        t = time.time() + 0.003
        while time.time() < t:
            n += 1
        with open(f"{out}.hop.new", "w") as f:
            f.write(str(n))
        os.replace(f"{out}.hop.new", f"{out}.hop")
        if os.fork():
            os._exit(0)  # the child goes on counting from n
burn()
'''


def test_a_cgroup_freezes_burners_that_outrun_the_walk(tmp_path):
    cgroup = freeze.Cgroup.create(f"test-{tmp_path.name}")
    if cgroup is None:
        pytest.skip("this machine does not let d2k make a freezer cgroup (the walk stops the tree there)")
    base = str(tmp_path / "count")
    proc = subprocess.Popen([sys.executable, "-c", HOPPER, base], start_new_session=True, preexec_fn=cgroup.enter)
    try:
        _wait_counting(base, ("hop",))
        freezer = freeze.Freezer(proc.pid, settle_s=2.0, cgroup=cgroup)
        assert freezer.kind == "cgroup"
        assert freezer.stop()
        held = _counts(base, ("hop",))["hop"]
        time.sleep(0.3)
        assert _counts(base, ("hop",))["hop"] == held, "a burner ran while its cgroup was frozen"
        assert freezer.still_stopped()
        freezer.resume()
        time.sleep(0.3)
        assert _counts(base, ("hop",))["hop"] > held
        assert not freezer.still_stopped()
    finally:
        cgroup.remove()
        proc.wait(timeout=10)
    assert not cgroup.path.exists()


def test_still_stopped_fails_a_tree_with_a_running_process(tmp_path):
    base = str(tmp_path / "count")
    proc = subprocess.Popen([sys.executable, "-c", TREE, base], start_new_session=True)
    tags = ("thread", "child", "daemon", "main")
    try:
        _wait_counting(base, tags)
        freezer = freeze.Freezer(proc.pid, settle_s=2.0)
        assert freezer.stop() and freezer.still_stopped()
        # the kernel resumed one of them (as it does for an orphaned process group)
        os.kill(freezer.frozen[-1], signal.SIGCONT)
        time.sleep(0.05)
        assert not freezer.still_stopped()
    finally:
        everyone = freeze.descendants(proc.pid)  # the setsid daemon too, before its parent dies
        for pid in reversed(everyone):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=10)
