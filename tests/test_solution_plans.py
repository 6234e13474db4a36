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
