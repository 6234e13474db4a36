#!/bin/bash
# copy A to a scratch file, start d2k eval on it, overwrite it with B 1.0 s later
d=/tmp/redteam_g/swap; rm -rf $d; mkdir -p $d
cp /work/main/tests/adversarial/redteam_g/swap_source_a.py $d/sol.py
cd /work/main
D2K_DB=$d/d2k.duckdb D2K_WORKDIR=$d/work .venv/bin/d2k eval rmsnorm $d/sol.py --no-reference --force --timeout 60 > $d/stdout 2> $d/stderr &
pid=$!
sleep ${1:-1.0}
cp /work/main/tests/adversarial/redteam_g/swap_source_b.py $d/sol.py
wait $pid; echo "rc=$?"
.venv/bin/python - <<'PY'
import duckdb, json, glob
c = duckdb.connect('/tmp/redteam_g/swap/d2k.duckdb', read_only=True)
for sid, src in c.execute("select solution_id, source from solutions").fetchall():
    print("stored solution", sid[:12], "A" if "SOURCE-A" in src else "B" if "SOURCE-B" in src else "?")
print(c.execute("select workload_id, status, solution_id from evaluations").fetchall())
for f in glob.glob('/tmp/redteam_g/swap/work/runs/*/results.jsonl'):
    for line in open(f):
        r = json.loads(line)
        if r["record"] == "solution": print("jsonl solution source:", "A" if "SOURCE-A" in r["source"] else "B")
        if r["record"] == "evaluation": print("jsonl eval", r["workload_id"], r["status"])
for f in glob.glob('/tmp/redteam_g/swap/work/runs/*/*/job-0.json'):
    j = json.load(open(f)); print("job keys", list(j["solution"]))
PY
