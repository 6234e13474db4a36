#!/bin/bash
# usage: killtest.sh SIG NAME : start d2k eval on slow.py, wait for the first evaluation in results.jsonl, send SIG to the parent,
# then list leftovers, the store's runs/evaluations, rerun without --force and list again
sig=$1; S=/tmp/redteam_g/kill_$2; rm -rf $S; mkdir -p $S
cp /tmp/redteam_g/lock/slow.py $S/slow.py
cd /work/main
export D2K_DB=$S/d2k.duckdb D2K_WORKDIR=$S/work
setsid .venv/bin/d2k eval rmsnorm $S/slow.py --no-reference --timeout 60 > $S/a.out 2> $S/a.err & pa=$!
for i in $(seq 1 600); do sleep 0.1; grep -qs '"record": "evaluation"' $S/work/runs/*/results.jsonl && break; done
sleep 0.5
echo "children before:"; ps -eo pid,ppid,pgid,cmd | grep -E "d2k\.(execution|cli)|bin/d2k" | grep -v grep | grep "$S\|candidate\|worker" | cut -c1-150
kill -$sig $pa; t0=$(date +%s.%N)
for i in $(seq 1 300); do kill -0 $pa 2>/dev/null || break; sleep 0.1; done
echo "parent gone after $(echo "$(date +%s.%N) - $t0" | bc) s (alive=$(kill -0 $pa 2>/dev/null && echo yes || echo no))"; wait $pa 2>/dev/null; echo "parent rc=$?"
sleep 3
echo "leftovers:"; ps -eo pid,ppid,stat,cmd | grep -E "d2k\.execution" | grep -v grep | cut -c1-150
echo "stderr tail:"; tail -4 $S/a.err | cut -c1-200
.venv/bin/python - $S <<'PY'
import duckdb, sys, glob
c = duckdb.connect(sys.argv[1] + '/d2k.duckdb', read_only=True)
print("runs", c.execute("select run_id, status from runs order by started_at").fetchall())
print("evals", c.execute("select workload_id, status from evaluations").fetchall())
for f in glob.glob(sys.argv[1] + '/work/runs/*/results.jsonl'): print(f, sum('"evaluation"' in l for l in open(f)), "eval lines")
PY
.venv/bin/d2k eval rmsnorm $S/slow.py --no-reference --timeout 60 > $S/b.out 2> $S/b.err; echo "rerun rc=$?"; grep -v "━" $S/b.err | grep -i "skipped\|error\|Trace" | head -3
.venv/bin/python - $S <<'PY'
import duckdb, sys
c = duckdb.connect(sys.argv[1] + '/d2k.duckdb', read_only=True)
print("runs", c.execute("select run_id, status from runs order by started_at").fetchall())
print("evals", c.execute("select workload_id, status, count(*) from evaluations group by all").fetchall())
PY
