"""A task whose inputs are all integers (moe_align_block_size: routing ids) had no input perturbed
between timed calls, so a result cached by tensor identity stayed right and a solution could do
its work once per input set instead of once per call (CPU interpreter, 2026-12-04: this test's
caching solution passed). Integer inputs are perturbed now, except the offsets a task marks fixed."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from d2k.content import Benchmark, find_root
from d2k.execution import sandbox, wire
from d2k.solutions import resolve
from d2k.store import Store
from d2k.supervisor import Limits
from d2k.sweep import Plan, run_sweep

pytestmark = pytest.mark.skipif(not sandbox.namespaces_available(),
                                reason="unshare --mount --net --pid is refused here")


def _caching_solution(tmp_path: Path) -> Path:
    """The task's reference, computed once per topk_ids tensor and served from a cache after that,
    in the timing loop only (the correctness trials' inputs can reuse a freed address, and a stale
    hit there failed the file in a trial instead: CI, 2026-12-05)."""
    source = (find_root() / "tasks" / "moe_align_block_size" / "reference.py").read_text()
    tree = ast.parse(source)
    keep = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
            or (isinstance(node, ast.FunctionDef) and node.name in ("_segments", "reference"))]
    body = ast.unparse(ast.Module(body=keep, type_ignores=[]))
    path = tmp_path / "moe_align_cache.py"
    path.write_text(body + "\nimport sys\n\n_cache = {}\n\n\ndef run(topk_ids, num_experts, block_size):\n"
                    "    timing = any(sys._getframe(k).f_code.co_name == 'measure' for k in range(1, 4))\n"
                    "    if not timing:\n"
                    "        return reference(topk_ids, num_experts, block_size)\n"
                    "    key = (topk_ids.data_ptr(), num_experts, block_size)\n"
                    "    if key not in _cache:\n"
                    "        _cache[key] = tuple(t.clone() for t in reference(topk_ids, num_experts, block_size))\n"
                    "    return _cache[key]\n")
    return path


def test_an_identity_cache_fails_on_a_task_with_only_integer_inputs(tmp_path):
    os.environ["D2K_WORKDIR"] = str(tmp_path / "work")
    bench = Benchmark.load(only=["moe_align_block_size"])
    workloads = bench.select_workloads("moe_align_block_size", "smoke")
    plans = [Plan(resolve(bench, "moe_align_block_size", str(_caching_solution(tmp_path))), workloads),
             Plan(resolve(bench, "moe_align_block_size", "expert"), workloads)]
    store = Store(tmp_path / "ints.duckdb")
    result = run_sweep(bench, store, plans, "interpreter", "test", {}, limits=Limits(per_workload_s=120))
    store.close()
    by_solution: dict[str, list] = {}
    for record in result.records:
        by_solution.setdefault(record["solution_id"], []).append(record)
    cache_id, expert_id = plans[0].solution.solution_id, plans[1].solution.solution_id
    assert [r["status"] for r in by_solution[expert_id]] == ["passed"] * len(workloads)
    statuses = [r["status"] for r in by_solution[cache_id]]
    assert statuses == ["failed"] * len(workloads), [r["reason"] for r in by_solution[cache_id]]
    assert all("timed call" in (r["reason"] or "") for r in by_solution[cache_id])


def test_integer_inputs_are_perturbable_and_fixed_offsets_are_not():
    import torch

    inputs = {"topk_ids": torch.zeros(4, 2, dtype=torch.int32), "cu_seqlens": torch.tensor([0, 3, 7]),
              "mask": torch.ones(4, dtype=torch.bool), "x": torch.ones(3), "one": torch.ones(1), "eps": 1e-6}
    assert wire.perturbable(inputs, {"cu_seqlens"}) == ["topk_ids", "x"]
