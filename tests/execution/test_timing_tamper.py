"""What the candidate's process can do to its own timing without replacing a function, and what
catches it: a thread running the solution's code between calls (ThreadWatch), a profiler range
named like the harness's (the span parser), and the trusted side's cross-checks of a reported
timing against the profiler's probe and the span (supervisor.timing_flags). The end-to-end attacks
are in tests/adversarial (thread_rewrite on the CPU; restart_window and fake_call_range on a GPU)."""

from __future__ import annotations

import threading
import time
import types

import pytest

from d2k.execution.threads import ThreadWatch
from d2k.execution.timing import TimerTampered, spans_from_events
from d2k.supervisor import finalize, timing_flags

CONTEXT = {"run_id": "r", "solution_id": "s", "task_id": "t", "env_id": "e", "backend": "cuda"}


# -- threads -----------------------------------------------------------------------------------------
def _solution_module(tmp_path):
    """A module loaded from a file, as the candidate loads a solution, whose function loops until told."""
    path = tmp_path / "solution.py"
    path.write_text("import time\n\ndef loop(stop):\n    while not stop.is_set():\n        time.sleep(0.001)\n")
    module = types.ModuleType("d2k_solution_test")
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module, path


def test_a_thread_running_the_solutions_code_fails_the_check(tmp_path):
    watch = ThreadWatch()
    module, path = _solution_module(tmp_path)
    watch.arm(module.__dict__, str(path))
    assert watch.check() == []
    stop = threading.Event()
    thread = threading.Thread(target=module.loop, args=(stop,), daemon=True)
    thread.start()
    try:
        time.sleep(0.01)
        with pytest.raises(TimerTampered, match="a thread the solution started was running its code"):
            watch.check()
    finally:
        stop.set()
        thread.join()
    assert watch.check() == []  # once it has ended, nothing is left


def test_exec_d_code_in_the_solutions_globals_fails_and_in_globals_of_its_own_is_listed(tmp_path):
    watch = ThreadWatch()
    module, path = _solution_module(tmp_path)
    watch.arm(module.__dict__, str(path))
    source = "import time\ndef hidden(stop):\n    while not stop.is_set():\n        time.sleep(0.001)\n"
    own: dict = {}
    exec(compile(source, "<string>", "exec"), module.__dict__)  # the solution's globals: refused
    exec(compile(source, "<string>", "exec"), own)  # globals and a name of its own: only listed
    for target, refused in ((module.__dict__["hidden"], True), (own["hidden"], False)):
        stop = threading.Event()
        thread = threading.Thread(target=target, args=(stop,), daemon=True)
        thread.start()
        try:
            time.sleep(0.01)
            if refused:
                with pytest.raises(TimerTampered):
                    watch.check()
            else:
                assert len(watch.check()) == 1
        finally:
            stop.set()
            thread.join()


def test_threads_alive_become_a_flag_on_the_record():
    record = finalize({"workload": "w", "status": "passed", "reason": None, "seconds": 1.0, "own_kernels": 1,
                       "timing": {"method": "cuda_events", "samples_ms": [0.02, 0.02],
                                  "threads_alive": ["wait < run < _bootstrap"]}}, CONTEXT)
    assert record["status"] == "passed" and record["flags"]["threads_alive"] == ["wait < run < _bootstrap"]


def test_a_library_thread_is_listed_not_failed(tmp_path):
    watch = ThreadWatch()
    module, path = _solution_module(tmp_path)
    watch.arm(module.__dict__, str(path))
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)  # threading's own code, idle
    thread.start()
    try:
        time.sleep(0.01)
        listed = watch.check()
        assert len(listed) == 1 and "wait" in listed[0]
    finally:
        stop.set()
        thread.join()


def test_the_thread_check_leaves_no_frame_cycle_behind():
    # Automatic collection is off in a candidate: a frame the check kept in a local (the main
    # thread's entry of sys._current_frames() is the check's own frame) formed a cycle that held
    # its caller's locals, a timed call's outputs among them, until a collection. On the H200 two
    # outputs per timed call piled up and silu_and_mul's largest workload ran out of memory.
    import gc
    import weakref

    class Output:
        pass

    watch = ThreadWatch()

    def after_a_call():
        output = Output()
        watch.check()
        return weakref.ref(output)

    enabled = gc.isenabled()
    gc.disable()
    try:
        gone = after_a_call()
        assert gone() is None, "the check kept its caller's locals alive"
    finally:
        if enabled:
            gc.enable()


