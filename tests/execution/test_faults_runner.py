"""Faults of the execution path: timeouts, kills of the parent (SIGKILL, SIGINT), memory, stale
probes. After any of them a re-run loses nothing, duplicates nothing and leaves no run 'running'."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest
from conftest import d2k_command

from d2k.content import Benchmark
from d2k.errors import D2KError
from d2k.execution.probe import probe_environment
from d2k.solutions import resolve
from d2k.store import Store
from d2k.supervisor import Limits
from d2k.sweep import Plan, run_sweep

RMS = '''
import torch

def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
'''


def _sweep(tmp_path, name: str, body: str, limits: Limits):
    bench = Benchmark.load(only=["rmsnorm"])
    smoke = sorted(bench.select_workloads("rmsnorm", "smoke"), key=lambda w: w.axes["H"], reverse=True)
    path = tmp_path / f"{name}.py"
    path.write_text(RMS + body)
    store = Store(tmp_path / f"{name}.duckdb")
    result = run_sweep(bench, store, [Plan(resolve(bench, "rmsnorm", str(path)), smoke)], "interpreter", "test", {},
                       limits=limits)
    store.close()
    return {r["workload_id"]: r for r in result.records}, [w.id for w in smoke]


def _uptime_ticks() -> int:
    return int(float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK"))


def _orphaned_candidates(since_ticks: int) -> list[int]:
    """Candidate processes started since then whose parent is gone (reparented to init)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"d2k.execution.candidate" not in (entry / "cmdline").read_bytes():
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == 1 and int(fields[19]) >= since_ticks:  # ppid, starttime
            found.append(int(entry.name))
    return found


def test_a_timeout_fails_that_workload_only_and_leaves_no_candidate_behind(tmp_path):
    # hangs on the H = 256 workload (the first), answers the H = 100 one
    started = _uptime_ticks()
    body = ("\nimport time\ndef run(x, w, eps):\n    if x.shape[1] == 256:\n        time.sleep(10_000)\n"
            "    return _rms(x, w, eps)\n")
    records, order = _sweep(tmp_path, "hangs_once", body, Limits(per_workload_s=6))
    assert records[order[0]]["status"] == "timeout" and "per-workload limit" in records[order[0]]["reason"]
    assert records[order[1]]["status"] == "passed", records[order[1]]["reason"]
    # before: once the sandbox dropped the user, the kernel had cleared the candidate's parent-death
    # signal, and the hanging candidate lived on under init after its worker was killed
    time.sleep(1.0)
    orphans = _orphaned_candidates(started)
    for pid in orphans:
        os.kill(pid, signal.SIGKILL)
    assert orphans == []


def test_a_hanging_import_is_bounded_by_the_per_workload_limit(tmp_path):
    body = "\nimport time\ntime.sleep(10_000)\ndef run(x, w, eps):\n    return _rms(x, w, eps)\n"
    started = time.monotonic()
    records, order = _sweep(tmp_path, "hangs_at_import", body, Limits(per_workload_s=5))
    assert {r["status"] for r in records.values()} == {"timeout"}
    assert "importing the solution" in records[order[0]]["reason"]
    assert time.monotonic() - started < 5 + 30 + 60  # the limit plus the worker's own start, not 300 s


def test_memory_exhaustion_fails_the_workload_and_the_next_runs_in_a_fresh_process(tmp_path):
    # the interpreter's candidate has an address-space limit (32 GiB): 64 GiB cannot be had
    body = ("\nimport torch\ndef run(x, w, eps):\n    if x.shape[1] == 256:\n"
            "        hog = torch.empty(64 << 30, dtype=torch.uint8)\n        hog.fill_(1)\n    return _rms(x, w, eps)\n")
    records, order = _sweep(tmp_path, "hog", body, Limits(per_workload_s=60))
    assert records[order[0]]["status"] in ("error", "crashed")
    assert "memory" in records[order[0]]["reason"].lower() or "alloc" in records[order[0]]["reason"].lower()
    assert records[order[1]]["status"] == "passed", records[order[1]]["reason"]


