"""The static judge judges what runs (issue 18): the call graph from run(), per-kernel units, values
through the program, partial only where an item defines it, and the parts of the yardstick."""

import textwrap

import pytest

from d2k.content import Benchmark
from d2k.judge import calibration, graph, signals, splits
from d2k.judge.facts import extract
from d2k.judge.static import judge
from d2k.schema import DesignItem


@pytest.fixture(scope="module")
def bench():
    return Benchmark.load()


def verdicts(bench, task, source, entry="run", ran=None):
    facts = extract(textwrap.dedent(source), "s.py", entry=entry, ran=ran)
    return facts, {v.item_id: v for v in judge(facts, bench.items(task))}


RMS_KERNEL = '''
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _rms_fwd(X, W, Y, stride, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.math.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        w = tl.load(W + cols, mask=mask)
        tl.store(Y + row * stride + cols, (x * rstd).to(Y.dtype.element_ty) * w, mask=mask)
'''


def test_a_kernel_never_launched_is_dead_code_and_scores_zero(bench):
    source = RMS_KERNEL + '''
    def run(x, w, eps):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)
    '''
    facts, got = verdicts(bench, "rmsnorm", source)
    assert facts.status == "dead_code" and facts.unreached == ["_rms_fwd"]
    assert {v.verdict for v in got.values()} == {"missing"}
    scores = graph.score(bench.items("rmsnorm"), {k: v.verdict for k, v in got.items()})
    assert scores.combined == 0 and scores.coverage == 1


def test_a_launched_kernel_is_judged_and_evidence_names_it(bench):
    source = RMS_KERNEL + '''
    def _launch(x, w, y, eps):
        block = triton.next_power_of_2(x.shape[1])
        _rms_fwd[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], eps, BLOCK=block, num_warps=max(4, block // 256))

    def run(x, w, eps):
        y = torch.empty_like(x)
        _launch(x, w, y, eps)
        return y
    '''
    facts, got = verdicts(bench, "rmsnorm", source)
    assert facts.status == "ok" and [u.kernel for u in facts.units] == ["_rms_fwd"]
    assert got["L1.fp32_one_pass"].verdict == "implemented"
    assert {e["kernel"] for e in got["L1.rsqrt_mul"].evidence} == {"_rms_fwd"}
    assert got["L3.warps_by_width"].verdict == "implemented"   # num_warps follows the block


def test_num_warps_passed_through_a_variable_holding_a_constant_is_fixed(bench):
    source = RMS_KERNEL + '''
    def run(x, w, eps):
        y = torch.empty_like(x)
        num_warps = 8
        _rms_fwd[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], eps,
                                BLOCK=triton.next_power_of_2(x.shape[1]), num_warps=num_warps)
        return y
    '''
    _, got = verdicts(bench, "rmsnorm", source)
    assert got["L3.warps_by_width"].verdict == "missing"


def test_a_backward_kernels_row_loop_does_not_undo_the_forward_kernels_item(bench):
    source = RMS_KERNEL + '''
    @triton.jit
    def _rms_bwd(DY, X, DX, stride, n_cols, n_rows, BLOCK: tl.constexpr):
        for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
            dy = tl.load(DY + row * stride + tl.arange(0, BLOCK))
            x = tl.load(X + row * stride + tl.arange(0, BLOCK))
            tl.store(DX + row * stride + tl.arange(0, BLOCK), dy * x)

    class RMSNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, eps):
            y = torch.empty_like(x)
            _rms_fwd[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], eps, BLOCK=1024)
            return y

        @staticmethod
        def backward(ctx, dy):
            dx = torch.empty_like(dy)
            _rms_bwd[(132,)](dy, dy, dx, dy.stride(0), dy.shape[1], dy.shape[0], BLOCK=1024)
            return dx, None, None

    def run(x, w, eps):
        return RMSNorm.apply(x, w, eps)
    '''
    facts, got = verdicts(bench, "rmsnorm", source)
    assert sorted(u.kernel for u in facts.units) == ["_rms_bwd", "_rms_fwd"]
    v = got["L1.fp32_one_pass"]
    assert v.verdict == "implemented" and "_rms_fwd" in v.reason