def test_threads_alive_before_the_import_are_not_the_solutions(tmp_path):
    stop = threading.Event()
    module, path = _solution_module(tmp_path)
    thread = threading.Thread(target=module.loop, args=(stop,), daemon=True)
    thread.start()  # started before the watch: the harness's, by definition
    try:
        watch = ThreadWatch()
        watch.arm(module.__dict__, str(path))
        assert watch.check() == []
    finally:
        stop.set()
        thread.join()


# -- the span parser ---------------------------------------------------------------------------------
def _trace(ranges, kernels):
    """Chrome-trace events: ``ranges`` = [(name, ts, dur)], ``kernels`` = [(launch_ts, start, dur)]."""
    events = [{"cat": "user_annotation", "name": n, "ts": ts, "dur": dur} for n, ts, dur in ranges]
    for k, (launch, start, dur) in enumerate(kernels):
        events.append({"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": launch, "dur": 1, "args": {"correlation": k}})
        events.append({"cat": "kernel", "name": f"k{k}", "ts": start, "dur": dur, "args": {"correlation": k}})
    return events


def test_the_span_parser_attributes_each_calls_kernels_to_its_range():
    events = _trace([("d2k_call_0", 0, 10), ("d2k_call_1", 100, 10)], [(2, 20, 5), (4, 30, 5), (102, 120, 7)])
    spans = spans_from_events(events, 2)
    assert spans["span_samples_ms"] == [0.015, 0.007]
    assert spans["kernels_per_call"] == [2, 1]


def test_the_lead_gap_is_the_devices_idle_time_before_a_queued_call_only():
    # call 0's kernel was queued (launched at 2) behind the hold (launched before the range, ending
    # at 18) and started at 20: 2 us of the device's own start-up. Call 1's was launched at 102,
    # after everything before it had ended: that gap is the host's, and none is recorded.
    events = _trace([("d2k_call_0", 0, 10), ("d2k_call_1", 100, 10)], [(-5, 10, 8), (2, 20, 5), (4, 30, 5), (102, 120, 7)])
    spans = spans_from_events(events, 2)
    assert spans["span_samples_ms"] == [0.015, 0.007]
    assert spans["span_lead_gap_us"] == [2.0, None]


@pytest.mark.parametrize("ranges", [
    [("d2k_call_0", 0, 10), ("d2k_call_0", 1, 5), ("d2k_call_1", 100, 10)],   # a second range for call 0
    [("d2k_call_0", 0, 10), ("d2k_call_1", 100, 10), ("d2k_call_7", 101, 3)],  # a call that was not timed
    [("d2k_call_0", 0, 10), ("d2k_call_1", 100, 10), ("d2k_call_x", 101, 3)],  # not a call number
])
def test_the_span_parser_refuses_a_range_the_harness_did_not_open(ranges):
    with pytest.raises(TimerTampered, match="d2k_call range"):
        spans_from_events(_trace(ranges, [(2, 20, 5), (102, 120, 7)]), 2)


def test_a_missing_range_leaves_its_call_without_work_and_the_trusted_side_flags_it():
    spans = spans_from_events(_trace([("d2k_call_0", 0, 10)], [(2, 20, 5), (102, 120, 7)]), 2)
    assert spans["span_samples_ms"] == [0.005, 0.0]
    record = finalize({"workload": "w", "status": "passed", "reason": None, "seconds": 1.0, "own_kernels": 1,
                       "timing": {"method": "cuda_events", "samples_ms": [0.02, 0.02], **spans}}, CONTEXT)
    assert record["status"] == "timing_suspect"
    assert "1 of 2 timed calls have no device work" in record["reason"]


# -- the trusted side's cross-check against the profiler's probe -------------------------------------
def _timing(samples_ms, probe_us, side_streams=False, **extra):
    return {"method": "cuda_events", "samples_ms": samples_ms,
            "profile": {"available": True, "device_time_us": probe_us, "side_streams": side_streams}, **extra}


def test_a_median_under_half_the_probes_kernel_time_is_suspect():
    flags = timing_flags(_timing([0.003] * 5, 700.0), [0.003] * 5)
    assert flags and "under half the 700.00 us of kernel time" in flags[0]


def test_an_honest_window_at_or_above_the_probe_is_not_flagged():
    # the cold timed calls against a warm probe: 0.98x at the closest on the H200 records
    assert timing_flags(_timing([0.0982] * 5, 100.0), [0.0982] * 5) == []
    assert timing_flags(_timing([0.005] * 5, 1.65), [0.005] * 5) == []  # a short kernel: launch costs on top


