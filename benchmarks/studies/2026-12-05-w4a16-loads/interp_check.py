"""This study's M = 1 candidates under the CPU Triton interpreter (correctness only; no GPU), adapted
from ../2026-12-05-w4a16-fullwave/interp_check.py:

    .venv/bin/python benchmarks/studies/2026-12-05-w4a16-loads/interp_check.py /tmp/w4loads/w4a16_gemm/NAME.py [--mutants]

The candidate module is loaded with TRITON_INTERPRET=1; its autotuned M = 1 kernel (_gemv_g) gets one
config at a time (the autotuner's list replaced, as on the GPU after tuning). The interpreter runs
bf16 as well as fp16, so the bf16 decode of the activations (_act8_f32: bits << 16) that the GPU
takes runs here too.

1. shapes x configs, fp16 and bf16 inputs, `run()` against reference.py within the task's
   tolerance (atol = rtol = 2e-2);
2. the same shapes and configs with the kernel launched directly into an fp32 C (the unrounded
   fp32 sum, before the output's bf16/fp16 rounding hides it) against the exact sum in float64 of
   the same inputs: max |C - exact| / (|A| @ |W|) <= 1e-5 (one dropped or doubled word row is
   ~8 / K of it, >= 3.7e-3 here), and the same bits on a second call; beside it the shipped GEMV's
   ratio on the same inputs (its own config), for the numerics comparison;
3. ranges (bf16 and fp16): activations over many binades (bf16: 2^-40 .. 2^40, fp16: its
   subnormals to 6e4), exact zeros and -0, all codes 0 / all 15 / random; the same exact bound;
4. (--mutants) scratch copies with one deliberate error each must fail 1, 2 or 3.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import tempfile
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"   # before triton is imported (by the candidate)

import torch  # noqa: E402
import triton  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
REF = ROOT / "tasks/w4a16_gemm/reference.py"
SHIPPED = ROOT / "tasks/w4a16_gemm/expert.py"
GROUP = 128
BOUND = 1e-5

# (N, K): N not a multiple of 128 NR, K from one scale group to 17
SHAPES = [(256, 512), (130, 128), (200, 384), (300, 1024), (1000, 256), (129, 2176), (64, 640)]
# (NR, SUBS, SPLIT_K, PREFETCH): SPLIT_K 3, 5 and 8 leave empty or short splits at small K
CONFIGS = [(1, 2, 2, True), (1, 1, 1, False), (2, 2, 3, True), (2, 4, 4, False), (4, 4, 2, True),
           (1, 4, 5, True), (4, 1, 8, False), (2, 1, 1, True)]
MUTANTS = {
    "code 5's pre-scale 2^(133 - XS) instead of 2^(129 - XS)":
        ("a5 = a5 * (2.0 ** (129 - XS))", "a5 = a5 * (2.0 ** (133 - XS))"),
    "zero point 7 instead of 8 (subnormal path)":
        ("accg = t * (-8.0 / (2.0 ** XS))", "accg = t * (-7.0 / (2.0 ** XS))"),
    "next group's scale":
        ("s = tl.load(s_ptrs + g * N).to(tl.float32)",
         "s = tl.load(s_ptrs + tl.minimum(g + 1, n_groups - 1) * N).to(tl.float32)"),
    "prefetch loads the group after next":
        ("rp = tl.minimum(g + 1, n_groups - 1) * GW", "rp = tl.minimum(g + 2, n_groups - 1) * GW"),
    "second sub-tile's activations from the first sub-tile's rows":
        ("_act_row(a_ptr, r0 + HB + jrow,", "_act_row(a_ptr, r0 + jrow,"),
    "activations 2, 3 taken from the second 8-byte load":
        ("x1 = (lo >> 32).to(tl.int32)", "x1 = (hi >> 32).to(tl.int32)"),
    "a split drops its last group":
        ("g1 = tl.minimum(g0 + per_split, n_groups)", "g1 = tl.minimum(g0 + per_split, n_groups) - (pid_k == 0)"),
}


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _set(cand, nr, subs, split, prefetch):
    base = cand._GEMV_G_CFGS[0].kwargs
    cfg = triton.Config({"NR": nr, "SUBS": subs, "SPLIT_K": split, "PREFETCH": prefetch, "DENORM": base["DENORM"]},
                        num_warps=16 // subs, num_stages=1)
    cand._gemv_g.configs = [cfg]
    cand._gemv_g.cache = {}
    cand._GEMV_G_CFGS = [cfg]


def _launch32(mod, tuner, n, k, inp):
    """C in fp32 from the module's M = 1 kernel (config already set), unrounded."""
    A, Wq, S = inp["A"], inp["Wq"], inp["S"]
    C = torch.empty((1, n), dtype=torch.float32)
    ws = torch.empty(16 * triton.cdiv(n, 128) * 128 * 8, dtype=torch.float32)
    counters = torch.zeros(4096, dtype=torch.int32)
    grid = lambda meta: (triton.cdiv(n, 128 * meta["NR"]), meta["SPLIT_K"])   # noqa: E731
    tuner[grid](A, Wq, S, C, ws, counters, n, k, 0x4B000000, GROUP_SIZE=GROUP)
    return C