ATTENTION_3K = '''
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _scores(Q, K, S, L, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BK: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, D, BK):
            q = tl.load(Q + pid_m * BLOCK_M * D + k)
            kk = tl.load(K + pid_n * BLOCK_N * D + k)
            acc = tl.dot(q, kk, acc)
        tl.store(S + pid_m * BLOCK_M * L + pid_n * BLOCK_N, acc)

    @triton.jit
    def _softmax(S, P, L, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        m = float("-inf")
        for start in range(0, L, BLOCK):
            m = tl.maximum(m, tl.max(tl.load(S + row * L + start + tl.arange(0, BLOCK)), 0))
        for start in range(0, L, BLOCK):
            s = tl.load(S + row * L + start + tl.arange(0, BLOCK))
            tl.store(P + row * L + start + tl.arange(0, BLOCK), tl.exp(s - m))

    @triton.jit
    def _pv(P, V, O, L, D: tl.constexpr, BLOCK_M: tl.constexpr, BN: tl.constexpr):
        pid_m = tl.program_id(0)
        acc = tl.zeros((BLOCK_M, D), dtype=tl.float32)
        for n in range(0, L, BN):
            acc = tl.dot(tl.load(P + pid_m * BLOCK_M * L + n), tl.load(V + n * D), acc)
        tl.store(O + pid_m * BLOCK_M * D, acc)

    def run(q, k, v, cu_seqlens, max_seqlen, sm_scale):
        L, D = q.shape[0], q.shape[-1]
        s = torch.empty((L, L), device=q.device, dtype=torch.float32)
        p = torch.empty_like(s)
        o = torch.empty_like(q)
        _scores[(L // 64, L // 64)](q, k, s, L, D=D, BLOCK_M=64, BLOCK_N=64, BK=32)
        _softmax[(L,)](s, p, L, BLOCK=1024)
        _pv[(L // 64,)](p, v, o, L, D=D, BLOCK_M=64, BN=64)
        return o
'''


def test_a_three_kernel_attention_that_materialises_s_gets_no_q_tile_or_online_softmax(bench):
    facts, got = verdicts(bench, "flash_attention_prefill", ATTENTION_3K)
    assert len(facts.units) == 3
    assert got["L1.online_softmax"].verdict == "missing"
    assert got["L2.q_tile_per_cta"].verdict == "missing"


FA_INNER = '''
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _inner(acc, l_i, m_i, q, K, V, start_m, offs_m, offs_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               STAGE: tl.constexpr, N_CTX):
        if STAGE == 1:
            lo, hi = 0, start_m * BLOCK_M
        elif STAGE == 2:
            lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        else:
            lo, hi = 0, N_CTX
        for start_n in range(lo, hi, BLOCK_N):
            k = tl.load(K + start_n)
            qk = tl.dot(q, k)
            if STAGE == 2:
                qk = tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), qk, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.math.exp2(qk - m_ij[:, None])
            alpha = tl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(V + start_n)
            p = p.to(tl.bfloat16)
            acc = tl.dot(p, v, acc * alpha[:, None])
            m_i = m_ij
        return acc, l_i, m_i

    @triton.jit
    def _fwd(Q, K, V, O, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             STAGE: tl.constexpr):
        start_m = tl.program_id(0)
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        q = tl.load(Q + offs_m[:, None] * HEAD_DIM)
        m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        if STAGE & 1:
            acc, l_i, m_i = _inner(acc, l_i, m_i, q, K, V, start_m, offs_m, offs_n, BLOCK_M, BLOCK_N, 4 - STAGE, N_CTX)
        if STAGE & 2:
            acc, l_i, m_i = _inner(acc, l_i, m_i, q, K, V, start_m, offs_m, offs_n, BLOCK_M, BLOCK_N, 2, N_CTX)
        acc = acc / l_i[:, None]
        tl.store(O + offs_m[:, None] * HEAD_DIM, acc.to(O.dtype.element_ty))

    def run(q, k, v, cu_seqlens, max_seqlen, sm_scale):
        o = torch.empty_like(q)
        _fwd[(triton.cdiv(q.shape[0], 128), 1)](q, k, v, o, q.shape[0], HEAD_DIM=q.shape[-1], BLOCK_M=128,
                                               BLOCK_N=64, STAGE=3)
        return o
'''


