"""The plain line each finished evaluation gets off a terminal (a sweep's log): its GPU median,
seconds and, where the sweep recorded them, the SM clock range it ran under."""

from __future__ import annotations

import pytest
from rich.console import Console

from d2k.cli import common


@pytest.fixture
def lines(monkeypatch):
    console = Console(record=True, width=300, force_terminal=False)
    monkeypatch.setattr(common, "err_console", console)
    progress = common.RichProgress("test")
    progress.total = 3

    def line(record: dict) -> str:
        progress.record(record)
        return console.export_text().strip().splitlines()[-1]
    return line


BASE = {"task_id": "rmsnorm", "solution": "expert", "workload_id": "w1", "status": "passed",
        "backend": "cuda", "median_ms": 0.05171, "seconds": 7.6}


def test_a_clock_range_is_shown_beside_the_seconds(lines):
    record = {**BASE, "timing": {"gpu_clocks": {"sm_mhz_min": 1755.0, "sm_mhz_max": 1980.0}}}
    assert lines(record) == "[1/3] rmsnorm · expert · w1: passed 0.05171 ms (7.6 s, SM 1755-1980 MHz)"


def test_a_steady_clock_is_one_figure(lines):
    record = {**BASE, "timing": {"gpu_clocks": {"sm_mhz_min": 1980.0, "sm_mhz_max": 1980.0}}}
    assert lines(record).endswith("(7.6 s, SM 1980 MHz)")


def test_without_clocks_the_line_is_as_before(lines):
    assert lines({**BASE, "timing": {}}).endswith("passed 0.05171 ms (7.6 s)")
    assert lines({**BASE, "timing": None, "status": "failed", "reason": "wrong"}).endswith("(7.6 s): wrong")
