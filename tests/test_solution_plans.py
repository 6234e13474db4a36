"""Which solutions a run times as a task's eager figure: the reference, or the baseline a task names
as its stand-in (performance.eager_stand_in), and what `d2k bench` plans from the names it is given."""


def test_the_eager_solution_is_the_reference_or_the_named_stand_in(root):
    from d2k.content import Benchmark
    from d2k.solutions import eager, resolve

    bench = Benchmark.load(root, only=["rmsnorm", "gdn_chunk_prefill"])
    assert eager(bench, "rmsnorm").label == "reference"
    stand_in = eager(bench, "gdn_chunk_prefill")
    assert stand_in.kind == "baseline" and stand_in.label == "baseline:chunked_torch"
    # torch.compile of the eager figure: the reference, or the stand-in (not a token-by-token loop)
    assert resolve(bench, "rmsnorm", "compiled").path.name == "reference.py"
    compiled = resolve(bench, "gdn_chunk_prefill", "compiled")
    assert compiled.kind == "compiled" and compiled.path.name == "chunked_torch.py"


def test_bench_plans_time_the_eager_figure_once_and_skip_it_off_the_gpu(root):
    from d2k.content import Benchmark
    from d2k.sweep import bench_plans

    bench = Benchmark.load(root, only=["rmsnorm", "gdn_chunk_prefill"])
    plans = bench_plans(bench, ["expert", "reference", "baselines"], "cuda", "bench")
    labels = {(p.solution.task_id, p.solution.label) for p in plans}
    assert len(plans) == len(labels)  # the stand-in is also a baseline: planned once
    assert ("rmsnorm", "reference") in labels and ("gdn_chunk_prefill", "reference") not in labels
    assert {("gdn_chunk_prefill", "baseline:chunked_torch"), ("gdn_chunk_prefill", "baseline:fla")} <= labels
    off_gpu = bench_plans(bench, ["expert", "reference"], "interpreter", "smoke")
    assert {p.solution.label for p in off_gpu} == {"expert"}


def test_a_task_can_compile_its_reference_with_dynamic_shapes(root):
    """performance.compile_dynamic: fused_moe_experts' compiled solution is torch.compile(...,
    dynamic=True), a solution of its own (its id differs from a static compile of the same file),
    and the evaluation job tells the candidate so; other tasks' compiled solutions are unchanged."""
    from d2k.content import Benchmark
    from d2k.job_payload import evaluation_job
    from d2k.solutions import resolve, sha256

    bench = Benchmark.load(root, only=["rmsnorm", "fused_moe_experts"])
    moe, norm = resolve(bench, "fused_moe_experts", "compiled"), resolve(bench, "rmsnorm", "compiled")
    assert moe.solution_id == sha256("compiled:dynamic:" + moe.source) != sha256("compiled:" + moe.source)
    assert norm.solution_id == sha256("compiled:" + norm.source)

    def job(solution):
        workloads = [w for w in bench.workloads[solution.task_id] if w.tag == "smoke"]
        return evaluation_job(bench, solution, workloads, "interpreter", "/dev/null")["solution"]

    assert job(moe)["compile_dynamic"] is True and job(norm)["compile_dynamic"] is False
    # the flag belongs to the compiled solution only, not to the task's other solutions
    assert job(resolve(bench, "fused_moe_experts", "reference"))["compile_dynamic"] is False


def test_ingest_takes_a_dynamic_compiled_solution_and_still_refuses_an_edited_one(root):
    """A results file from a GPU node names the dynamic compile by its own id: ingest's check that
    an id is the sha256 of its source accepts either compile's prefix, and nothing else."""
    import pytest

    from d2k.content import Benchmark
    from d2k.errors import D2KError
    from d2k.ingest import check_record
    from d2k.solutions import resolve, sha256
    from d2k.sweep import solution_payload

    bench = Benchmark.load(root, only=["rmsnorm", "fused_moe_experts"])
    for task in ("rmsnorm", "fused_moe_experts"):
        record = {"record": "solution", **solution_payload(resolve(bench, task, "compiled"))}
        assert check_record(record, "results.jsonl:1") == "solution"
        edited = {**record, "source": record["source"] + "# faster\n"}
        with pytest.raises(D2KError, match="not the sha256 of its source"):
            check_record(edited, "results.jsonl:1")
    # the prefixes are a compiled solution's only: a file's id hashes its source alone
    moe = resolve(bench, "fused_moe_experts", "compiled")
    as_file = {"record": "solution", **solution_payload(moe), "kind": "file"}
    with pytest.raises(D2KError, match="not the sha256 of its source"):
        check_record(as_file, "results.jsonl:1")
    assert sha256(moe.source) != moe.solution_id


def test_a_dynamic_compile_does_not_recompile_for_new_counts(root, tmp_path):
    """From the task to the candidate's loader: the evaluation job of fused_moe_experts' compiled
    solution becomes a load command (worker.load_request) under which a reference that loops on the
    host over counts read from its input compiles once; rmsnorm's (a static compile) compiles it more
    than once (the shape of fused_moe_experts' reference, whose static compile recompiled on every
    routing). The reference is a small stand-in: the real one takes minutes to compile on a CPU."""
    import torch
    from torch._dynamo.utils import counters

    from d2k.content import Benchmark
    from d2k.execution.candidate import _load
    from d2k.execution.worker import load_request
    from d2k.job_payload import evaluation_job
    from d2k.solutions import resolve

    path = tmp_path / "reference.py"
    path.write_text(
        "import torch\n\n\n"
        "def reference(x, ids):\n"
        "    counts = torch.bincount(ids, minlength=4).tolist()\n"
        "    parts, start = [], 0\n"
        "    for n in counts:\n"
        "        if n == 0:\n"
        "            continue\n"
        "        parts.append(x[start:start + n].sum(0) * 2)\n"
        "        start += n\n"
        "    return torch.stack(parts)\n")
    bench = Benchmark.load(root, only=["rmsnorm", "fused_moe_experts"])
    graphs = {}
    generator = torch.Generator().manual_seed(0)
    for task in ("fused_moe_experts", "rmsnorm"):
        job = evaluation_job(bench, resolve(bench, task, "compiled"), [], "interpreter", "/dev/null")
        command = load_request(job, str(path))
        assert command["kind"] == "compiled"
        torch._dynamo.reset()
        counters.clear()
        fn, _ = _load(command)
        for counts in ([3, 5, 2, 6], [4, 4, 3, 5], [2, 7, 4, 3]):
            x = torch.randn(16, 8, generator=generator)
            ids = torch.repeat_interleave(torch.arange(4), torch.tensor(counts))
            expected = torch.stack([part.sum(0) * 2 for part in torch.split(x, counts)])
            # the compiled sum may add in another order: fp32 rounding of a sum of up to 7 values
            # (a CI run once differed by 2e-5 relative on a value of 9e-3; allclose's default is 1e-5)
            assert torch.allclose(fn(x, ids), expected, rtol=1e-4, atol=1e-6)
        graphs[task] = counters["stats"]["unique_graphs"]
    torch._dynamo.reset()
    assert graphs["fused_moe_experts"] == 1 and graphs["rmsnorm"] > 1, graphs
