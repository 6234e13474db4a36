import json, glob, sys
rows = []
def add(src, task, wl, sol, t):
    if not isinstance(t, dict) or not t.get("hold_probe_host_us"):
        return
    rows.append({"src": src, "task": task, "workload": wl, "solution": sol, "plain": t.get("probe_host_us"),
                 "longer": t.get("hold_probe_host_us"), "waits": t.get("waits_for_device"),
                 "slowed": t.get("profiler_slowed"), "issue_us": round((t.get("host_issue_ms") or 0) * 1e3),
                 "window_us": t.get("probe_window_us")})
for f in glob.glob("/tmp/probes/runs/*/results.jsonl"):
    for line in open(f):
        r = json.loads(line)
        if r.get("record") != "evaluation" and "timing" not in r:
            continue
        add(f.split("/")[-2], r.get("task_id"), r.get("workload_id"), r.get("solution"), r.get("timing"))
for f in glob.glob("/work/main/benchmarks/studies/*/data/**/*timing*.json", recursive=True):
    try:
        data = json.load(open(f))
    except Exception:
        continue
    for r in data if isinstance(data, list) else []:
        t = r.get("timing")
        if isinstance(t, str):
            t = json.loads(t)
        add(f.split("/studies/")[1][:40], r.get("task_id"), r.get("workload_id"), r.get("solution") or r.get("label") or r.get("solution_id", "")[:8], t)
json.dump(rows, open("/tmp/probes/rows.json", "w"))
print(len(rows))
for r in rows:
    pl, lo = r["plain"], r["longer"]
    cur = min(lo) - max(pl)
    pair = min(l - p for l, p in zip(lo, pl))
    print(f"{r['src'][:22]:22s} {str(r['workload'])[-34:]:34s} {str(r['solution'])[-14:]:14s} waits={r['waits']!s:5s} cur={cur:8.0f} pair={pair:8.0f} plain={pl} longer={lo} win={r['window_us']}")
