"""The notes after a GPU run that say what a passed figure holds besides the solution's kernels
(d2k.timing_notes), on the figures of session 25's H100 records of gdn_chunk_prefill
(benchmarks/studies/2026-12-05-session25-h100, section 3)."""

from __future__ import annotations

import pytest
from rich.console import Console

from d2k.cli import common, evaluate
from d2k.timing_notes import timing_notes

BASE = {"task_id": "gdn_chunk_prefill", "solution": "expert", "status": "passed", "backend": "cuda"}
# 1x8192: the call reads cu_seqlens on the host, so it was timed by events and every call was late
WAITS = {**BASE, "workload_id": "gdn_prefill_qk8_v16_d128_k_last_1x8192", "median_ms": 0.6525,
         "timing": {"waits_for_device": True, "hold_us": 2000.0},
         "flags": {"host_late": {"calls": 765, "of": 765, "worst_us": 6032.4}}}
# 1x32768: profiled; the span is 496 us over the kernels' own time
GAPS = {**BASE, "workload_id": "gdn_prefill_qk16_v32_d128_k_last_1x32768", "median_ms": 3.6363,
        "span_median_ms": 3.6363, "kernel_sum_median_ms": 3.1402, "timing": {"waits_for_device": False}}
# rmsnorm h4096_t8192's span against its one kernel: nothing outside it worth a note
CLEAN = {**BASE, "task_id": "rmsnorm", "workload_id": "rmsnorm_h4096_t8192", "median_ms": 0.05171,
         "span_median_ms": 0.05171, "kernel_sum_median_ms": 0.05098, "timing": {"waits_for_device": False}}


def test_a_call_that_waits_for_the_device_gets_both_notes():
    notes = timing_notes(WAITS)
    assert len(notes) == 2
    assert "waits for the device mid-call" in notes[0] and "timed by events" in notes[0]
    assert notes[1].startswith("765 of 765 timed calls were issued more slowly than the 2000-us stream hold "
                               "(worst 6032 us late)")


def test_a_call_the_profiler_slowed_is_told_apart_from_a_host_read():
    record = {**BASE, "workload_id": "moe_align_block_size_dsv3_t4096_k8_e256_bs64",
              "timing": {"waits_for_device": True, "profiler_slowed": 2.2}}
    (note,) = timing_notes(record)
    assert note.startswith("the profiler slowed the call 2.20x") and "host read" not in note


def test_idle_time_inside_the_span_is_named_with_its_share():
    (note,) = timing_notes(GAPS)
    assert note.startswith("496 us of its 3636-us device span (14%) is outside its kernels")


@pytest.mark.parametrize("record", [
    CLEAN,
    {**GAPS, "status": "failed"},                            # only passed figures are figures
    {**GAPS, "backend": "interpreter"},                      # an interpreter time is no kernel speed
    {**GAPS, "kernel_sum_median_ms": None},                  # events only: nothing to compare the span with
    {**GAPS, "span_median_ms": 0.012, "kernel_sum_median_ms": 0.004},   # 8 us outside: under the floor
])
def test_no_note_where_the_figure_is_the_kernels_or_there_is_no_figure(record):
    assert timing_notes(record) == []


def test_a_record_read_back_with_odd_json_does_not_break_the_notes():
    odd = {**BASE, "workload_id": "w", "timing": "not a dict", "flags": {"host_late": {"calls": None}}}
    assert timing_notes(odd) == []


def test_huge_or_non_finite_numbers_from_the_candidate_do_not_break_the_notes():
    """The timing fields come from the candidate's process and JSON has integers of any size: a
    401-digit count once raised OverflowError after the run was stored (review, session 26)."""
    huge = 10 ** 400
    forged = {**BASE, "workload_id": "w", "span_median_ms": huge, "kernel_sum_median_ms": 1.0,
              "timing": {"profiler_slowed": huge, "hold_us": huge},
              "flags": {"host_late": {"calls": huge, "of": huge, "worst_us": float("inf")}}}
    notes = timing_notes(forged)
    # the flag still shows; the numbers that cannot be read are left out, not invented
    assert notes == ["the profiler slowed the call 0.00x (its host work bounds it): timed by events without the "
                     "profiler, host work included"]
    assert timing_notes({**forged, "timing": {"waits_for_device": True},
                         "flags": {"host_late": {"calls": 3, "of": huge, "worst_us": float("nan")}}}) == [
        "the call waits for the device mid-call (a host read of a device value, such as .tolist() or .item()): timed "
        "by events, so its figure includes the host's work after the read",
        "3 timed calls were issued more slowly than the stream hold: their event windows may include host time"]


def test_the_run_prints_the_notes_and_bounds_them(monkeypatch):
    console = Console(record=True, width=400, force_terminal=False)
    monkeypatch.setattr(common, "err_console", console)
    many = [{**GAPS, "workload_id": f"w{i}"} for i in range(evaluate.TIMING_NOTES_SHOWN + 3)]
    evaluate._print_timing_notes([WAITS, CLEAN, *many])
    lines = console.export_text().strip().splitlines()
    assert lines[0].startswith("note: gdn_chunk_prefill · expert · gdn_prefill_qk8_v16_d128_k_last_1x8192: "
                               "the call waits for the device")
    assert len(lines) == evaluate.TIMING_NOTES_SHOWN + 1
    # 2 notes of WAITS + 15 of the others, 12 shown
    assert lines[-1].startswith(f"note: {2 + evaluate.TIMING_NOTES_SHOWN + 3 - evaluate.TIMING_NOTES_SHOWN} more such notes")
    assert not any("rmsnorm" in line for line in lines)


def test_the_eager_reference_gets_no_console_note(monkeypatch):
    console = Console(record=True, width=400, force_terminal=False)
    monkeypatch.setattr(common, "err_console", console)
    evaluate._print_timing_notes([{**WAITS, "solution": "reference"}])
    assert console.export_text().strip() == ""


def test_an_eager_stand_in_gets_no_console_note_but_compiled_does(monkeypatch):
    """gdn_chunk_prefill's eager figure is a baseline (performance.eager_stand_in): it is left out
    like a reference; the same baseline label on another task, and compiled, keep their notes."""
    console = Console(record=True, width=400, force_terminal=False)
    monkeypatch.setattr(common, "err_console", console)
    stand_in = {**WAITS, "solution": "baseline:chunked_torch"}
    evaluate._print_timing_notes([stand_in, {**WAITS, "solution": "compiled"},
                                  {**stand_in, "task_id": "mamba2_ssd_chunked"}],
                                 {"gdn_chunk_prefill": "baseline:chunked_torch", "mamba2_ssd_chunked": "reference"})
    lines = console.export_text().strip().splitlines()
    assert [": ".join(line.split(": ")[:2]) for line in lines] == [
        "note: gdn_chunk_prefill · compiled · gdn_prefill_qk8_v16_d128_k_last_1x8192"] * 2 + [
        "note: mamba2_ssd_chunked · baseline:chunked_torch · gdn_prefill_qk8_v16_d128_k_last_1x8192"] * 2
