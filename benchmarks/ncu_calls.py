"""Runs N calls of each solution so that Nsight Compute can time every kernel of every call:

    ncu --clock-control none --cache-control all --metrics gpu__time_duration.sum \
        --profile-from-start off -o rep python3 benchmarks/ncu_calls.py N TASK:WORKLOAD[:SOLUTION] ...
    ncu -i rep.ncu-rep --csv --page raw --print-units base > OUT_DIR/ncu.csv   # + the CASES line as ncu_cases.json
    python3 benchmarks/timing_agreement_table.py OUT_DIR          (benchmarks/trusted_h200.sh does all three)

The independent side of timing v2's agreement check (issue 17): ncu replays each kernel with the
caches flushed (`--cache-control all`) and reports its duration from the hardware, with no events,
no host and none of d2k's code in the measurement. Each call is preceded by a short marker kernel
(ATen's `spin_kernel`, from `torch.cuda._sleep`) so that the kernels can be split back into calls;
the list of cases done is written to stderr as JSON after each case (a line prefixed `CASES `;
the last one is the whole list), in order.

With ``--call-flush`` (run it under ``--cache-control none``) the caches are made cold once per
call, as d2k's timer does, not before every kernel as ncu's cache control does: before each call,
outside the profiled range, a read of a buffer twice the L2's size (a sum, which leaves no dirty
lines), then a synchronisation. A call's second kernel then finds in L2 what its first left there,
as it does in d2k's timed call; under ``--cache-control all`` it reads those bytes from DRAM again.
Runs in-process (no sandbox): a measuring tool for the shipped kernels, not a harness.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_kernels import run_cases  # noqa: E402
from span_decompose import read_flush  # noqa: E402


def main(argv: list[str]) -> int:
    call_flush = "--call-flush" in argv
    argv = [a for a in argv if a != "--call-flush"]
    if len(argv) < 2 or not argv[0].isdigit():
        raise SystemExit("usage: ncu_calls.py N [--call-flush] TASK:WORKLOAD[:SOLUTION] ...")
    calls = int(argv[0])
    done = []
    cudart = torch.cuda.cudart()
    flush = read_flush() if call_flush else None   # the same read of 2 x L2 as span_decompose.py's

    def profiled_calls(task_id, w, solution, fn, inputs):
        if not call_flush:
            cudart.cudaProfilerStart()
        for _ in range(calls):
            if call_flush:  # outside the profiled range: ncu neither times nor serialises it
                flush()
                torch.cuda.synchronize()
                cudart.cudaProfilerStart()
            torch.cuda._sleep(100)  # the marker that separates calls in ncu's kernel list
            fn(**inputs)
            if call_flush:
                torch.cuda.synchronize()
                cudart.cudaProfilerStop()
        torch.cuda.synchronize()
        if not call_flush:
            cudart.cudaProfilerStop()
        done.append({"task": task_id, "workload": w["id"], "solution": solution, "calls": calls})
        # after every case, so that a run cut short by its timeout still names what ncu recorded
        print("CASES " + json.dumps(done), file=sys.stderr, flush=True)

    run_cases(argv[1:], 3, profiled_calls)  # 3 warm-up calls: outside the profiled range
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
