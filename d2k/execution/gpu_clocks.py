"""What the GPU's clocks, power and temperature did while each evaluation ran, read (never set) by
the trusted parent from one `nvidia-smi` loop per sweep.

The H200s are measured as found: nobody fixes their clocks, so a latency-bound kernel's time follows
the SM clock of the moment. A figure that moved between calls can then be told apart from a kernel
that changed: every evaluation's timing record carries the clock range it ran under. The candidate
cannot reach this process or its output.
"""

from __future__ import annotations

import collections
import datetime as dt
import shutil
import statistics
import subprocess
import threading
import time

# nvidia-smi's loop mode, one CSV line per GPU per interval; the event-reasons field is a bit mask
# (power cap, thermal, ...); older drivers call it clocks_throttle_reasons.active. Samples are placed
# by nvidia-smi's own timestamp (local time, ms): its output to a pipe may arrive in batches.
FIELDS = ("timestamp", "index", "uuid", "clocks.sm", "clocks.mem", "power.draw", "temperature.gpu")
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
# the reasons that lower the clock below what the load asks for (nvml's bit values)
REASONS = {0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal", 0x40: "hw_thermal",
           0x80: "hw_power_brake"}


def _when(text: str) -> float | None:
    """nvidia-smi's timestamp ("2026/12/04 21:50:00.123", local time) as a time.time() value."""
    try:
        return dt.datetime.strptime(text, "%Y/%m/%d %H:%M:%S.%f").timestamp()
    except ValueError:
        return None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:        # "[N/A]", "[Not Supported]"
        return None


class ClockMonitor:
    """Samples every GPU each ``interval_ms`` while started; ``window`` summarises one device's
    samples between two ``time.time()`` readings. Absent or failing nvidia-smi: no samples,
    every window is None (the evaluation is stored without clocks, nothing else changes)."""

    def __init__(self, interval_ms: int = 100, executable: str = "nvidia-smi", keep: int = 500_000):
        self.interval_ms = interval_ms
        self.executable = executable
        self.samples: collections.deque = collections.deque(maxlen=keep)
        self.reason_field: str | None = None
        self.error: str | None = None
        self.dies_with_parent = False
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> bool:
        path = shutil.which(self.executable)
        if path is None:
            self.error = f"{self.executable} not found"
            return False
        # the loop must end with d2k, even a killed one: where setpriv can, the kernel sends it SIGTERM
        # when its parent dies (a loop left behind writes into a closed pipe and may ignore that)
        setpriv = shutil.which("setpriv")
        wrappers = ([[setpriv, "--pdeathsig", "TERM"]] if setpriv else []) + [[]]
        found = self._probe(wrappers, path)
        if found is None:
            return False
        wrapper, fields = found
        self.dies_with_parent = bool(wrapper)
        self._proc = subprocess.Popen(
            [*wrapper, path, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
             f"--loop-ms={self.interval_ms}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self._thread = threading.Thread(target=self._read, name="d2k-gpu-clocks", daemon=True)
        self._thread.start()
        return True

    def _probe(self, wrappers: list[list[str]], path: str) -> tuple[list[str], tuple[str, ...]] | None:
        """The first (wrapper, fields) whose one-shot query succeeds: an unknown field (or a setpriv
        without --pdeathsig) makes the command exit at once, so the next spelling is tried."""
        for wrapper in wrappers:
            for reasons in (*REASON_FIELDS, None):
                fields = FIELDS + ((reasons,) if reasons else ())
                try:
                    probe = subprocess.run([*wrapper, path, f"--query-gpu={','.join(fields)}",
                                            "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30)
                except (OSError, subprocess.SubprocessError) as exc:
                    self.error = f"{self.executable}: {exc}"[:200]
                    return None
                if probe.returncode == 0:
                    self.reason_field = reasons
                    return wrapper, fields
        self.error = f"{self.executable} --query-gpu failed: {probe.stderr.strip()[:200]}"
        return None

    def _read(self) -> None:
        for line in self._proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < len(FIELDS):
                continue
            reasons = None
            if self.reason_field and len(parts) > len(FIELDS):
                try:
                    reasons = int(parts[len(FIELDS)], 16)
                except ValueError:
                    reasons = None
            when = _when(parts[0])
            with self._lock:
                self.samples.append((time.time() if when is None else when, parts[1], parts[2], _number(parts[3]),
                                     _number(parts[4]), _number(parts[5]), _number(parts[6]), reasons))

    def window(self, device: str | None, start: float, end: float) -> dict | None:
        """Clock, power and temperature of ``device`` (an index or a UUID as CUDA_VISIBLE_DEVICES
        names it; None: the first GPU) between ``start`` and ``end``; None without samples."""
        with self._lock:
            rows = [s for s in self.samples if start <= s[0] <= end]
        if device is None and rows:
            device = rows[0][1]
        rows = [s for s in rows if device in (s[1], s[2])]
        sm = [s[3] for s in rows if s[3] is not None]
        if not sm:
            return None
        mem = [s[4] for s in rows if s[4] is not None]
        power = [s[5] for s in rows if s[5] is not None]
        temp = [s[6] for s in rows if s[6] is not None]
        mask = 0
        for s in rows:
            mask |= s[7] or 0
        out = {"samples": len(sm), "sm_mhz_min": min(sm), "sm_mhz_median": statistics.median(sm),
               "sm_mhz_max": max(sm)}
        if mem:
            out["mem_mhz_median"] = statistics.median(mem)
        if power:
            out["power_w_max"] = max(power)
        if temp:
            out["temperature_c_max"] = max(temp)
        if self.reason_field:
            out["clock_limited_by"] = [name for bit, name in REASONS.items() if mask & bit]
        return out

    def annotate(self, record: dict, device: str | None, start: float, end: float) -> None:
        """Store the window in a timed record's ``timing.gpu_clocks``; flag it ``clock_limited``
        when power or heat held the clock down meanwhile. A record without timing is left alone."""
        if not isinstance(record.get("timing"), dict):
            return
        window = self.window(device, start, end)
        if not window:
            return
        record["timing"]["gpu_clocks"] = window
        if window.get("clock_limited_by"):
            record["flags"] = {**(record.get("flags") or {}), "clock_limited": window["clock_limited_by"]}

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)
