"""Static judge v3: the engine reads public code as it is written elsewhere (autograd Functions,
module-level aliases, config dicts from helpers, persistent loops, in-place through host aliases)."""

import ast
import textwrap

import pytest

from d2k.content import Benchmark
from d2k.judge import signals
from d2k.judge.facts import extract
from d2k.judge.pipeline import takes_gradient
from d2k.judge.program import Program


@pytest.fixture(scope="module")
def bench():
    return Benchmark.load()


def facts_of(source, entry="run", backward=True):
    return extract(source, "s.py", entry=entry, backward=backward)


def holds(facts, signal) -> bool:
    return signals.evaluate(signal, facts).holds


HEADER = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl
''')

AUTOGRAD = HEADER + textwrap.dedent('''
    @triton.jit
    def _fwd_kernel(X, Y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * 2, mask=offs < n)

    @triton.jit
    def _bwd_kernel(DY, DX, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(DX + offs, tl.load(DY + offs, mask=offs < n) * 2, mask=offs < n)

    class _Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = torch.empty_like(x)
            _fwd_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
            return y

        @staticmethod
        def backward(ctx, dy):
            dx = torch.empty_like(dy)
            _bwd_kernel[(triton.cdiv(dy.numel(), 1024),)](dy, dx, dy.numel(), BLOCK=1024)
            return dx

    def double(x):
        return _Double.apply(x)
''')


def test_a_kernel_reached_through_an_autograd_function_is_judged_and_its_backward_only_with_a_gradient():
    forward_only = facts_of(AUTOGRAD, entry="double", backward=False)
    assert forward_only.status == "ok" and [k.name for k in forward_only.kernels] == ["_fwd_kernel"]
    with_gradient = facts_of(AUTOGRAD, entry="double", backward=True)
    assert sorted(k.name for k in with_gradient.kernels) == ["_bwd_kernel", "_fwd_kernel"]
    # the entry named as the Function's forward: the harness takes the gradient through the Function
    entry_forward = facts_of(AUTOGRAD, entry="_Double.forward", backward=True)
    assert sorted(k.name for k in entry_forward.kernels) == ["_bwd_kernel", "_fwd_kernel"]
    assert [k.name for k in facts_of(AUTOGRAD, entry="_Double.forward", backward=False).kernels] == ["_fwd_kernel"]


def test_the_tasks_that_take_a_gradient(bench):
    taking = {t for t in bench.tasks if takes_gradient(bench.task(t))}
    assert {"cross_entropy_fwd_bwd", "layernorm_backward", "fused_linear_cross_entropy"} <= taking
    assert not taking & {"rmsnorm", "fused_add_rmsnorm", "flash_attention_prefill", "softmax_vocab"}


def test_a_kernel_local_named_like_a_host_function_does_not_reach_it():
    facts = facts_of(HEADER + textwrap.dedent('''
        @triton.jit
        def _norm_kernel(X, Y, n, BLOCK: tl.constexpr):
            cols = tl.arange(0, BLOCK)
            x = tl.load(X + cols, mask=cols < n)
            rms_norm = x * tl.math.rsqrt(tl.sum(x * x, axis=0) / n)
            tl.store(Y + cols, rms_norm, mask=cols < n)

        @triton.jit
        def _other_kernel(X, n, BLOCK: tl.constexpr):
            tl.store(X + tl.arange(0, BLOCK), 0.0)

        def rms_norm(x):
            _other_kernel[(1,)](x, x.numel(), BLOCK=1024)

        def run(x):
            y = torch.empty_like(x)
            _norm_kernel[(1,)](x, y, x.shape[-1], BLOCK=1024)
            return y
    '''))
    assert [k.name for k in facts.kernels] == ["_norm_kernel"] and facts.unreached == ["_other_kernel"]


def test_calls_through_module_level_aliases_are_read_as_the_aliased_function():
    facts = facts_of(HEADER + textwrap.dedent('''
        tl_exp2 = tl.exp2
        if triton.__version__ >= "3.0.0":
            fast_expf = tl.math.exp
        else:
            fast_expf = tl.math.fast_expf

        @triton.jit
        def _kernel(X, Y, n, BLOCK: tl.constexpr):
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
            for start in range(0, n, BLOCK):
                x = tl.load(X + start + tl.arange(0, BLOCK))
                acc += tl_exp2(x) + fast_expf(x)
            tl.store(Y + tl.arange(0, BLOCK), acc)

        def run(x):
            y = torch.empty(1024, device=x.device)
            _kernel[(1,)](x, y, x.numel(), BLOCK=1024)
            return y
    '''))
    assert holds(facts, {"kind": "call", "name": "exp2", "in_loop": True})
    assert holds(facts, {"kind": "call", "name": "tl.math.exp"})
    assert holds(facts, {"kind": "loop", "contains_call": "exp2"})


LAUNCH = HEADER + textwrap.dedent('''
    @triton.jit
    def _row_kernel(X, Y, n_rows, n_cols, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
            x = tl.load(X + row * n_cols + cols, mask=cols < n_cols)
            tl.store(Y + row * n_cols + cols, x, mask=cols < n_cols)

    def _meta(block):
        if block > 4096:
            num_stages = 2
        else:
            num_stages = 3
        return 4, num_stages

    def _config(n):
        block = triton.next_power_of_2(n)
        if block <= 4096:
            return dict(BLOCK=block, num_warps=4)
        return {"BLOCK": block, "num_warps": 16}

    def run(x):
        y = torch.empty_like(x)
        cfg = _config(x.shape[1])
        num_warps, num_stages = _meta(cfg["BLOCK"])
        _row_kernel[(132,)](x, y, x.shape[0], x.shape[1], BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"],
                            num_stages=num_stages)
        return y
''')


def test_a_launch_keyword_value_is_followed_through_a_helpers_return():
    facts = facts_of(LAUNCH)
    assert holds(facts, {"kind": "keyword", "name": "num_stages", "value": "3"})
    assert holds(facts, {"kind": "keyword", "name": "num_stages", "value": "2"})
    assert not holds(facts, {"kind": "keyword", "name": "num_stages", "value": "4"})


def test_num_warps_from_a_config_dict_built_by_a_helper_counts_as_chosen_by_width():
    facts = facts_of(LAUNCH)
    assert holds(facts, {"kind": "value", "of": "num_warps", "varies": True})
    assert holds(facts, {"kind": "value", "of": "num_warps", "min": 16})
    assert not holds(facts, {"kind": "value", "of": "num_warps", "min": 32})
    program = Program(LAUNCH)
    v = program.value(ast.parse('cfg["num_warps"]', mode="eval").body, program.funcs["run"])
    assert v.numbers == frozenset({4, 16})


def test_num_warps_computed_by_a_helper_from_the_block_size_counts_as_chosen_by_width():
    facts = facts_of(HEADER + textwrap.dedent('''
        def calculate_settings(n):
            BLOCK_SIZE = triton.next_power_of_2(n)
            num_warps = 4
            if BLOCK_SIZE >= 32768:
                num_warps = 32
            elif BLOCK_SIZE >= 8192:
                num_warps = 16
            elif BLOCK_SIZE >= 2048:
                num_warps = 8
            return BLOCK_SIZE, num_warps

        @triton.jit
        def _k(X, n, BLOCK: tl.constexpr):
            tl.store(X + tl.arange(0, BLOCK), 0.0, mask=tl.arange(0, BLOCK) < n)

        def run(x):
            BLOCK, num_warps = calculate_settings(x.shape[-1])
            _k[(x.shape[0],)](x, x.shape[-1], BLOCK=BLOCK, num_warps=num_warps)
    '''))
    assert holds(facts, {"kind": "value", "of": "num_warps", "varies": True})
    assert holds(facts, {"kind": "value", "of": "num_warps", "min": 16})


def test_a_grid_stride_row_loop_is_not_a_column_loop():
    facts = facts_of(LAUNCH)
    assert holds(facts, {"kind": "loop", "contains_call": "load", "grid_stride": True})
    assert not holds(facts, {"kind": "loop", "contains_call": "load", "grid_stride": False})
    columns = facts_of(HEADER + textwrap.dedent('''
        @triton.jit
        def _k(X, n, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            for c in range(0, n, BLOCK):
                tl.store(X + row * n + c + tl.arange(0, BLOCK), tl.load(X + row * n + c + tl.arange(0, BLOCK)) * 2)

        def run(x):
            _k[(x.shape[0],)](x, x.shape[1], BLOCK=1024)
    '''))
    assert holds(columns, {"kind": "loop", "contains_call": "load", "grid_stride": False})
    assert signals.check({"kind": "loop", "grid_stride": "yes"}) != []


INPLACE = HEADER + textwrap.dedent('''
    @triton.jit
    def _scale(X, OUT, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(OUT + offs, tl.load(X + offs, mask=offs < n) * 2, mask=offs < n)

    def _launch(x, out):
        _scale[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)

    def run(x, inplace=True):
        out = x if inplace else torch.empty_like(x)
        _launch(x, out)
        return out
''')


def test_a_store_through_an_output_that_the_host_aliases_to_the_input_is_in_place():
    assert holds(facts_of(INPLACE), {"kind": "store_to_input"})
    copy = INPLACE.replace("out = x if inplace else torch.empty_like(x)", "out = torch.empty_like(x)")
    assert not holds(facts_of(copy), {"kind": "store_to_input"})
