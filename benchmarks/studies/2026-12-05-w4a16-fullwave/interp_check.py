"""This study's M = 1 candidates under the CPU Triton interpreter (correctness only; no GPU):

    .venv/bin/python benchmarks/studies/2026-12-05-w4a16-fullwave/interp_check.py /tmp/w4fw/w4a16_gemm/NAME.py [--mutants]

The candidate module is loaded with TRITON_INTERPRET=1; its autotuned M = 1 kernel gets one config
at a time (the autotuner's list replaced, as on the GPU after tuning) and its SM count (_num_sms)
is patched, so the stream-K and fit-split partitions that a 132-SM GPU would make at large shapes
are made here at small ones: programs covering several tiles, tiles split over several programs,
one word row a program, segments that end inside a step.

1. shapes x SM counts x configs, fp16 inputs (the task's CPU dtype) against reference.py within the
   task's tolerance (atol = rtol = 2e-2);
2. the same on fp32 inputs against the exact sum in float64, |C - exact| <= 1e-4 (|A| @ |W|): the
   task's tolerance could miss one dropped or doubled word row at large K (8 of K terms), this
   bound cannot (one row is ~8 / K of |A| @ |W|, 2e-3 at K = 4096; fp32 rounding is ~1e-6 here);
3. bit for bit against the shipped GEMV (tasks/w4a16_gemm/expert.py) on fp32 inputs where the
   partition coincides with the shipped split-K (every program one tile's R / S rows, R / S a
   multiple of BKW): same NR, BKW, PREFETCH, SPLIT_K = S. Equal C means the same products, the same
   rounding points and the same order of the fixed-order reduction;
4. (--mutants) scratch copies with one deliberate error each must fail 1, 2 or 3 (stopping at the
   first failing run of parts 1-2).
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

# (N, K): N not a multiple of 128 NR, K from one scale group to 17
SHAPES = [(256, 512), (130, 128), (200, 384), (300, 1024), (1000, 256), (129, 2176), (64, 640)]
SMS = [1, 3, 5, 7, 13, 64]
# (NR, BKW, PREFETCH, STAGES, CPS); the interpreter ignores STAGES (num_stages) and num_warps
CONFIGS = [(1, 16, True, 1, 1), (1, 4, False, 1, 2), (2, 8, False, 1, 1), (2, 8, True, 1, 3),
           (4, 8, False, 3, 1), (1, 32, True, 1, 1), (2, 16, False, 2, 2)]
MUTANTS = {
    "scales of rows past the segment not zeroed (rows counted twice)":
        ("s = tl.where((row < r1)[:, None, None], s, 0.0)", "s = s"),
    "stream-K cell p instead of p + t (cells collide)":
        ("tl.store(ws_ptr + (pid + t64) * BN + rb, c)", "tl.store(ws_ptr + pid * BN + rb, c)"),
    "stream-K first contributor off by one":
        ("first = ((t64 * R + 1) * P - 1) // U", "first = ((t64 * R) * P) // U"),
    "fit-split rows of split k off by one":
        ("r1 = ((pid_k + 1) * R) // S", "r1 = ((pid_k + 1) * R) // S + 1"),
    "word rows clamped to r1 instead of r1 - 1":
        ("r_last = r1 - 1", "r_last = r1"),
    "stream-K reduction drops the fourth cell of a group":
        ("mask=rb * 0 + q + 3 <= q_end", "mask=rb * 0 + q + 3 < q_end"),
    "fit-split reduction drops the fourth split of a group":
        ("mask=rb * 0 + sidx + 3 < S", "mask=rb * 0 + sidx + 3 < S - 1"),
}


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tuned(cand):
    """The candidate's M = 1 autotuner and its config-list global."""
    for tuner, glob in (("_gemv_sk", "_GEMV_SK_CFGS"), ("_gemv_fit", "_GEMV_FIT_CFGS")):
        if hasattr(cand, tuner):
            return getattr(cand, tuner), glob
    raise SystemExit("no stream-K or fit-split GEMV in this file")


def _set(cand, nr, bkw, prefetch, stages, cps, sms):
    tuner, glob = _tuned(cand)
    cfg = triton.Config({"NR": nr, "BKW": bkw, "CPS": cps, "PREFETCH": prefetch, "STAGES": stages},
                        num_warps=4, num_stages=1)
    tuner.configs = [cfg]
    tuner.cache = {}
    setattr(cand, glob, [cfg])
    cand._num_sms = lambda device, _s=sms: _s


