"""benchmarks/span_decompose.py: how a profile's kernel list is cut into calls. The GPU figures
come only from a GPU; what is checked here is that every term lands where it belongs."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
span_decompose = pytest.importorskip("span_decompose")

FLUSH = "reduce_kernel"


def test_calls_split_at_flushes_with_sleeps_left_out_and_gaps_measured():
    ks = [
        (0.0, 30.0, FLUSH), (30.5, 60.5, "spin_kernel"), (62.0, 64.0, "a"), (64.5, 65.5, "b"),
        (66.0, 96.0, FLUSH), (97.0, 100.0, "a"),
        (101.0, 131.0, FLUSH),  # a trailing flush with no call after it
    ]
    calls = span_decompose.segment(ks, {FLUSH})
    assert calls[0] == {"span": 3.5, "kernel_sum": 3.0, "kernels": 2, "flush": 30.0,
                        "gap_before": 1.5, "gap_after": 0.5}
    assert calls[1] == {"span": 3.0, "kernel_sum": 3.0, "kernels": 1, "flush": 30.0,
                        "gap_before": 1.0, "gap_after": 1.0}
    assert calls[2] == {"flush": 30.0, "gap_after": None}
    m = span_decompose.medians(calls)
    assert m["flush"] == 30.0 and m["span"] == 3.25 and m["calls"] == 3


def test_a_flush_only_sequence_gives_flush_durations_and_flush_to_flush_gaps():
    ks = [(0.0, 10.0, FLUSH), (10.25, 20.25, FLUSH), (21.0, 31.5, FLUSH)]
    calls = span_decompose.segment(ks, {FLUSH})
    assert [c["flush"] for c in calls] == [10.0, 10.0, 10.5]
    assert [c["gap_after"] for c in calls] == [0.25, 0.75, None]
    assert "span" not in span_decompose.medians(calls)


def test_a_flush_of_two_kernels_counts_as_one_flush():
    ks = [(0.0, 10.0, FLUSH), (10.5, 11.0, "fill"), (12.0, 14.0, "a"), (15.0, 25.0, FLUSH), (25.5, 26.0, "fill")]
    calls = span_decompose.segment(ks, {FLUSH, "fill"}, per_flush=2)
    assert calls == [{"span": 2.0, "kernel_sum": 2.0, "kernels": 1, "flush": 10.5, "gap_before": 1.0, "gap_after": 1.0},
                     {"flush": 10.5, "gap_after": None}]


def test_the_sleep_is_recognised_by_the_name_cupti_gives_it():
    sleep = "at::(anonymous namespace)::spin_kernel(long)"
    ks = [(0.0, 30.0, FLUSH), (30.5, 60.5, sleep), (61.0, 63.0, "a"),
          (64.0, 94.0, FLUSH), (94.5, 124.5, sleep), (125.0, 155.0, FLUSH)]
    calls = span_decompose.segment(ks, {FLUSH})
    assert calls[0]["span"] == 2.0 and calls[0]["gap_before"] == 0.5 and calls[0]["kernels"] == 1
    # a flush and sleep with no call after them: the gap runs from the sleep's end
    assert calls[1] == {"flush": 30.0, "gap_after": 0.5}


def test_busy_time_counts_overlapping_kernels_once():
    ks = [(0.0, 2.0, "a"), (1.5, 3.0, "a"), (5.0, 6.0, "b"), (5.2, 5.8, "c")]
    assert span_decompose.busy_us(ks) == 4.0
    assert span_decompose.busy_us([]) == 0.0


def write_ncu(folder, cache: str, marker_ns: int, kernel_ns: int, gz: bool = False) -> None:
    """ncu's raw CSV of one call of workload w1 (the marker, then the call's one kernel; ns) and its cases."""
    import gzip
    import json

    text = ('"ID","Kernel Name","gpu__time_duration.sum"\n'
            f'"0","void at::native::(anonymous namespace)::spin_kernel(long)","{marker_ns}"\n'
            f'"1","rms_kernel","{kernel_ns}"\n')
    if gz:
        (folder / f"ncu_{cache}.csv.gz").write_bytes(gzip.compress(text.encode()))
    else:
        (folder / f"ncu_{cache}.csv").write_text(text)
    (folder / f"ncu_{cache}_cases.json").write_text(json.dumps([{"task": "rmsnorm", "workload": "w1", "calls": 1}]))


def test_the_table_prints_cuptis_marker_line_and_reads_gzipped_ncu(tmp_path, capsys):
    import json

    table = pytest.importorskip("span_decompose_table")
    case = {"task": "rmsnorm", "workload": "w1", "eager_hold": {"span": 2.2}, "eager_direct": {"span": 2.3},
            "graph_direct": {"per_call_events": 3.2, "span": 2.2, "flush": 30.5, "flush_only_flush": 30.0},
            "graph_warm": {"busy": 1.7}}
    marker = {"marker": "torch.cuda._sleep(100)", "calls": 40, "back_to_back": 1.15, "behind_flush": 1.31}
    (tmp_path / "decompose.jsonl").write_text(json.dumps(marker) + "\n" + json.dumps(case) + "\n")
    write_ncu(tmp_path, "all", 2270, 3580, gz=True)
    assert table.main(str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "(ncu --cache-control all: the marker kernel, a 100-cycle spin, 2.27 µs)" in out
    assert "(CUPTI: the same marker back to back 1.15 µs, behind the flush 1.31 µs)" in out
    row = next(line for line in out.splitlines() if line.startswith("| w1 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "2.20" and cells[10] == "0.50" and cells[14] == "3.58" and cells[15] == "—"
    # ncu's floor (2.27 on its marker − 1.31 by CUPTI) off its one kernel; no d2k figure to set against it
    assert "(ncu's floor a kernel, all: 0.96 µs;" in out
    assert cells[16] == "2.62" and cells[17] == "—" and cells[18:] == ["—", "—", "—"]
    (tmp_path / "agreement.json").write_text(json.dumps([{"task_id": "rmsnorm", "workload_id": "w1", "status": "passed",
                                                          "span_median_ms": 0.0026, "kernel_sum_median_ms": 0.0026}]))
    assert table.main(str(tmp_path)) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| w1 |"))
    assert row.rstrip().endswith("| 2.62 | -0.8 % | — | — | — |")
    # ncu with one read flush a call (--call-flush): its own marker gives its own floor
    write_ncu(tmp_path, "call", 2000, 3200)
    assert table.main(str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "(ncu --cache-control none, one read flush a call (ncu_calls.py --call-flush): the marker kernel" in out
    assert "(ncu's floor a kernel, call: 0.69 µs;" in out
    row = next(line for line in out.splitlines() if line.startswith("| w1 |"))
    assert row.rstrip().endswith("| 2.62 | -0.8 % | 3.20 | 2.51 | +3.6 % |")
