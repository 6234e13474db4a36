#!/bin/bash
# usage: ev.sh NAME FILE [extra args]   -> runs d2k eval in /tmp/redteam_g/NAME, prints exit code, time, stderr tail, eval rows
name=$1; file=$2; shift 2
d=/tmp/redteam_g/$name; mkdir -p $d
cd /work/main
start=$(date +%s.%N)
D2K_DB=$d/d2k.duckdb D2K_WORKDIR=$d/work timeout 300 .venv/bin/d2k eval rmsnorm "$file" --no-reference --force --timeout 60 "$@" > $d/stdout 2> $d/stderr
rc=$?
end=$(date +%s.%N)
echo "rc=$rc wall=$(echo "$end - $start" | bc)s"
echo "--- stderr (head 15)"; head -c 3000 $d/stderr | head -15
echo "--- stderr (tail 8)"; tail -8 $d/stderr | cut -c1-300
for r in $d/work/runs/*/results.jsonl; do
  [ -f "$r" ] && /work/main/.venv/bin/python - "$r" <<'PY'
import json,sys
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try: r=json.loads(line)
    except Exception as e: print("BADLINE", e, line[:200]); continue
    if r.get("record")=="evaluation":
        t=r.get("timing") or {}
        print("EVAL", r.get("workload_id"), r.get("status"), "median_ms=",r.get("median_ms"), "reason=",repr((r.get("reason") or "")[:300]), "flags=", json.dumps(r.get("flags"))[:300])
PY
done