def test_causal_skip_is_read_from_the_loop_bound_not_from_a_constexpr_name(bench):
    # the tutorial's form: the bound comes from start_m = program_id(0) through a helper's parameters
    _, got = verdicts(bench, "flash_attention_prefill", FA_INNER)
    assert got["L1.causal_block_skip"].verdict == "implemented"
    # the same kernel with the bound on the full length keeps its STAGE constexpr but skips nothing
    no_skip = FA_INNER.replace("lo, hi = 0, start_m * BLOCK_M", "lo, hi = 0, N_CTX").replace(
        "lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M", "lo, hi = 0, N_CTX")
    _, got = verdicts(bench, "flash_attention_prefill", no_skip)
    assert got["L1.causal_block_skip"].verdict == "missing"


def test_a_bf16_p_cast_assigned_before_the_dot_counts(bench):
    _, got = verdicts(bench, "flash_attention_prefill", FA_INNER)
    assert got["L3.deferred_norm_bf16_p"].verdict == "implemented"
    uncast = FA_INNER.replace("p = p.to(tl.bfloat16)\n", "")
    _, got = verdicts(bench, "flash_attention_prefill", uncast)
    assert got["L3.deferred_norm_bf16_p"].verdict == "missing"


GEMM = '''
    import torch
    import triton
    import triton.language as tl

    def _configs():
        return [triton.Config({"BM": bm, "BN": 128, "BK": 64}, num_warps=w, num_stages=3)
                for bm in SIZES for w in (4, 8)]

    SIZES = (128, 256)

    @triton.autotune(configs=_configs(), key=["M", "N", "K"])
    @triton.jit
    def _mm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid = tl.program_id(0)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(tl.load(A + k), tl.load(B + k), acc)
        tl.store(C + pid, acc.to(tl.bfloat16))

    def run(A, B):
        C = torch.empty((A.shape[0], B.shape[0]), device=A.device, dtype=A.dtype)
        grid = lambda meta: (triton.cdiv(A.shape[0], meta["BM"]) * triton.cdiv(B.shape[0], meta["BN"]),)
        _mm[grid](A, B, C, A.shape[0], B.shape[0], A.shape[1])
        return C
'''


def test_autotune_keyed_on_m_needs_a_small_m_config(bench):
    _, got = verdicts(bench, "bf16_gemm", GEMM)
    assert got["L3.autotune_by_shape"].verdict == "partial"
    _, got = verdicts(bench, "bf16_gemm", GEMM.replace("SIZES = (128, 256)", "SIZES = (16, 128, 256)"))
    assert got["L3.autotune_by_shape"].verdict == "implemented"


def test_partial_only_where_the_item_defines_it():
    source = textwrap.dedent(RMS_KERNEL + '''
    def run(x, w, eps):
        y = torch.empty_like(x)
        _rms_fwd[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], eps, BLOCK=1024)
        return y
    ''')
    facts = extract(source, "s.py")
    sigs = [{"kind": "call", "name": "rsqrt"}, {"kind": "call", "name": "atomic_add"}]
    part = [{"kind": "call", "name": "sum"}]

    def item(**kw):
        return DesignItem(id="L1.x", level=1, title="x", guidance="g" * 10, criterion="c" * 10, signals=sigs, **kw)

    assert judge(facts, [item()])[0].verdict == "missing"                       # one of two signals: no partial
    assert judge(facts, [item(partial=part, partial_when="a sum without atomics")])[0].verdict == "partial"
    criterion = DesignItem(id="L1.x", level=1, title="x", guidance="g" * 10, signals=sigs, partial=part,
                           criterion="rsqrt and atomics. Partial: the sum alone.")
    assert criterion.partial_defined and judge(facts, [criterion])[0].verdict == "partial"
    assert not DesignItem(id="L1.x", level=1, title="x", guidance="g" * 10, signals=sigs,
                          criterion="both. Binary: no partial.").partial_defined


