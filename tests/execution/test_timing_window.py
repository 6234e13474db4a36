"""The event window's host-side guards: the candidate waits hot for the trusted side's decision,
and calls issued more slowly than their hold are counted and surface as a flag on the record."""

from __future__ import annotations

import os
import threading
import time

from d2k.execution import wire
from d2k.supervisor import finalize

CONTEXT = {"run_id": "r", "solution_id": "s", "task_id": "t", "env_id": "e", "backend": "cuda"}


def test_a_spinning_receive_gets_a_frame_sent_during_the_spin_and_one_sent_after_it():
    r, w = os.pipe()
    try:
        threading.Timer(0.02, wire.send, args=(w, {"keep": True})).start()
        started = time.perf_counter()
        header, _ = wire.recv(r, 0, spin_s=1.0)
        assert header.get("keep") is True
        assert time.perf_counter() - started < 0.9  # returned when the frame came, not at the spin's end
        # a frame that comes after the spin ends is still read (the read then blocks)
        threading.Timer(0.1, wire.send, args=(w, {"drop": 3})).start()
        header, _ = wire.recv(r, 0, spin_s=0.01)
        assert header.get("drop") == 3
    finally:
        os.close(r)
        os.close(w)


def _raw(timing):
    return {"workload": "w", "status": "passed", "reason": None, "timing": timing, "seconds": 1.0, "own_kernels": 1}


def test_late_calls_flag_the_event_window_but_keep_every_sample():
    record = finalize(_raw({"method": "cuda_events", "samples_ms": [0.01, 0.05, 0.011, 0.012],
                            "late_calls": 1, "late_worst_us": 61.5}), CONTEXT)
    assert record["status"] == "passed"
    assert record["flags"]["host_late"] == {"calls": 1, "of": 4, "worst_us": 61.5}
    assert record["samples_ms"] == [0.01, 0.05, 0.011, 0.012]  # nothing dropped: the solution cannot pick


def test_late_calls_do_not_flag_a_device_span_figure():
    record = finalize(_raw({"method": "cuda_events", "samples_ms": [0.05, 0.06], "span_samples_ms": [0.01, 0.011],
                            "late_calls": 2, "late_worst_us": 80.0}), CONTEXT)
    assert record["timing_method"] == "device_span"
    assert not (record["flags"] or {}).get("host_late")


def test_no_late_calls_no_flag():
    record = finalize(_raw({"method": "cuda_events", "samples_ms": [0.01, 0.011], "late_calls": 0}), CONTEXT)
    assert record["flags"] is None
