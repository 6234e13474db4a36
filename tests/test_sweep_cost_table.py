"""benchmarks/sweep_cost_table.py: issue 17's cost table counts only tasks that ran to the end in
both timing modes. The figures come only from a GPU; checked here is which rows enter the totals."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sweep_cost_table = pytest.importorskip("sweep_cost_table")


def write_call(out: Path, costs: list[dict], evaluations: dict[str, list[dict]]) -> Path:
    out.mkdir()
    (out / "cost.jsonl").write_text("".join(json.dumps(c) + "\n" for c in costs))
    for mode, rows in evaluations.items():
        (out / f"evaluations_{mode}.json").write_text(json.dumps(rows))
    return out


def test_totals_take_complete_pairs_only_and_add_up_over_calls(tmp_path, capsys):
    first = write_call(tmp_path / "call1", [
        {"task": "a", "mode": "events", "wall_s": 10.0, "rc": 0},
        {"task": "a", "mode": "span", "wall_s": 6.0, "rc": 0},
        {"task": "b", "mode": "span", "wall_s": 4.0, "rc": 0},
        {"task": "b", "mode": "events", "wall_s": 9.0, "rc": 124},   # killed by its timeout
        {"task": "c", "mode": "events", "wall_s": 7.0, "rc": 0},     # its span run cut off by the deadline
    ], {"events": [{"task_id": "a", "workload_id": "w1", "status": "passed"},
                   {"task_id": "a", "workload_id": "w2", "status": "failed"}],
        "span": [{"task_id": "a", "workload_id": "w1", "status": "passed"},
                 {"task_id": "a", "workload_id": "w2", "status": "passed"}]})
    second = write_call(tmp_path / "call2", [
        {"task": "d", "mode": "span", "wall_s": 3.0, "rc": 0},
        {"task": "d", "mode": "events", "wall_s": 5.0, "rc": 0},
    ], {})
    assert sweep_cost_table.main([str(first), str(second)]) == 0
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ") and "task" not in line}
    assert "| 0.60 | 1/2 |" in rows["a"]
    assert "exit 124/0" in rows["b"] and "cut off" in rows["c"]
    assert "| 0.60 |" in rows["d"]
    assert "Tasks complete in both modes: 2" in out
    assert "events 15.0 s, span 9.0 s (span / events 0.60)" in out


def test_no_complete_pair_says_so(tmp_path, capsys):
    only = write_call(tmp_path / "call", [{"task": "a", "mode": "events", "wall_s": 1.0, "rc": 0}], {})
    assert sweep_cost_table.main([str(only)]) == 0
    assert "No task ran to the end in both modes." in capsys.readouterr().out


def test_without_a_folder_it_prints_its_usage_and_a_wrong_folder_is_named(tmp_path, capsys):
    assert sweep_cost_table.main([]) == 2
    assert "sweep_cost_table.py [--exclude TASK ...] OUT_DIR" in capsys.readouterr().out
    assert sweep_cost_table.main([str(tmp_path)]) == 2
    assert f"no cost.jsonl in {tmp_path}" in capsys.readouterr().out


def test_a_task_kept_in_a_later_extract_counts_once_and_an_excluded_one_not_at_all(tmp_path, capsys):
    passed = [{"task_id": "a", "workload_id": "w1", "status": "passed"}]
    first = write_call(tmp_path / "call1", [{"task": "a", "mode": "events", "wall_s": 10.0, "rc": 0},
                                            {"task": "a", "mode": "span", "wall_s": 5.0, "rc": 0}],
                       {"events": passed, "span": passed})
    # the next call on the same machine found call 1's store: its extract lists w1 again
    second = write_call(tmp_path / "call2", [{"task": "b", "mode": "events", "wall_s": 1.0, "rc": 0},
                                             {"task": "b", "mode": "span", "wall_s": 4.0, "rc": 0}],
                        {"events": passed, "span": passed})
    assert sweep_cost_table.main(["--exclude", "b", str(first), str(second)]) == 0
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ") and "task" not in line}
    assert "| 0.50 | 1/1 |" in rows["a"]
    assert rows["b"].rstrip().endswith("| — | 0/0 | excluded |")
    assert "Tasks complete in both modes: 1 (1 excluded). Wall time over them: events 10.0 s, span 5.0 s" in out


def test_the_phases_table_splits_seconds_per_mode_where_the_extract_holds_them(tmp_path, capsys):
    def ev(workload, n, check, time, **extra):
        return {"task_id": "a", "workload_id": workload, "status": "passed", "n_samples": n,
                "seconds": check + time + 0.5, "check_s": check, "time_s": time, **extra}

    call = write_call(tmp_path / "call", [
        {"task": "a", "mode": "events", "wall_s": 10.0, "rc": 0},
        {"task": "a", "mode": "span", "wall_s": 8.0, "rc": 0},
        {"task": "b", "mode": "events", "wall_s": 3.0, "rc": 0},    # no span run: not in the phases table
    ], {"events": [ev("w1", 1000, 1.0, 4.0), ev("w2", 1000, 1.0, 2.0)],
        "span": [ev("w1", 300, 1.0, 3.0), ev("w2", 300, 1.0, 3.0, profiler_slowed=1.8, span_skipped="slowed")]})
    assert sweep_cost_table.main([str(call)]) == 0
    out = capsys.readouterr().out
    assert "Where the evaluations' seconds went" in out
    # 2 evaluations, 9.0 s in all (0.5 s each outside the phases), 2.0 s of checks, 6.0 s timing over
    # 2000 calls (3.0 ms a call); events had no fallback, span one
    assert "| a | events | 2 | 9.0 | 2.0 | 6.0 | 2000 | 3.0 | 0 |" in out
    assert "| a | span | 2 | 9.0 | 2.0 | 6.0 | 600 | 10.0 | 1 |" in out
    assert "| b |" not in out.split("Where the evaluations")[1]


def test_without_phases_in_the_extract_there_is_no_phases_table(tmp_path, capsys):
    call = write_call(tmp_path / "call", [
        {"task": "a", "mode": "events", "wall_s": 10.0, "rc": 0},
        {"task": "a", "mode": "span", "wall_s": 8.0, "rc": 0},
    ], {"events": [{"task_id": "a", "workload_id": "w1", "status": "passed", "n_samples": 1000, "seconds": 4.0}]})
    assert sweep_cost_table.main([str(call)]) == 0
    assert "Where the evaluations' seconds went" not in capsys.readouterr().out
