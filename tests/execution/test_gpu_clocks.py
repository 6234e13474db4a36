"""d2k/execution/gpu_clocks.py against a fake nvidia-smi: samples are attributed to the device and
the time window asked for, the clock-limit mask is decoded, an older driver's field spelling is
used when the newer is refused, and a missing or failing nvidia-smi leaves evaluations without
clocks instead of failing them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from d2k.execution.gpu_clocks import ClockMonitor

# GPU 0 runs at 1980 MHz limited by the power cap (0x4); GPU 1 at 1500 MHz, nothing limiting it
FAKE = r"""#!/bin/sh
case "$*" in *{refuse}*) echo "Field is not a valid field to query." >&2; exit 2;; esac
line() {{
  now=$(date +"%Y/%m/%d %H:%M:%S.%3N")
  echo "$now, 0, GPU-aaaa, 1980, 3201, 650.5, 61, 0x0000000000000004"
  echo "$now, 1, GPU-bbbb, 1500, 3201, 300.0, 45, 0x0000000000000000"
}}
case "$*" in
  *loop-ms*) while true; do line; sleep 0.02; done;;
  *) line;;
esac
"""


def _fake(tmp_path, refuse="no-such-field"):
    path = tmp_path / "nvidia-smi"
    path.write_text(FAKE.format(refuse=refuse))
    os.chmod(path, 0o755)
    return str(path)


def _sampled(monitor: ClockMonitor, device: str):
    assert monitor.start(), monitor.error
    try:
        start = time.time()
        deadline = start + 10
        window = None
        while time.time() < deadline:
            time.sleep(0.1)
            window = monitor.window(device, start, time.time())
            if window and window["samples"] >= 3:
                break
        return window
    finally:
        monitor.stop()


def test_a_window_holds_only_its_device(tmp_path):
    window = _sampled(ClockMonitor(interval_ms=20, executable=_fake(tmp_path)), "0")
    assert window["samples"] >= 3
    assert window["sm_mhz_min"] == window["sm_mhz_max"] == 1980.0
    assert window["power_w_max"] == 650.5 and window["temperature_c_max"] == 61.0
    assert window["clock_limited_by"] == ["sw_power_cap"]


def test_a_device_named_by_uuid(tmp_path):
    window = _sampled(ClockMonitor(interval_ms=20, executable=_fake(tmp_path)), "GPU-bbbb")
    assert window["sm_mhz_median"] == 1500.0 and window["clock_limited_by"] == []


def test_a_window_before_the_samples_is_empty(tmp_path):
    monitor = ClockMonitor(interval_ms=20, executable=_fake(tmp_path))
    before = time.time()
    window = _sampled(monitor, "0")
    assert window is not None
    assert monitor.window("0", before - 10, before - 5) is None
    assert monitor.window("7", before, time.time()) is None     # no such GPU


def test_the_older_reason_field_is_used_when_the_newer_is_refused(tmp_path):
    monitor = ClockMonitor(interval_ms=20, executable=_fake(tmp_path, refuse="clocks_event_reasons"))
    window = _sampled(monitor, "0")
    assert monitor.reason_field == "clocks_throttle_reasons.active"
    assert window["clock_limited_by"] == ["sw_power_cap"]


def test_without_any_reason_field_the_clocks_still_come(tmp_path):
    monitor = ClockMonitor(interval_ms=20, executable=_fake(tmp_path, refuse="reasons"))
    window = _sampled(monitor, "0")
    assert monitor.reason_field is None
    assert window["sm_mhz_median"] == 1980.0 and "clock_limited_by" not in window


def test_no_nvidia_smi_means_no_clocks(tmp_path):
    monitor = ClockMonitor(executable=str(tmp_path / "absent-nvidia-smi"))
    assert not monitor.start() and "not found" in monitor.error
    assert monitor.window("0", 0.0, time.time()) is None
    monitor.stop()


def test_a_failing_nvidia_smi_means_no_clocks(tmp_path):
    path = tmp_path / "nvidia-smi"
    path.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    os.chmod(path, 0o755)
    monitor = ClockMonitor(executable=str(path))
    assert not monitor.start() and "NVIDIA-SMI has failed" in monitor.error


def test_a_timed_record_gets_the_window_and_the_limit_flag(tmp_path):
    monitor = ClockMonitor(interval_ms=20, executable=_fake(tmp_path))
    start = time.time()
    assert _sampled(monitor, "0") is not None
    end = time.time()
    limited = {"status": "passed", "timing": {"samples_ms": [1.0]}, "flags": {"host_late": {"calls": 1}}}
    monitor.annotate(limited, "0", start, end)
    assert limited["timing"]["gpu_clocks"]["sm_mhz_median"] == 1980.0
    assert limited["flags"] == {"host_late": {"calls": 1}, "clock_limited": ["sw_power_cap"]}
    free = {"status": "passed", "timing": {}, "flags": None}
    monitor.annotate(free, "1", start, end)
    assert free["timing"]["gpu_clocks"]["sm_mhz_median"] == 1500.0 and free["flags"] is None
    failed = {"status": "failed", "timing": None, "flags": None}
    monitor.annotate(failed, "0", start, end)
    assert failed == {"status": "failed", "timing": None, "flags": None}
    outside = {"status": "passed", "timing": {}}
    monitor.annotate(outside, "0", start - 10, start - 5)
    assert outside == {"status": "passed", "timing": {}}


def test_a_sample_is_placed_by_its_timestamp_not_by_its_arrival(tmp_path):
    # a pipe may deliver nvidia-smi's lines in batches: a line stamped an hour ago stays an hour ago
    path = tmp_path / "nvidia-smi"
    path.write_text("#!/bin/sh\n"
                    "case \"$*\" in *loop-ms*) ;; *) echo '2020/01/01 00:00:00.000, 0, GPU-a, 1, 1, 1, 1'; exit 0;; esac\n"
                    "old=$(date -d '1 hour ago' +'%Y/%m/%d %H:%M:%S.%3N')\n"
                    "while true; do echo \"$old, 0, GPU-a, 1700, 3201, 500.0, 50, 0x0\"; sleep 0.02; done\n")
    os.chmod(path, 0o755)
    monitor = ClockMonitor(interval_ms=20, executable=str(path))
    assert monitor.start(), monitor.error
    try:
        start = time.time()
        time.sleep(0.5)
        assert monitor.samples                                   # lines did arrive
        assert monitor.window("0", start, time.time()) is None   # but none belongs to this window
        hour_ago = monitor.window("0", start - 3700, start - 3500)
        assert hour_ago["sm_mhz_median"] == 1700.0
    finally:
        monitor.stop()


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="no setpriv on this machine")
def test_the_loop_ends_with_a_killed_parent(tmp_path):
    # a sweep killed with SIGKILL must not leave nvidia-smi looping behind it
    fake = _fake(tmp_path)
    code = ("import sys, time\n"
            "from d2k.execution.gpu_clocks import ClockMonitor\n"
            f"m = ClockMonitor(interval_ms=20, executable={fake!r})\n"
            "assert m.start() and m.dies_with_parent\n"
            "print(m._proc.pid, flush=True)\n"
            "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert _alive(child)
    parent.kill()
    parent.wait()
    deadline = time.time() + 10
    while _alive(child) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