def test_the_probe_check_skips_an_unavailable_probe_and_old_side_stream_records():
    assert timing_flags(_timing([0.003] * 5, 700.0, side_streams=True), [0.003] * 5) == []  # no busiest_stream_us
    assert timing_flags({"method": "cuda_events", "samples_ms": [0.003] * 5, "profile": {"available": False}},
                        [0.003] * 5) == []


def test_a_probe_without_device_work_is_suspect():
    # the probe's outputs must be written on the device; none there means they were made elsewhere
    timing = _timing([0.003] * 5, 0.0)
    timing["profile"]["kernels"] = 0
    (flag,) = timing_flags(timing, [0.003] * 5)
    assert "probe call launched no device work" in flag
    honest = _timing([0.003] * 5, 1.65)
    honest["profile"]["kernels"] = 1
    assert timing_flags(honest, [0.003] * 5) == []


def test_with_side_streams_the_busiest_stream_bounds_the_median():
    # two streams of 400 us each, overlapping: 800 us of kernels, but a 0.45 ms window is honest
    honest = _timing([0.45] * 5, 800.0, side_streams=True, method="events+device_sync")
    honest["profile"]["busiest_stream_us"] = 400.0
    assert timing_flags(honest, [0.45] * 5) == []
    moved = _timing([0.01] * 5, 800.0, side_streams=True, method="events+device_sync")
    moved["profile"]["busiest_stream_us"] = 400.0
    assert "under half the 400.00 us" in timing_flags(moved, [0.01] * 5)[0]


def test_the_probe_check_reads_the_span_where_the_span_is_the_figure():
    # the span (0.7 ms, honest) is the figure: a short event window alone is the other check's business
    timing = _timing([0.003] * 5, 700.0, span_samples_ms=[0.7] * 5)
    flags = timing_flags(timing, [0.003] * 5)
    assert len(flags) == 1 and "longer than the event window" in flags[0]


# -- instance attributes the class check does not see ------------------------------------------------
class _Timer:
    def __init__(self):
        self.flush = [0] * 8
        self._recording = False

    def flush_l2(self):
        self.flush[:] = [0] * len(self.flush)


def _guard():
    from d2k.execution.timing import TimerGuard

    guard = TimerGuard()
    guard.protect("_Timer.flush_l2", _Timer, "flush_l2")
    guard.freeze(guard, mutable=("frozen",))
    return guard


@pytest.mark.parametrize("attack, what", [
    (lambda timer, guard: setattr(timer, "flush_l2", lambda: None), "flush_l2"),   # shadows the method
    (lambda timer, guard: setattr(timer, "flush", [0]), "flush"),                    # a one-element flush
    (lambda timer, guard: setattr(guard, "perf_counter", lambda: 0.0), "perf_counter"),
    # an entry of the guard's table of originals replaced, then the class patched to match it
    (lambda timer, guard: (guard.items.__setitem__("_Timer.flush_l2", (_Timer, "flush_l2", None)),
                           setattr(_Timer, "flush_l2", None)), "items"),
])
def test_a_changed_attribute_of_the_timer_or_the_guard_is_tampering(attack, what):
    original = _Timer.flush_l2
    try:
        guard, timer = _guard(), _Timer()
        guard.freeze(timer, mutable=("_recording",))
        timer._recording = True  # the one attribute the timer changes itself
        guard.check()
        attack(timer, guard)
        with pytest.raises(TimerTampered, match=what):
            guard.check()
        guard.thaw(timer)
    finally:
        _Timer.flush_l2 = original


# -- kernel-less: the profiler's names against the candidate's launch counter ------------------------
@pytest.mark.parametrize("names, launches, own", [
    (["void at::native::vectorized_elementwise_kernel<4>", "void at::native::reduce_kernel<512>"], 5, False),
    (["_gemm_persistent_kernel"], 3, True),        # a Triton GEMM: its name has only a weak marker
    (["gemv2T_kernel_val<int, float>"], 0, False),   # cuBLAS's GEMV with no launch of the solution's own
    (["_rmsnorm_kernel", "void at::native::copy_kernel"], 0, True),
])
def test_own_kernels_on_a_gpu(names, launches, own):
    from d2k.execution.worker import Checker

    checker = Checker.__new__(Checker)
    checker.job = {"solution": {"kind": "file"}}
    checker.triton_launches = launches
    assert checker.own_kernels({"profile": {"available": True, "kernel_names": names}}) is own