def test_validation_rejects_partial_signals_on_a_binary_item(content_copy):
    from d2k.validate import validate

    path = content_copy / "design_rubrics/rmsnorm.toml"
    text = path.read_text()
    defined = ('partial_when = "The per-row factor is computed once as 1 / sqrt(...) (no rsqrt) '
               'and applied with a multiplication."\n')
    assert defined in text
    text = text.replace(defined, "", 1)
    path.write_text(text)
    problems = [str(p) for p in validate(content_copy)[0]]
    assert any("items.L1.rsqrt_mul.partial" in p and "defines no partial" in p for p in problems), problems


def test_launches_through_aliases_parameters_and_kwargs_dicts(bench):
    source = RMS_KERNEL + '''
    _tuned = triton.autotune(configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=16)], key=["n_cols"])(_rms_fwd)

    def _launch(kernel, grid, args, kw):
        kernel[grid](*args, **kw)

    def run(x, w, eps):
        y = torch.empty_like(x)
        extra = {"launch_pdl": True} if x.is_cuda else {}
        _launch(_tuned, (x.shape[0],), (x, w, y, x.stride(0), x.shape[1], eps), dict(BLOCK=1024, **extra))
        return y
    '''
    facts, got = verdicts(bench, "rmsnorm", source)
    assert facts.status == "ok" and len(facts.units[0].launches) == 1
    assert got["L3.warps_by_width"].verdict == "implemented"   # two configs with different num_warps


def test_interpreter_only_branches_are_not_gpu_code(bench):
    source = RMS_KERNEL + '''
    import os
    _INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

    def run(x, w, eps):
        y = torch.empty_like(x)
        if _INTERPRET:
            nw = x.shape[1] // 256          # only under the CPU interpreter
        else:
            nw = 4
        _rms_fwd[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], eps, BLOCK=1024, num_warps=nw)
        return y
    '''
    _, got = verdicts(bench, "rmsnorm", source)
    assert got["L3.warps_by_width"].verdict == "missing"


def test_a_gpu_profile_confirms_or_rules_out_the_kernels(bench):
    source = RMS_KERNEL + '''
    def run(x, w, eps):
        y = torch.empty_like(x)
        _rms_fwd[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], eps, BLOCK=1024)
        return y
    '''
    facts = extract(textwrap.dedent(source), "s.py", ran=["_rms_fwd", "vectorized_elementwise_kernel"])
    assert facts.status == "ok" and "confirms _rms_fwd" in facts.reach_note
    facts = extract(textwrap.dedent(source), "s.py", ran=["at::native::rms_norm_kernel"])
    assert facts.status == "dead_code" and "GPU profile" in facts.reach_note


def test_cuda_reached_through_a_load_inline_module():
    source = textwrap.dedent('''
        from torch.utils.cpp_extension import load_inline

        SRC = r"""
        __device__ float warp_sum(float v) { return __shfl_down_sync(0xffffffff, v, 16) + v; }
        __global__ void used_kernel(float* y) { y[threadIdx.x] = warp_sum(1.f); }
        __global__ void unused_kernel(float* y) { y[0] = 0.f; }
        void launch(torch::Tensor y) { used_kernel<<<1, 32>>>(y.data_ptr<float>()); }
        """

        mod = load_inline("m", cpp_sources="", cuda_sources=SRC, functions=["launch"])

        def run(x):
            mod.launch(x)
            return x
    ''')
    facts = extract(source, "s.py")
    assert [k.name for k in facts.kernels if not k.helper] == ["used_kernel"]
    assert facts.unreached == ["unused_kernel"]
    unit = facts.units[0]
    assert unit.members == ["used_kernel", "warp_sum"]
    ctx = signals.contexts(facts)[0]
    assert signals.evaluate({"kind": "cuda", "feature": "shuffle"}, facts, ctx).holds   # in its __device__ helper


