"""Every shipped expert and naive solution, and every gold ablation, passes its smoke workloads
under the CPU interpreter."""

import pytest

from d2k.content import Benchmark, find_root, task_ids
from d2k.job_payload import INTERPRETER_TRIALS
from d2k.solutions import resolve
from d2k.store import Store
from d2k.sweep import Plan, run_sweep

CASES = [(t, s) for t in task_ids(find_root()) for s in ("expert", "naive")
         if (find_root() / "tasks" / t / f"{s}.py").is_file()]
# every gold-labelled ablation must stay correct (a property is labelled on a still-correct variant)
GOLD = sorted((p.parent.name, str(p)) for p in (find_root() / "judges" / "gold").glob("*/*.py"))


# Each case costs two process starts (about 4 s of CPU under the interpreter) and CI has two cores:
# the experts run by default; the naive kernels and the gold ablations (about a hundred files) are
# slow cases, run on demand (`pytest -m slow`).
PARAMS = [pytest.param(t, n, id=f"{t}-{n}", marks=[pytest.mark.slow] if n == "naive" else []) for t, n in CASES] + \
         [pytest.param(t, n, id=f"{t}-{n.rsplit('/', 1)[-1]}", marks=pytest.mark.slow) for t, n in GOLD]


@pytest.mark.parametrize("task_id, name", PARAMS)
def test_passes_smoke_under_interpreter(tmp_path, task_id, name):
    bench = Benchmark.load(only=[task_id])
    smoke = bench.select_workloads(task_id, "smoke")
    store = Store(tmp_path / "s.duckdb")
    # correctness only: the interpreter's timing path is covered by the isolation and corpus tests
    result = run_sweep(bench, store, [Plan(resolve(bench, task_id, name), smoke)], "interpreter", "test", {}, timed=False)
    store.close()
    assert len(result.records) == len(smoke)
    failures = [f"{r['workload_id']}: {r['status']}: {r['reason']}" for r in result.records if r["status"] != "passed"]
    assert not failures, "\n".join(failures)
    for record in result.records:
        # a shipped or gold kernel launches kernels of its own: never flagged kernel-less
        assert record["kernel_less"] is False, record["workload_id"]
        trials = record["correctness"]["trials"]
        assert len(trials) == min(bench.task(task_id).correctness.trials, INTERPRETER_TRIALS)
