"""Reads the session-21 driver's stores (/tmp/s21_rowcache_*/r.duckdb, the last six, oldest first)
and prints, per evaluation, whether fresh inputs were in effect, the perturbed inputs and the
checked calls. Output of the study's run: data/fresh_flag_check.txt.
    .venv/bin/python benchmarks/studies/2026-12-05-row-stat-audit/fresh_flag_check.py
"""
import duckdb, glob, os, json
for d in sorted(glob.glob("/tmp/s21_rowcache_*"), key=os.path.getmtime)[-6:]:
    db = os.path.join(d, "r.duckdb")
    if not os.path.exists(db): continue
    con = duckdb.connect(db, read_only=True)
    for sol, wl, t, n in con.execute("select solution_id, workload_id, timing, n_samples from evaluations order by workload_id").fetchall():
        t = json.loads(t) if isinstance(t, str) else (t or {})
        print(os.path.basename(d), wl.replace("moe_align_block_size_", ""), sol[:12], "fresh=", t.get("fresh_inputs"),
              "timed_calls=", n, "perturbed=", t.get("perturbed_inputs"), "checked=", t.get("checked_calls"))