def _set_shipped(ship, nr, bkw, split, prefetch):
    cfg = triton.Config({"NR": nr, "BKW": bkw, "SPLIT_K": split, "PREFETCH": prefetch}, num_warps=4, num_stages=1)
    ship._gemv.configs = [cfg]
    ship._gemv.cache = {}
    ship._GEMV_CFGS = [cfg]


def _inputs(ref, n, k, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    return ref.make_inputs({"M": 1, "N": n, "K": k}, {"dtype": dtype}, {}, gen, "cpu")


def _exact(ref, inp):
    q = ref.unpack_int4(inp["Wq"]).double()
    w = (q - 8) * inp["S"].double().repeat_interleave(128, dim=0)
    a = inp["A"].double()
    return a @ w, a.abs() @ w.abs()


def check(path: Path, verbose: bool = True, stop_at_first: bool = False) -> tuple[int, int, list[str]]:
    ref = _module(REF, "w4_reference")
    cand = _module(path, f"w4_cand_{path.stem}")
    ship = _module(SHIPPED, "w4_shipped")
    stream_k = hasattr(cand, "_gemv_sk")
    runs = fails = 0
    bad = []
    worst_tol, worst_exact = 0.0, 0.0
    # 1 + 2: shapes x SM counts x configs
    for (n, k), sms, (nr, bkw, pf, st, cps) in itertools.product(SHAPES, SMS, CONFIGS):
        _set(cand, nr, bkw, pf, st, cps, sms)
        seed = n * 7919 + k + sms
        inp = _inputs(ref, n, k, torch.float16, seed)
        got = cand.run(**inp).float()
        want = ref.reference(**inp).float()
        ok1 = torch.allclose(got, want, atol=2e-2, rtol=2e-2)
        worst_tol = max(worst_tol, (got - want).abs().max().item())
        inp32 = _inputs(ref, n, k, torch.float32, seed)
        got32 = cand.run(**inp32).double()
        exact, scale = _exact(ref, inp32)
        ratio = ((got32 - exact).abs() / scale.clamp_min(1e-30)).max().item()
        worst_exact = max(worst_exact, ratio)
        ok2 = ratio <= 1e-4
        again = cand.run(**inp32).double()
        ok3 = torch.equal(got32, again)
        runs += 1
        if not (ok1 and ok2 and ok3):
            fails += 1
            bad.append(f"N={n} K={k} sms={sms} cfg={(nr, bkw, pf, st, cps)}: tol {ok1}, exact {ok2} "
                       f"(ratio {ratio:.2e}), repeat {ok3}")
            if stop_at_first:
                return runs, fails, bad
    if verbose:
        print(f"{path.name}: parts 1-2: {runs - fails}/{runs} shape x SM-count x config runs passed "
              f"(max |C - reference| {worst_tol:.3g} at fp16; max |C - exact| / (|A| @ |W|) {worst_exact:.2e} at fp32)")
    # 3: bit for bit against the shipped GEMV where the partitions coincide
    same = same_runs = 0
    for (n, k), (nr, bkw, pf), split in itertools.product(
            [(300, 1024), (256, 512), (200, 2048)], [(1, 16, True), (2, 8, False), (1, 8, True), (4, 4, False)],
            [1, 2, 4]):
        rows = k // 8
        if rows % (split * bkw):
            continue
        tiles = triton.cdiv(n, 128 * nr)
        if stream_k:
            _set(cand, nr, bkw, pf, 1, 1, tiles * split)        # P = T S programs, one split each
        else:
            _set(cand, nr, bkw, pf, 1, 1, tiles * split)        # S = floor(T S / T)
        _set_shipped(ship, nr, bkw, split, pf)
        inp32 = _inputs(ref, n, k, torch.float32, n + k + split)
        a = cand.run(**inp32)
        b = ship.run(**inp32)
        same_runs += 1
        if torch.equal(a, b):
            same += 1
        else:
            bad.append(f"bitwise: N={n} K={k} NR={nr} BKW={bkw} PREFETCH={pf} S={split}: "
                       f"max diff {(a - b).abs().max().item():.3g}")
    if verbose:
        print(f"{path.name}: part 3: {same}/{same_runs} runs equal the shipped GEMV's C bit for bit (fp32 inputs)")
    return runs + same_runs, fails + (same_runs - same), bad


def mutants(path: Path) -> None:
    text = path.read_text()
    for what, (old, new) in MUTANTS.items():
        if text.count(old) != 1:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            mut = Path(tmp) / f"{path.stem}_mutant.py"
            mut.write_text(text.replace(old, new))
            try:
                total, failed, _ = check(mut, verbose=False, stop_at_first=True)
                verdict = f"detected at check {total} (first failing run)" if failed else "NOT DETECTED"
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
