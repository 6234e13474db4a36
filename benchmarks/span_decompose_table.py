"""The table of one decompose_h200.sh call: issue 17's short-kernel offset, term by term.

    python3 benchmarks/span_decompose_table.py OUT_DIR

Per workload (µs): d2k's span and kernel sum (agreement.json, span mode; compare kernel sums with
ncu's, which add kernel durations), the same solution's span behind flush + sleep and behind the
flush alone (eager_hold / eager_direct), the CUDA-graph replay's per-call figure by events and by
CUPTI, and the CUPTI terms of the latter: the call's kernel span inside the graph, the idle gaps
before and after it, how much longer the flush runs after the call than after another flush, and
the flush-only graph's flush-to-flush gap (per call by CUPTI = span + gap before + gap after +
flush difference − flush-only gap). Then the call's busy time with a warm L2 and a warm graph's
per-call figure, and ncu's kernel sum with caches flushed (all) and not (none). ncu's duration of
its marker kernel (a near-empty spin) in each mode is printed above the table, and CUPTI's duration
of the same marker where decompose.jsonl has it. Their difference (ncu all − CUPTI behind the flush)
is ncu's floor a kernel; two columns take it off ncu's kernel sum once per kernel and set d2k's
kernel sum against the rest (session 29's reading, pre-registered for the next run). The last
three do the same for ncu with one read flush a call instead of ncu's flush before every kernel
(`ncu_calls.py --call-flush`, ncu_call.csv; session 30): a call's later kernels then find in L2
what its earlier ones left, as in d2k's timed call.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing_agreement_table import ncu_per_call  # noqa: E402


def fmt(value) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "—"


def main(out: str) -> int:
    out_dir = Path(out)
    rows = [json.loads(line) for line in (out_dir / "decompose.jsonl").read_text().splitlines() if line.strip()]
    cupti_markers = [r for r in rows if "marker" in r]   # CUPTI's figure of ncu's marker (absent before session 29)
    rows = [r for r in rows if "marker" not in r]
    d2k: dict = {}  # (task, workload) -> ([span us], [kernel sum us]) over d2k's processes
    if (out_dir / "agreement.json").exists():
        for r in json.loads((out_dir / "agreement.json").read_text()):
            if r.get("status") == "passed" and r.get("span_median_ms") is not None:
                spans, sums = d2k.setdefault((r["task_id"], r["workload_id"]), ([], []))
                spans.append(r["span_median_ms"] * 1e3)
                if r.get("kernel_sum_median_ms") is not None:
                    sums.append(r["kernel_sum_median_ms"] * 1e3)
    ncu, marker = {}, {}
    for cache in ("all", "none", "call"):
        csv_path, cases = out_dir / f"ncu_{cache}.csv", out_dir / f"ncu_{cache}_cases.json"
        if not csv_path.exists():   # the studies keep ncu's CSV gzipped
            csv_path = csv_path.with_name(csv_path.name + ".gz")
        if csv_path.exists() and cases.exists() and cases.read_text().strip():
            try:
                ncu[cache], markers = ncu_per_call(csv_path, cases)
                marker[cache] = statistics.median(markers) if markers else None
            except SystemExit as exc:  # a partial ncu run: say so, keep the rest of the table
                print(f"(ncu {cache}: {exc})")
    for cache, m in marker.items():
        how = ("--cache-control none, one read flush a call (ncu_calls.py --call-flush)" if cache == "call"
               else f"--cache-control {cache}")
        print(f"(ncu {how}: the marker kernel, a 100-cycle spin, {fmt(m)} µs)")
    for m in cupti_markers:
        print(f"(CUPTI: the same marker back to back {fmt(m.get('back_to_back'))} µs, behind the flush "
              f"{fmt(m.get('behind_flush'))} µs{'; ' + m['error'] if 'error' in m else ''})")
    # ncu's floor: what ncu (caches flushed) puts on its marker beyond CUPTI's figure of the same
    # kernel behind the flush; measured on a kernel that does no work, never fitted on the workloads
    behind = [m["behind_flush"] for m in cupti_markers if isinstance(m.get("behind_flush"), (int, float))]
    floor = {c: marker[c] - behind[0] for c in ("all", "call") if behind and isinstance(marker.get(c), (int, float))}
    for c, f in floor.items():
        print(f"(ncu's floor a kernel, {c}: {fmt(f)} µs; 'ncu {c} − floor' subtracts it once per kernel ncu saw)")
    print()
    print("| workload | d2k span | d2k kernel sum | eager_hold span | eager_direct span | graph per call (events) "
          "| graph per call (CUPTI) | graph: call span | gap before | gap after | flush after call − after flush "
          "| flush-only gap | warm busy | warm graph per call | ncu all | ncu none | ncu all − floor "
          "| d2k kernel sum vs ncu all − floor | ncu call | ncu call − floor | d2k kernel sum vs ncu call − floor |")
    print("|---|" + "---|" * 20)
    for r in rows:
        key = (r["task"], r["workload"])
        if "error" in r:
            print(f"| {r['workload']} | error: {r['error'][:80]} |" + " |" * 19)
            continue
        g, h, d, w = r.get("graph_direct", {}), r.get("eager_hold", {}), r.get("eager_direct", {}), r.get("graph_warm", {})
        flush_extra = (g["flush"] - g["flush_only_flush"]
                       if isinstance(g.get("flush"), float) and isinstance(g.get("flush_only_flush"), float) else None)
        spans, sums = d2k.get(key, ([], []))
        span = statistics.median(spans) if spans else None
        kernel_sum = statistics.median(sums) if sums else None
        ncu_cells = [fmt(ncu[c][key]["sum_us"]) if c in ncu and key in ncu[c] else "—" for c in ("all", "none", "call")]
        net = {c: ncu[c][key]["sum_us"] - floor[c] * ncu[c][key]["kernels"]
               for c in floor if c in ncu and key in ncu[c]}
        vs_net = {c: f"{(kernel_sum / net[c] - 1) * 100:+.1f} %" if net.get(c) and kernel_sum is not None else "—"
                  for c in ("all", "call")}
        print(f"| {r['workload']} | {fmt(span)} | {fmt(kernel_sum)} | {fmt(h.get('span'))} | {fmt(d.get('span'))} "
              f"| {fmt(g.get('per_call_events'))} | {fmt(g.get('per_call_cupti'))} | {fmt(g.get('span'))} "
              f"| {fmt(g.get('gap_before'))} | {fmt(g.get('gap_after'))} | {fmt(flush_extra)} "
              f"| {fmt(g.get('flush_only_gap_after'))} | {fmt(w.get('busy'))} | {fmt(w.get('per_call_events'))} "
              f"| {ncu_cells[0]} | {ncu_cells[1]} | {fmt(net.get('all'))} | {vs_net['all']} "
              f"| {ncu_cells[2]} | {fmt(net.get('call'))} | {vs_net['call']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
