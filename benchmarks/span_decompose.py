"""Where does a short kernel's extra microsecond go? Issue 17's agreement check, taken apart.

d2k's device span (CUPTI's kernel timestamps, read flush, a device-side hold between the flush and
the call) sits 0.5-1.5 us below Nsight Compute's ``gpu__time_duration`` and below a CUDA-graph
replay's per-call figure on every short kernel, while kernels of 30 us and more agree to +-3 %.
This script times the same calls of one solution several ways in one process, each under CUPTI
(torch.profiler, device activity only), so that every term of the graph replay's figure is seen:

  eager_hold    flush, a ~HOLD_US device sleep, the call: what d2k's span mode records
  eager_direct  flush, the call (no sleep): is the kernel slower right behind the flush?
  graph_direct  CUDA graph of N x (flush, call) against N x (flush): graph_replay_timing.py's
                figure ((G1 - G2) / N by events), and under CUPTI the flush's own duration in
                each graph (does the call's dirty data lengthen the next flush?) and the idle
                gaps around the call's kernels
  graph_hold    the same with the sleep between flush and call in both graphs
  graph_warm    N x (call) on one input set, back to back, no flush: the call's kernel time with a
                warm L2 (``busy``: overlapping kernels counted once) and the gap from one kernel
                to the next (negative where programmatic dependent launch overlaps them)

    python3 benchmarks/span_decompose.py [--calls N] TASK:WORKLOAD[:SOLUTION] ... > decompose.jsonl

One JSON line per case; per variant the medians (us) of: ``span`` (first start to last end of the
call's kernels), ``kernel_sum``, ``kernels``, ``flush`` (the flush kernel before the call),
``gap_before`` (idle time between the kernel before the call, flush or sleep, and its first kernel),
``gap_after`` (from its last kernel to the next flush); for graphs also ``per_call_events``
((G1 - G2) / N from event-timed replays), ``per_call_cupti`` (the same from CUPTI's first start
to last end of each replay) and the flush-only graph's ``flush_only_flush`` and
``flush_only_gap_after``, so that per_call_cupti = span + gap_before + gap_after + (flush -
flush_only_flush) - flush_only_gap_after can be checked term by term.
The first line is CUPTI's duration of ncu_calls.py's marker kernel (``torch.cuda._sleep(100)``),
back to back and each behind the flush: the same kernel whose ncu duration the table prints, so
that ncu's per-kernel figure and CUPTI's can be set side by side on a kernel that does no work.
Runs in-process (no sandbox): a measuring tool for the shipped kernels, not a harness.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from graph_replay_timing import capture, input_sets, replay_ms  # noqa: E402
from profile_kernels import parse as parse_case  # noqa: E402

from d2k.content import Benchmark  # noqa: E402
from d2k.execution.timing import trace_events  # noqa: E402

SLEEP_KERNEL = "spin_kernel"  # in the name of torch.cuda._sleep's kernel (CUPTI: "at::<unnamed>::spin_kernel(long)")


def is_sleep(name: str) -> bool:
    return SLEEP_KERNEL in name


def kernels_of(events: list[dict]) -> list[tuple[float, float, str]]:
    """(start us, end us, name) of every kernel in a trace, in start order."""
    out = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), str(e.get("name", "")))
           for e in events if e.get("cat") == "kernel"]
    return sorted(out)


def segment(kernels: list[tuple[float, float, str]], flush_names: set[str], per_flush: int = 1) -> list[dict]:
    """Split a single-stream kernel sequence into calls: each call is the kernels after a flush
    (``per_flush`` consecutive flush kernels; sleep kernels left out) up to the next flush. Per
    call: its span, kernel sum and count, the flush before it, and the idle gaps before its first
    and after its last kernel."""
    calls = []
    i = 0
    while i < len(kernels):
        if kernels[i][2] not in flush_names:
            i += 1
            continue
        j = i + 1
        while j < min(i + per_flush, len(kernels)) and kernels[j][2] in flush_names:
            j += 1
        flush = (kernels[i][0], kernels[j - 1][1], sum(k[1] - k[0] for k in kernels[i:j]))
        previous_end = flush[1]
        while j < len(kernels) and is_sleep(kernels[j][2]):
            previous_end = kernels[j][1]
            j += 1
        start = j
        while j < len(kernels) and kernels[j][2] not in flush_names:
            j += 1
        own = [k for k in kernels[start:j] if not is_sleep(k[2])]
        if own:
            calls.append({
                "span": max(k[1] for k in own) - own[0][0],
                "kernel_sum": sum(k[1] - k[0] for k in own),
                "kernels": len(own),
                "flush": flush[2],
                "gap_before": own[0][0] - previous_end,
                "gap_after": kernels[j][0] - max(k[1] for k in own) if j < len(kernels) else None,
            })
        else:  # a flush with nothing after it (a flush-only graph): its duration still counts
            calls.append({"flush": flush[2],
                          "gap_after": kernels[j][0] - previous_end if j < len(kernels) else None})
        i = j
    return calls


def medians(calls: list[dict]) -> dict:
    keys = sorted({k for c in calls for k in c})
    out = {}
    for key in keys:
        values = [c[key] for c in calls if c.get(key) is not None]
        if values:
            out[key] = round(statistics.median(values), 3)
    out["calls"] = len(calls)
    return out


def busy_us(kernels: list[tuple[float, float, str]]) -> float:
    """The time at least one of ``kernels`` ran: the length of the union of their intervals. Kernels
    that overlap (programmatic dependent launch lets the next one start early) count once."""
    total, reach = 0.0, float("-inf")
    for start, end, _ in sorted(kernels):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def profiled(run) -> list[dict]:
    """Trace events of ``run()`` under CUPTI (device activity only)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return trace_events(prof)