# -- the timing reply's numbers, checked on the trusted side ------------------------------------------
@pytest.mark.parametrize("timing, malformed", [
    ({"samples_ms": [0.1, 0.2], "span_samples_ms": [0.05, 0.06], "kernels_per_call": [2, 2], "triton_launches": 3},
     None),
    ({"samples_ms": ["x"]}, "samples_ms"),
    ({"samples_ms": [0.1], "span_samples_ms": [float("nan")]}, "span_samples_ms"),
    ({"samples_ms": [True]}, "samples_ms"),
    ({"samples_ms": [0.1], "kernel_sum_ms": {"0": 1.0}}, "kernel_sum_ms"),
    ({"samples_ms": [0.1], "triton_launches": "9"}, "triton_launches"),
    # the CUDA loop's diagnostics as it writes them, and forged ones (a 401-digit count once broke
    # the run's notes after the record was stored: review, session 26)
    ({"samples_ms": [0.1], "late_calls": 3, "late_worst_us": 61.5, "hold_us": 25.0, "profiler_slowed": None,
      "waits_for_device": False}, None),
    ({"samples_ms": [0.1], "profiler_slowed": 1.4, "waits_for_device": True}, None),
    ({"samples_ms": [0.1], "late_calls": 10 ** 400}, "late_calls"),
    ({"samples_ms": [0.1], "late_calls": -1}, "late_calls"),
    ({"samples_ms": [0.1], "late_calls": True}, "late_calls"),
    ({"samples_ms": [0.1], "late_worst_us": float("inf")}, "late_worst_us"),
    ({"samples_ms": [0.1], "hold_us": "25"}, "hold_us"),
    ({"samples_ms": [0.1], "hold_us": None}, "hold_us"),
    ({"samples_ms": [0.1], "profiler_slowed": "fast"}, "profiler_slowed"),
    ({"samples_ms": [0.1], "waits_for_device": 0}, "waits_for_device"),
])
def test_a_timing_reply_whose_numbers_are_not_numbers_fails_on_the_trusted_side(timing, malformed):
    from d2k.execution.worker import malformed_timing

    reason = malformed_timing(timing)
    if malformed is None:
        assert reason is None
    else:
        assert reason and malformed in reason and "timing loop was replaced" in reason


def test_a_device_span_the_job_did_not_ask_for_fails_on_the_trusted_side():
    # before: a span put into the reply (profile_forge_span.py, through a profile hook) became the
    # figure on the CPU interpreter, which never records one
    from d2k.execution.worker import malformed_timing

    forged = {"samples_ms": [0.07, 0.07], "span_samples_ms": [0.0005, 0.0005]}
    assert "did not ask for" in malformed_timing(forged, {"device_span": False})
    assert "did not ask for" in malformed_timing({"samples_ms": [0.1], "span_kernel_names": ["k"]}, {})
    assert malformed_timing(forged, {"device_span": True}) is None


def test_a_call_reply_with_a_malformed_launch_count_fails_on_the_trusted_side():
    from d2k.execution.worker import Checker, CheckFailed

    class _Candidate:
        reply_limit = 1 << 20

        def request(self, header, blobs=None, limit=None):
            return {"ok": True, "outputs": [], "facts": {"triton_launches": "9"}}, []

    checker = Checker.__new__(Checker)
    checker.candidate, checker.triton_launches = _Candidate(), 0
    checker.returned, checker.mutated = [], []
    checker.reply_bytes = lambda workload, inputs, calls: 1 << 20
    with pytest.raises(CheckFailed, match="malformed triton_launches"):
        checker.run_candidate({}, {}, "the solution", reuse=True)


def test_the_span_parser_numbers_the_timed_calls_after_the_probe():
    # on a GPU call 0 is the profiled probe: the timed calls are 1 .. reps, and a range for call 0
    # inside the timed run was opened by the solution
    events = _trace([("d2k_call_1", 0, 10), ("d2k_call_2", 100, 10)], [(2, 20, 5), (102, 120, 7)])
    assert spans_from_events(events, 2, first=1)["span_samples_ms"] == [0.005, 0.007]
    with pytest.raises(TimerTampered, match="d2k_call range"):
        spans_from_events(_trace([("d2k_call_0", 0, 10), ("d2k_call_1", 100, 10)], [(2, 20, 5)]), 2, first=1)