def _inputs(ref, n, k, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    return ref.make_inputs({"M": 1, "N": n, "K": k}, {"dtype": dtype}, {}, gen, "cpu")


def _exact(ref, inp):
    q = ref.unpack_int4(inp["Wq"]).double()
    w = (q - 8) * inp["S"].double().repeat_interleave(GROUP, dim=0)
    a = inp["A"].double()
    return a @ w, a.abs() @ w.abs()


def _ratio(got, inp, ref):
    exact, scale = _exact(ref, inp)
    return ((got.double() - exact).abs() / scale.clamp_min(1e-300)).max().item()


def _range_inputs(ref, n, k, dtype, kind, seed):
    gen = torch.Generator().manual_seed(seed)
    inp = _inputs(ref, n, k, dtype, seed)
    if dtype == torch.bfloat16:
        mag = torch.exp2(torch.randint(-40, 41, (1, k), generator=gen).double())
    else:   # fp16: subnormals (2^-24 ..) to 2^15
        mag = torch.exp2(torch.randint(-24, 16, (1, k), generator=gen).double())
    sign = torch.where(torch.rand((1, k), generator=gen) < 0.5, -1.0, 1.0).double()
    a = sign * mag * (1 + torch.rand((1, k), generator=gen).double())
    a[0, ::7] = 0.0
    a[0, 3::11] = -0.0
    inp["A"] = a.to(dtype)
    q = torch.randint(0, 16, (k, n), generator=gen)
    if kind == "zeros":
        q[:] = 0
    elif kind == "fifteens":
        q[:] = 15
    inp["Wq"] = ref.pack_int4(q)
    return inp


def check(path: Path, verbose: bool = True, stop_at_first: bool = False) -> tuple[int, int, list[str]]:
    ref = _module(REF, "w4_reference")
    cand = _module(path, f"w4_cand_{path.stem}")
    ship = _module(SHIPPED, "w4_shipped")
    runs = fails = 0
    bad = []
    worst_tol, worst_exact, worst_ship = 0.0, 0.0, 0.0
    for (n, k), cfg, dtype in itertools.product(SHAPES, CONFIGS, (torch.float16, torch.bfloat16)):
        _set(cand, *cfg)
        seed = n * 7919 + k + cfg[2]
        inp = _inputs(ref, n, k, dtype, seed)
        got = cand.run(**inp).float()
        want = ref.reference(**inp).float()
        ok1 = torch.allclose(got, want, atol=2e-2, rtol=2e-2)
        worst_tol = max(worst_tol, (got - want).abs().max().item())
        c32 = _launch32(cand, cand._gemv_g, n, k, inp)
        ratio = _ratio(c32, inp, ref)
        worst_exact = max(worst_exact, ratio)
        ok2 = ratio <= BOUND
        ok3 = torch.equal(c32, _launch32(cand, cand._gemv_g, n, k, inp))
        ship._gemv.configs = [triton.Config({"NR": cfg[0], "BKW": 8, "SPLIT_K": cfg[2], "PREFETCH": cfg[3]},
                                            num_warps=4, num_stages=1)]
        ship._gemv.cache = {}
        worst_ship = max(worst_ship, _ratio(_launch32(ship, ship._gemv, n, k, inp), inp, ref))
        runs += 1
        if not (ok1 and ok2 and ok3):
            fails += 1
            bad.append(f"N={n} K={k} cfg={cfg} {dtype}: tol {ok1}, exact {ok2} (ratio {ratio:.2e}), repeat {ok3}")
            if stop_at_first:
                return runs, fails, bad
    if verbose:
        print(f"{path.name}: parts 1-2: {runs - fails}/{runs} shape x config x dtype runs passed "
              f"(max |C - reference| {worst_tol:.3g}, rounded output; fp32 C: max |C - exact| / (|A| @ |W|) "
              f"{worst_exact:.2e}, the shipped GEMV on the same inputs {worst_ship:.2e})")
    r_runs = r_fails = 0
    worst_range = 0.0
    for dtype, kind, cfg in itertools.product((torch.bfloat16, torch.float16), ("random", "zeros", "fifteens"),
                                              [(1, 2, 2, True), (2, 4, 3, False)]):
        n, k = 200, 1024
        _set(cand, *cfg)
        inp = _range_inputs(ref, n, k, dtype, kind, 17 + cfg[2])
        ratio = _ratio(_launch32(cand, cand._gemv_g, n, k, inp), inp, ref)
        worst_range = max(worst_range, ratio)
        r_runs += 1
        if not ratio <= BOUND:
            r_fails += 1
            bad.append(f"range {dtype} {kind} cfg={cfg}: ratio {ratio:.2e}")
            if stop_at_first:
                return runs + r_runs, fails + r_fails, bad
    if verbose:
        print(f"{path.name}: part 3: {r_runs - r_fails}/{r_runs} range runs passed "
              f"(max |C - exact| / (|A| @ |W|) {worst_range:.2e})")
    return runs + r_runs, fails + r_fails, bad


def mutants(path: Path) -> None:
    text = path.read_text()
    for what, (old, new) in MUTANTS.items():
        if text.count(old) != 1:
            print(f"{path.name}: mutant '{what}': not applicable ({text.count(old)} matches)")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            mut = Path(tmp) / f"{path.stem}_mutant.py"
            mut.write_text(text.replace(old, new))
            try:
                total, failed, bad = check(mut, verbose=False, stop_at_first=True)
                verdict = (f"detected at check {total} ({bad[-1][:90]})" if failed else "NOT DETECTED")
            except Exception as exc:   # noqa: BLE001  (a crash is a detection too)
                verdict = f"crashed: {type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
        print(f"{path.name}: mutant '{what}': {verdict}")


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit(__doc__)
    path = Path(argv[0])
    total, failed, bad = check(path)
    for line in bad[:20]:
        print("  FAIL", line)
    print(f"{path.name}: {'all passed' if not failed else f'{failed} FAILED'} ({total} checks)")
    if "--mutants" in argv:
        mutants(path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