def replay_span_us(graph) -> tuple[float | None, list[dict]]:
    """CUPTI's first start to last end of one replay (None if no kernel was recorded), and the
    replay's trace events."""
    events = profiled(graph.replay)
    ks = kernels_of(events)
    return (ks[-1][1] - ks[0][0]) if ks else None, events


def read_flush():
    """A callable that evicts the L2 by reading twice its size (no dirty lines left behind)."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush_buf = torch.zeros(2 * l2 // 4, dtype=torch.int32, device="cuda")
    sink = torch.zeros((), dtype=torch.int64, device="cuda")

    def flush():
        torch.sum(flush_buf, dim=0, dtype=torch.int64, out=sink)
    return flush


def marker_row(calls: int) -> dict:
    """CUPTI's medians (us) of ncu_calls.py's marker, ``calls`` times back to back and ``calls``
    times each behind the read flush."""
    flush = read_flush()
    torch.cuda._sleep(100)  # loads the kernel outside the profile
    row: dict = {"marker": "torch.cuda._sleep(100)", "calls": calls}
    for name, flushed in (("back_to_back", False), ("behind_flush", True)):
        def body(flushed=flushed):
            for _ in range(calls):
                if flushed:
                    flush()
                torch.cuda._sleep(100)
        durations = [end - start for start, end, kname in kernels_of(profiled(body)) if is_sleep(kname)]
        row[name] = round(statistics.median(durations), 3) if durations else None
    return row


def decompose(bench: Benchmark, task_id: str, workload_id: str, solution: str, calls: int, hold_us: float) -> dict:
    fn, sets = input_sets(bench, task_id, workload_id, solution)
    flush = read_flush()
    flush_kernels = kernels_of(profiled(flush))
    flush_names, per_flush = {k[2] for k in flush_kernels}, max(len(flush_kernels), 1)
    for s in sets:  # compile and autotune outside everything measured
        fn(**s)
    torch.cuda.synchronize()
    # the sleep's cycles for hold_us: timed on an idle device, after a first launch has loaded the
    # kernel (lazy module loading would otherwise land in the window and shorten the hold)
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(100_000)
    end.record()
    torch.cuda.synchronize()
    cycles = int(100_000 * hold_us / max(start.elapsed_time(end) * 1e3, 1e-3))

    def calls_body(with_flush: bool, with_sleep: bool, with_call: bool, one_set: bool = False):
        def body():
            for k in range(calls):
                if with_flush:
                    flush()
                if with_sleep:
                    torch.cuda._sleep(cycles)
                if with_call:
                    fn(**sets[0 if one_set else k % len(sets)])
        return body

    row: dict = {"task": task_id, "workload": workload_id, "solution": solution, "calls": calls,
                 "hold_us": hold_us, "hold_cycles": cycles, "flush_kernels": [k[2] for k in flush_kernels]}
    for name, sleep in (("eager_hold", True), ("eager_direct", False)):
        row[name] = medians(segment(kernels_of(profiled(calls_body(True, sleep, True))), flush_names, per_flush))
    for name, sleep in (("graph_direct", False), ("graph_hold", True)):
        try:
            with_calls = capture(calls_body(True, sleep, True))
            without = capture(calls_body(True, sleep, False))
            g1, g2 = replay_ms(with_calls), replay_ms(without)
            s1, e1 = replay_span_us(with_calls)
            s2, e2 = replay_span_us(without)
            flush_only = medians(segment(kernels_of(e2), flush_names, per_flush))
            row[name] = {
                **medians(segment(kernels_of(e1), flush_names, per_flush)),
                # the flush-only graph's flush and its flush-to-flush gap: (G1 - G2) / N = span +
                # gap_before + gap_after + (flush - flush_only_flush) - flush_only_gap_after
                "flush_only_flush": flush_only.get("flush"),
                "flush_only_gap_after": flush_only.get("gap_after"),
                "per_call_events": round((statistics.median(g1) - statistics.median(g2)) * 1e3 / calls, 3),
                "per_call_cupti": round((s1 - s2) / calls, 3) if s1 is not None and s2 is not None else None,
            }
            del with_calls, without
        except Exception as exc:  # host syncs or host-side state make some calls uncapturable
            row[name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    try:
        # one input set, as ncu_calls.py uses: the data stays in the L2 even where 8 sets would not fit
        warm = capture(calls_body(False, False, True, one_set=True))
        g = replay_ms(warm)
        s, events = replay_span_us(warm)
        ks = kernels_of(events)
        gaps = [b[0] - a[1] for a, b in zip(ks, ks[1:], strict=False)]
        row["graph_warm"] = {"per_call_events": round(statistics.median(g) * 1e3 / calls, 3),
                             "per_call_cupti": round(s / calls, 3) if s is not None else None,
                             "kernel_sum": round(sum(k[1] - k[0] for k in ks) / calls, 3),
                             # kernels may overlap here (programmatic dependent launch): busy counts once
                             "busy": round(busy_us(ks) / calls, 3),
                             "kernels_recorded": len(ks),
                             "gap": round(statistics.median(gaps), 3) if gaps else None}
        del warm
    except Exception as exc:
        row["graph_warm"] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return row


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--hold-us", type=float, default=30.0)
    parser.add_argument("cases", nargs="+", help="TASK:WORKLOAD[:SOLUTION]")
    args = parser.parse_args(argv)
    bench = Benchmark.load(only=sorted({parse_case(c)[0] for c in args.cases}))
    try:
        print(json.dumps(marker_row(args.calls)), flush=True)
    except Exception as exc:
        print(json.dumps({"marker": "torch.cuda._sleep(100)", "error": f"{type(exc).__name__}: {str(exc)[:300]}"}), flush=True)
    for case in args.cases:
        task_id, workload_id, solution = parse_case(case)
        try:
            row = decompose(bench, task_id, workload_id, solution, args.calls, args.hold_us)
        except Exception as exc:
            row = {"task": task_id, "workload": workload_id, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