def test_values_follow_tuple_returns_call_arguments_and_loop_variables():
    import ast

    from d2k.judge.program import Program

    program = Program(textwrap.dedent('''
        def _config(n):
            block = 1 << (n - 1).bit_length()
            return block, max(4, min(16, block // 256))

        def launch(x, warps):
            return warps

        def run(x):
            block, nw = _config(x.shape[1])
            for s in (2, 3):
                pass
            launch(x, 8)
            return nw, s
    '''))
    run = program.funcs["run"]
    nw = program.value(ast.parse("nw", mode="eval").body, run)
    assert nw.numbers is None and nw.interval == (4, 16) and "x.shape" in " ".join(nw.deps)
    s = program.value(ast.parse("s", mode="eval").body, run)
    assert s.numbers == frozenset({2, 3})
    warps = program.value(ast.parse("warps", mode="eval").body, program.funcs["launch"])
    assert warps.numbers == frozenset({8}) and warps.constant


def test_splits_cover_every_gold_set_and_keep_dev_and_test_apart(bench):
    split = splits.load(bench.root)
    assert split.dev and split.test and not split.dev & split.test
    from d2k.judge import gold

    item_ids = {t: {i.id for i in bench.items(t)} for t in bench.tasks}
    labelled = {s.task_id for s in gold.load(bench.root, list(bench.tasks), item_ids)}
    assert labelled <= split.dev | split.test
    assert {"paged_decode_gqa", "mla_decode", "gdn_decode"} <= split.test and "rmsnorm" in split.dev


def test_the_hybrid_keeps_only_verdicts_of_well_measured_strength():
    record = calibration.compute([
        {"strength": "strong", "verdict": "all", "n": 100, "right": 96, "precision": 0.96},
        {"strength": "strong", "verdict": "implemented", "n": 60, "right": 60, "precision": 1.0},
        {"strength": "strong", "verdict": "partial", "n": 25, "right": 14, "precision": 0.56},
        {"strength": "weak", "verdict": "all", "n": 30, "right": 27, "precision": 0.9},
    ], ["test"], "2")
    assert calibration.keep_static(record, "strong", "implemented")
    assert not calibration.keep_static(record, "strong", "partial")
    assert calibration.keep_static(record, "strong", "missing")          # too few: the strength's figure
    assert not calibration.keep_static(record, "weak", "implemented")
    assert not calibration.keep_static(record, "strong", "undetermined")
    assert calibration.keep_static(None, "strong", "partial") and not calibration.keep_static(None, "weak", "missing")


def test_a_group_holds_in_one_kernel_while_top_level_signals_may_span_kernels():
    source = textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def _a(X, BLOCK_M: tl.constexpr):
            tl.store(X + tl.arange(0, BLOCK_M), tl.zeros([BLOCK_M], dtype=tl.float32))

        @triton.jit
        def _b(X, Y, K, BK: tl.constexpr):
            acc = tl.zeros([16, 16], dtype=tl.float32)
            for k in range(0, K, BK):
                acc = tl.dot(tl.load(X + k), tl.load(Y + k), acc)
            tl.store(X, acc)

        def run(x, y):
            _a[(1,)](x, BLOCK_M=16)
            _b[(1,)](x, y, 64, BK=16)
            return x
    ''')
    facts = extract(source, "s.py")
    block_m, dot_loop = {"kind": "constexpr", "pattern": "BLOCK_M"}, {"kind": "loop", "contains_call": "dot"}

    def item(sigs):
        return DesignItem(id="L1.x", level=1, title="x", guidance="g" * 10, criterion="c" * 10, signals=sigs)

    assert judge(facts, [item([block_m, dot_loop])])[0].verdict == "implemented"          # a property of the solution
    assert judge(facts, [item([{"kind": "all", "of": [block_m, dot_loop]}])])[0].verdict == "missing"   # one kernel
    spanning = {"kind": "all", "across": True, "of": [block_m, dot_loop]}
    assert judge(facts, [item([spanning])])[0].verdict == "implemented"
