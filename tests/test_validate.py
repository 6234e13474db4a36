"""`d2k validate` accepts the shipped content and names the file and field of every problem."""

import json

from d2k.content import Benchmark
from d2k.validate import validate


def test_shipped_content_is_valid(root):
    problems, stats = validate(root)
    assert problems == [], "\n".join(map(str, problems))
    assert stats["tasks"] >= 3 and stats["smoke"] >= stats["tasks"]
    bench = Benchmark.load(root)
    for task_id in ("rmsnorm", "bf16_gemm", "flash_attention_prefill"):
        assert len(bench.select_workloads(task_id, "bench")) == 4
        levels = {item.level for item in bench.items(task_id)}
        assert levels == {1, 2, 3}


def _messages(root):
    problems, _ = validate(root)
    return [str(p) for p in problems]


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, f"fixture drift: {old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_unknown_task_field(content_copy):
    _edit(content_copy / "tasks/rmsnorm/task.toml", 'category = "memory"', 'category = "memory"\ncategroy = "x"')
    assert any(m.startswith("tasks/rmsnorm/task.toml: categroy: Extra inputs") for m in _messages(content_copy))


def test_bad_category_value(content_copy):
    _edit(content_copy / "tasks/rmsnorm/task.toml", 'category = "memory"', 'category = "fast"')
    assert any("tasks/rmsnorm/task.toml: category:" in m for m in _messages(content_copy))


def test_eager_stand_in_must_name_a_baseline(content_copy):
    _edit(content_copy / "tasks/rmsnorm/task.toml", 'peak = "bf16"', 'peak = "bf16"\neager_stand_in = "chunked_torch"')
    assert ("tasks/rmsnorm/task.toml: performance.eager_stand_in: no baseline tasks/rmsnorm/baselines/chunked_torch.py"
            in _messages(content_copy))


def test_dependency_cycle(content_copy):
    path = content_copy / "design_rubrics/rmsnorm.toml"
    text = path.read_text()
    # make L1.fp32_one_pass depend on L2.row_per_program, which already depends on it
    marker = 'id = "L1.fp32_one_pass"'
    assert marker in text
    start = text.index(marker)
    dep = text.index("depends_on", start)
    end = text.index("\n", dep)
    path.write_text(text[:dep] + 'depends_on = ["L2.row_per_program"]' + text[end:])
    messages = _messages(content_copy)
    assert any("design_rubrics/rmsnorm.toml: depends_on: dependency cycle" in m for m in messages), messages


def test_unknown_dependency_is_named(content_copy):
    path = content_copy / "design_rubrics/rmsnorm.toml"
    text = path.read_text()
    start = text.index('id = "L1.rsqrt_mul"')
    dep = text.index("depends_on", start)
    end = text.index("\n", dep)
    path.write_text(text[:dep] + 'depends_on = ["L9.nothing"]' + text[end:])
    assert any("items.L1.rsqrt_mul.depends_on: unknown item 'L9.nothing'" in m for m in _messages(content_copy))


def test_missing_smoke_workload(content_copy):
    path = content_copy / "workloads/rmsnorm.jsonl"
    lines = [line for line in path.read_text().splitlines() if '"smoke"' not in line]
    path.write_text("\n".join(lines) + "\n")
    assert "workloads/rmsnorm.jsonl: tag: no smoke workload (the CPU interpreter needs one)" in _messages(content_copy)


def test_missing_axis_and_bad_json(content_copy):
    path = content_copy / "workloads/rmsnorm.jsonl"
    first = json.loads(path.read_text().splitlines()[0])
    del first["axes"]["H"]
    first["id"] = "rmsnorm_broken"
    path.write_text(path.read_text() + json.dumps(first) + "\n")
    assert "workloads/rmsnorm.jsonl[rmsnorm_broken]: axes: missing axis H" in _messages(content_copy)
    path.write_text(path.read_text() + "{not json\n")
    assert any(m.startswith("workloads/rmsnorm.jsonl:") and "invalid JSON" in m for m in _messages(content_copy))


def test_duplicate_workload_id_across_files(content_copy):
    rms = (content_copy / "workloads/rmsnorm.jsonl").read_text().splitlines()[0]
    gemm = content_copy / "workloads/bf16_gemm.jsonl"
    record = json.loads(gemm.read_text().splitlines()[0])
    record["id"] = json.loads(rms)["id"]
    gemm.write_text(gemm.read_text() + json.dumps(record) + "\n")
    duplicate = json.loads(rms)["id"]
    messages = _messages(content_copy)
    assert any(duplicate in m and "workload id also used in workloads/bf16_gemm.jsonl" in m for m in messages), messages


def test_level_must_match_id(content_copy):
    _edit(content_copy / "design_rubrics/rmsnorm.toml", "level = 1", "level = 2")
    assert any("has level 2, its id says L1" in m for m in _messages(content_copy))


def test_a_schema_error_in_an_item_names_the_item_by_its_id(content_copy):
    _edit(content_copy / "design_rubrics/rmsnorm.toml", "level = 1", 'level = "one"')
    messages = _messages(content_copy)
    assert any(m.startswith("design_rubrics/rmsnorm.toml: items.L1.") and m.endswith(".level: Input should be 1, 2 or 3")
               for m in messages), messages


def test_missing_reference_function(content_copy):
    path = content_copy / "tasks/rmsnorm/reference.py"
    path.write_text(path.read_text().replace("def reference(", "def reference_renamed("))
    assert "tasks/rmsnorm/reference.py: reference: no top-level function reference()" in _messages(content_copy)


def test_bad_shape_expression(content_copy):
    _edit(content_copy / "tasks/rmsnorm/task.toml", 'shape = ["T", "H"]', 'shape = ["T", "H.real"]')
    assert any("tasks/rmsnorm/task.toml: signature.inputs.0.shape" in m and "not allowed" in m for m in _messages(content_copy))


def test_orphan_workload_file(content_copy):
    (content_copy / "workloads/ghost.jsonl").write_text("")
    assert "workloads/ghost.jsonl: no task folder of that id" in _messages(content_copy)



def test_input_name_lists_must_name_inputs(content_copy):
    # a misspelt name in FIXED_INPUTS or UNPERTURBED_WHEN_FRESH would silently change nothing
    path = content_copy / "tasks/moe_grouped_topk_routing/reference.py"
    _edit(path, 'UNPERTURBED_WHEN_FRESH = ("router_logits", "bias")', 'UNPERTURBED_WHEN_FRESH = ("router_logit", "bias")')
    assert ("tasks/moe_grouped_topk_routing/reference.py: UNPERTURBED_WHEN_FRESH: names no input of the signature: "
            "router_logit (inputs: router_logits, bias, n_group, topk_group, top_k, routed_scaling_factor)"
            ) in _messages(content_copy)
    _edit(path, 'UNPERTURBED_WHEN_FRESH = ("router_logit", "bias")', "UNPERTURBED_WHEN_FRESH = tuple(ALL)")
    assert ("tasks/moe_grouped_topk_routing/reference.py: UNPERTURBED_WHEN_FRESH: must be a literal set, tuple or "
            "list of input names") in _messages(content_copy)
