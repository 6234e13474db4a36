import torch, importlib.util, sys
spec = importlib.util.spec_from_file_location("ref", "tasks/fp8_blockwise_gemm/reference.py"); ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
from d2k.content import Benchmark
b = Benchmark.load(only=["fp8_blockwise_gemm"])
for w in b.select_workloads("fp8_blockwise_gemm", "bench"):
    trials = 1 if w.axes["M"] * w.axes["N"] * w.axes["K"] > 1e10 else 3
    for trial in range(trials):
        g = torch.Generator().manual_seed(int(w.seed) * 1_000_003 + trial)
        inp = ref.make_inputs(w.axes, w.dtypes, w.params, g, "cpu")
        A, As, B, Bs = inp["A"], inp["As"], inp["B"], inp["Bs"]
        M, K = A.shape; N = B.shape[0]
        a = A.float() * As.repeat_interleave(128, 1)[:, :K]
        bb = B.float() * Bs.repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)[:, :K]
        exact = a @ bb.T
        naive = (a.bfloat16().float() @ bb.bfloat16().float().T).bfloat16().float()
        err = (naive - exact).abs()
        over = err > (2e-2 + 2e-2 * exact.abs())
        # a scale mistake: the B scale of the neighbouring N block (a classic indexing bug)
        Bs2 = torch.roll(Bs, 1, 0)
        bad = a @ (B.float() * Bs2.repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)[:, :K]).T
        berr = (bad - exact).abs(); bover = berr > (2e-2 + 2e-2 * exact.abs())
        print(w.id, trial, "max|C| %.2f" % exact.abs().max(), "naive: over %d of %d (ratio %.7f) max err %.4f" % (int(over.sum()), over.numel(), 1 - over.float().mean(), err.max()),
              "| wrong-Bs: ratio %.4f max err %.3f" % (1 - bover.float().mean(), berr.max()), flush=True)