def test_a_probe_never_reuses_an_earlier_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("D2K_WORKDIR", str(tmp_path / "work"))
    env = probe_environment("interpreter", tmp_path / "work")
    assert env["backend"] == "interpreter"
    # a leftover (or forged) events file with an old answer sits where probes run
    stale = tmp_path / "work" / "environment" / "events-0.jsonl"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text(json.dumps({"event": "env", **env}) + "\n")
    with pytest.raises(D2KError):
        probe_environment("cuda", tmp_path / "work")  # no GPU here: the cuda probe must fail, not reuse


def _rows(db: Path) -> tuple[list, list]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        evals = con.execute("SELECT solution_id, workload_id, count(*) FROM evaluations GROUP BY ALL").fetchall()
        runs = con.execute("SELECT run_id, status FROM runs ORDER BY started_at").fetchall()
    finally:
        con.close()
    return evals, runs


def _workers_of(pid: int) -> list[int]:
    """Live d2k worker or candidate processes whose command line names this test's work dir."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
                status = (entry / "status").read_text()
            except OSError:
                continue
            if b"d2k.execution" in cmd and f"PPid:\t{pid}\n" in status:
                out.append(int(entry.name))
    return out


@pytest.mark.parametrize("sig", [signal.SIGKILL, pytest.param(signal.SIGINT, marks=pytest.mark.slow)], ids=["sigkill", "sigint"])
def test_killing_the_parent_loses_and_duplicates_nothing(tmp_path, sig):
    db = tmp_path / "k.duckdb"
    env = {**os.environ, "D2K_DB": str(db), "D2K_WORKDIR": str(tmp_path / "work")}
    # three tasks, polled often: with two, the whole run once finished in the second between the
    # first stored evaluation and the kill (CI rehearsal, 2026-12-05)
    args = d2k_command("bench", "--tasks", "rmsnorm,silu_and_mul,fused_add_rmsnorm", "--solution", "naive")
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    # wait until the first evaluation is stored, then kill the parent mid-run
    while time.monotonic() < deadline:
        time.sleep(0.1)
        results = list((tmp_path / "work" / "runs").glob("*/results.jsonl"))
        if results and '"record": "evaluation"' in results[0].read_text():
            break
    children = [p for p in _workers_of(proc.pid)]
    os.kill(proc.pid, sig)
    proc.wait(timeout=60)
    time.sleep(2)
    assert not [p for p in children if Path(f"/proc/{p}").exists() and b"d2k" in Path(f"/proc/{p}/cmdline").read_bytes()], \
        "a worker outlived its parent"
    finished = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-2000:]
    evals, runs = _rows(db)
    assert all(n == 1 for *_, n in evals), "an evaluation was stored twice"
    assert len(evals) == 3 * 2, evals  # three tasks x two smoke workloads, none lost
    assert [status for _, status in runs] == ["interrupted", "finished"], runs


def test_a_full_disk_stops_the_run_with_one_line_and_the_rerun_completes(tmp_path):
    """The run folder on a 20 KiB filesystem: it fills up mid-run."""
    import shutil

    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare to mount a tiny filesystem")
    small = tmp_path / "small"
    small.mkdir()
    db = tmp_path / "f.duckdb"
    inner = " ".join(d2k_command("bench", "--tasks", "rmsnorm,silu_and_mul", "--solution", "naive"))
    script = f"mount -t tmpfs -o size=20k tmpfs {small} && D2K_WORKDIR={small} D2K_DB={db} {inner}"
    full = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=600)
    assert full.returncode != 0
    lines = [line for line in full.stderr.strip().splitlines() if line.strip()]
    assert lines and "No space left on device" in lines[-1] and "Traceback" not in full.stderr, full.stderr[-1500:]
    env = {**os.environ, "D2K_DB": str(db), "D2K_WORKDIR": str(tmp_path / "work")}
    again = subprocess.run(d2k_command("bench", "--tasks", "rmsnorm,silu_and_mul", "--solution", "naive"),
                           env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-1500:]
    evals, runs = _rows(db)
    assert len(evals) == 4 and all(n == 1 for *_, n in evals)
    assert [status for _, status in runs] == ["failed", "finished"], runs


def test_solutions_share_a_gpu_only_when_asked_and_a_bad_share_is_refused(monkeypatch):
    from d2k.sweep import parallel_workers

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.delenv("D2K_WORKERS", raising=False)
    monkeypatch.delenv("D2K_GPU_SHARE", raising=False)
    assert parallel_workers("cuda", 10) == 1           # timings never share a device by default
    monkeypatch.setenv("D2K_WORKERS", "8")
    assert parallel_workers("cuda", 10) == 1           # more workers than GPUs is not enough
    monkeypatch.setenv("D2K_GPU_SHARE", "4")
    assert parallel_workers("cuda", 10) == 4
    assert parallel_workers("cuda", 2) == 2            # never more than there are solutions
    monkeypatch.delenv("D2K_WORKERS")
    assert parallel_workers("cuda", 10) == 4           # the share alone is enough
    monkeypatch.setenv("D2K_GPU_SHARE", "many")
    with pytest.raises(D2KError, match="D2K_GPU_SHARE must be a whole number"):
        parallel_workers("cuda", 10)


def test_a_shared_gpu_time_gives_no_speedup(tmp_path):
    """Times taken while solutions shared the GPU are stored (flagged) but never become a speedup."""
    store = Store(tmp_path / "s.duckdb")
    store.sync_content(Benchmark.load(only=["rmsnorm"]))
    store.con.execute("INSERT INTO environments (env_id) VALUES ('gpu')")
    for sid, label in (("ref", "reference"), ("cand", "expert")):
        store.con.execute("INSERT INTO solutions (solution_id, task_id, label) VALUES (?, 'rmsnorm', ?)", [sid, label])
    workload = store.con.execute("SELECT workload_id FROM workloads WHERE task_id = 'rmsnorm' LIMIT 1").fetchone()[0]
    for i, (sid, ms, flags) in enumerate((("ref", 2.0, None), ("cand", 1.0, '{"gpu_shared_by": 4}'))):
        store.con.execute("INSERT INTO evaluations (eval_id, run_id, solution_id, task_id, workload_id, env_id, backend, "
                          "status, median_ms, flags, created_at) VALUES (?, 'r', ?, 'rmsnorm', ?, 'gpu', 'cuda', 'passed', "
                          "?, ?, now())", [f"e{i}", sid, workload, ms, flags])
    row = store.con.execute("SELECT speedup, sol_fraction FROM v_workload_speedup WHERE solution = 'expert'").fetchone()
    assert row == (None, None)
    store.con.execute("UPDATE evaluations SET flags = NULL")
    assert store.con.execute("SELECT speedup FROM v_workload_speedup WHERE solution = 'expert'").fetchone()[0] == 2.0


def test_the_trusted_batch_warns_on_a_gpu_only(monkeypatch):
    """On a GPU the batch flagged honest kernels (session 22's H100 run): a run with it on is told so."""
    from d2k.sweep import trusted_batch_warning

    monkeypatch.delenv("D2K_TIMING", raising=False)
    assert trusted_batch_warning("cuda", {"trusted_batch": True}).startswith("trusted_batch on a GPU")
    assert trusted_batch_warning("cuda", {}) is None
    assert trusted_batch_warning("interpreter", {"trusted_batch": True}) is None
    monkeypatch.setenv("D2K_TIMING", '{"trusted_batch": true}')
    assert trusted_batch_warning("cuda", None) is not None   # the environment's setting counts too
