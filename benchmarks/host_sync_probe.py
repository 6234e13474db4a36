"""Why do references that synchronise with the host run slower in span mode? (issue 17)

Times one solution per case outside d2k's worker and sandbox, in three profiler settings:
``off`` (CUDA events only), ``cuda`` (torch.profiler with CUDA activity: CUPTI kernel records)
and ``cpu+cuda`` (CPU activity as well, which is what d2k's span mode runs: every aten op is
recorded on the host). Each call is bracketed by events and followed by a synchronize; no
flush and no hold, so the figures isolate the profiler's cost on the host's issue rate.

Usage: python benchmarks/host_sync_probe.py TASK:WORKLOAD:SOLUTION ... > rows.jsonl
(one JSON row per case and setting: median, p10 and p90 of the per-call event windows in us).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from contextlib import nullcontext
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_kernels import run_cases  # noqa: E402

CALLS = 60


def profiler(setting: str):
    from torch.profiler import ProfilerActivity, profile

    if setting == "off":
        return nullcontext()
    activities = [ProfilerActivity.CUDA] if setting == "cuda" else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    return profile(activities=activities)


def time_calls(fn, inputs: dict, setting: str) -> list[float]:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    with profiler(setting):
        for _ in range(CALLS):
            torch.cuda.synchronize()
            start.record()
            fn(**inputs)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3)
    return samples


def main(argv: list[str]) -> int:
    def each_setting(task_id, w, solution, fn, inputs):
        for setting in ("off", "cuda", "cpu+cuda", "off"):
            samples = sorted(time_calls(fn, inputs, setting)[5:])
            row = {"teardown_cupti": os.environ.get("TEARDOWN_CUPTI"), "task": task_id, "workload": w["id"],
                   "solution": Path(solution).stem, "profiler": setting,
                   "median_us": round(statistics.median(samples), 2),
                   "p10_us": round(samples[len(samples) // 10], 2), "p90_us": round(samples[len(samples) * 9 // 10], 2)}
            print(json.dumps(row), flush=True)

    run_cases(argv, 3, each_setting)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
