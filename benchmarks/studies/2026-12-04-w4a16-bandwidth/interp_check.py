"""The candidates of this study against tasks/w4a16_gemm/reference.py under the CPU interpreter, and
their inline PTX on an emulator. Nothing here runs on a GPU.

    .venv/bin/python benchmarks/studies/2026-12-04-w4a16-bandwidth/interp_check.py CANDIDATE.py [M,N,K ...]

Three parts:

1. shapes: run() under TRITON_INTERPRET=1 (float16, the reference's CPU dtype) at M = 1, 2, 3, 4, 8,
   16 and 40, N not a multiple of the tiles, K a multiple of 128, within the task's tolerance
   (atol = rtol = 2e-2). Each kernel runs its interpreter config, which takes the new code path
   (the GEMV's fp16-pair dot in plain ops, two steps prefetched; the pair planes at M <= 16).
2. configs: the same at M = 1 (and M = 2, 16) with other configs patched in one at a time (the
   autotuner's list replaced by one config, as on the GPU after tuning): GEMV NR 1-4, BKW 4-64
   (steps of one to four scale groups where K allows), SPLIT_K 1-3, PREFETCH 0-2, then every
   config of the candidate's own GPU list (NR, BKW, SPLIT_K, PREFETCH; num_warps means nothing
   to the interpreter); MMA BN 64/128/256, SPLIT_K 1-3. A GEMV that keeps the shipped fp32
   arithmetic (`gemv_prefetch`) must also give the shipped GEMV's C bit for bit under the same
   NR, BKW, SPLIT_K and PREFETCH (on or off), where the shipped kernel takes that config
   (BKW <= 16): only its loads differ. That comparison runs both on fp32 inputs (full 24-bit
   activations and scales), so every product and sum rounds and C is the fp32 result itself: a
   16-bit C, or 16-bit activations (whose products with 4-bit codes are exact), would hide most
   changes of the fp32 rounding points.
3. ptx: the candidate's inline-PTX strings (_H2_ACT_ASM, _H2_DOT_ASM, _PAIR_ASM0..3, where the
   candidate has them) run on a small emulator of the PTX instructions they use, against what they
   are meant to compute, bit for bit, on random words and activations; then the fp16-pair GEMV
   arithmetic at the m1 workload's K (4096) and at K = 28672 in bf16 against the reference. The
   interpreter cannot run inline PTX (part 1 runs the plain-ops form of the same arithmetic), so
   this is the only offline check of the PTX text; the compiled code is the GPU's to check.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"   # before triton is imported (by the candidate)

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SHAPES = [(1, 256, 512), (1, 200, 384), (1, 300, 1024), (1, 130, 128), (2, 200, 384), (3, 130, 256),
          (4, 256, 512), (8, 300, 384), (16, 200, 384), (16, 256, 512), (40, 200, 384)]
GEMV_CONFIGS = [  # NR, BKW, SPLIT_K, PREFETCH
    (1, 16, 1, 2), (2, 8, 3, 1), (1, 4, 2, 0), (2, 16, 2, 2), (4, 8, 1, 1), (1, 8, 3, 2),
    (1, 32, 1, 2), (2, 32, 2, 1), (1, 64, 1, 1)]
MMA_CONFIGS = [(64, 1), (128, 2), (256, 3), (64, 3)]   # BN, SPLIT_K (BM 16, BK 128)
GEMV_SHAPES = [(1, 300, 1024), (1, 200, 384), (1, 130, 512)]   # N not a multiple of 128 NR


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inputs(ref, m: int, n: int, k: int, dtype=None):
    import torch
    gen = torch.Generator().manual_seed(1000 * m + n + k)
    return ref.make_inputs({"M": m, "N": n, "K": k}, {"dtype": dtype or torch.float16}, {}, gen, "cpu")


def _check(ref, run, m: int, n: int, k: int) -> tuple[bool, float]:
    import torch
    inputs = _inputs(ref, m, n, k)
    want = ref.reference(**inputs).float()
    got = run(**inputs).float()
    return torch.allclose(got, want, atol=2e-2, rtol=2e-2), (got - want).abs().max().item()


def _gemv_list(cand) -> list[tuple[int, int, int, int]]:
    """The candidate's GPU config list for the GEMV as (NR, BKW, SPLIT_K, PREFETCH), deduplicated."""
    interp, cand._INTERPRET = cand._INTERPRET, False
    try:
        cfgs = cand._gemv_configs()
    finally:
        cand._INTERPRET = interp
    return list(dict.fromkeys((c.kwargs["NR"], c.kwargs["BKW"], c.kwargs["SPLIT_K"], int(c.kwargs["PREFETCH"]))
                              for c in cfgs))


def _patch_gemv(module, nr: int, bkw: int, split: int, prefetch) -> None:
    import triton
    cfg = triton.Config({"NR": nr, "BKW": bkw, "SPLIT_K": split, "PREFETCH": prefetch}, num_warps=4)
    module._gemv.configs, module._GEMV_CFGS = [cfg], [cfg]


def check_gemv_configs(ref, cand) -> int:
    """Part 2 for a candidate with the new GEMV load side (_prune_gemv): the spread of GEMV_CONFIGS,
    then every config of its own GPU list; and, where it keeps the shipped arithmetic (_code_f32),
    the shipped GEMV's C bit for bit."""
    import torch
    failed = 0
    own = _gemv_list(cand)
    print(f"GEMV GPU list: {len(own)} distinct (NR, BKW, SPLIT_K, PREFETCH)")
    shipped = None
    if hasattr(cand, "_code_f32"):
        shipped = _module(ROOT / "tasks" / "w4a16_gemm" / "expert.py", "w4a16_shipped")
    for source, configs in (("spread", GEMV_CONFIGS), ("list", own)):
        for nr, bkw, split, prefetch in configs:
            _patch_gemv(cand, nr, bkw, split, prefetch)
            for m, n, k in GEMV_SHAPES:
                if k % (8 * bkw):
                    continue   # run() never launches it there (the GPU list prunes it)
                ok, err = _check(ref, cand.run, m, n, k)
                line = (f"GEMV ({source}) NR={nr} BKW={bkw} SPLIT_K={split} PREFETCH={prefetch} M={m} N={n} K={k}: "
                        f"max abs error {err:.2e} {'ok' if ok else 'FAIL'}")
                if shipped is not None and bkw <= 16:
                    # fp32 inputs (full 24-bit activations and scales) and so an fp32 C: every
                    # product and sum rounds, and C is the fp32 result itself
                    _patch_gemv(shipped, nr, bkw, split, bool(prefetch))
                    inputs = _inputs(ref, m, n, k, torch.float32)
                    same = torch.equal(cand.run(**inputs), shipped.run(**inputs))
                    ok &= same
                    line += f"; fp32 C = the shipped GEMV's, bit for bit: {'ok' if same else 'FAIL'}"
                failed += not ok
                print(line)
    return failed


# ---------------------------------------------------------------------------------------------
# part 3: a PTX emulator for the instructions the candidates' inline asm uses (vectors of lanes)

def _f16_bits(x):
    return np.asarray(x, dtype=np.float64).astype(np.float16).view(np.uint16).astype(np.uint32)


def _f16_val(bits):
    return (np.asarray(bits, dtype=np.uint32) & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64)


def _bf16_bits(x):
    """float64 -> bf16 bits, round to nearest even (through float32: exact for these values)."""
    f = np.asarray(x, dtype=np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((f + 0x7FFF + ((f >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint32)


def _bf16_val(bits):
    return ((np.asarray(bits, dtype=np.uint32) & 0xFFFF) << 16).astype(np.uint32).view(np.float32).astype(np.float64)


def _f32_val(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32).astype(np.float64)


def _f32_bits(x):
    return np.asarray(x, dtype=np.float64).astype(np.float32).view(np.uint32)


def _halves(v, val):
    return val(v & 0xFFFF), val(v >> 16)


def _pack(lo, hi, bits):
    return (bits(lo) | (bits(hi) << 16)).astype(np.uint32)


def emulate(asm: str, args: list, n_out: int) -> list:
    """Runs the PTX text on numpy uint32 vectors: `$0..$(n_out-1)` are the outputs, the rest the
    inputs in order. Only the instructions and operand forms the candidates use are known."""
    regs = {f"${n_out + i}": np.asarray(a, dtype=np.uint32) for i, a in enumerate(args)}

    def val(tok):
        tok = tok.strip()
        if tok.startswith("0x"):
            return np.uint32(int(tok, 16))
        if re.fullmatch(r"\d+", tok):
            return np.uint32(int(tok))
        return regs[tok]

    body = asm.strip().strip("{}")
    for line in (x.strip() for x in body.split(";")):
        if not line or line.startswith(".reg"):
            continue
        op, rest = line.split(None, 1)
        if op == "mov.b32" and rest.startswith("{"):
            lo, hi, src = re.fullmatch(r"\{\s*(\S+),\s*(\S+)\s*\},\s*(\S+)", rest).groups()
            regs[lo], regs[hi] = val(src) & 0xFFFF, val(src) >> 16
            continue
        ops = [x.strip() for x in rest.split(",")]
        d, src = ops[0], [val(x) for x in ops[1:]]
        if op == "mov.b32":
            r = np.asarray(src[0], dtype=np.uint32)
        elif op == "lop3.b32":
            a, b, c = (np.asarray(x, dtype=np.uint32) for x in src[:3])
            lut = int(src[3])
            r = np.zeros(np.broadcast(a, b, c).shape, dtype=np.uint32)
            for ia in (0, 1):
                for ib in (0, 1):
                    for ic in (0, 1):
                        if lut >> (ia << 2 | ib << 1 | ic) & 1:
                            r |= (a if ia else ~a) & (b if ib else ~b) & (c if ic else ~c)
        elif op in ("shr.u32", "shr.b32"):
            r = src[0] >> src[1]
        elif op == "shl.b32":
            r = (src[0].astype(np.uint64) << np.uint64(src[1])).astype(np.uint64) & 0xFFFFFFFF
        elif op == "and.b32":
            r = src[0] & src[1]
        elif op in ("fma.rn.f16x2", "mul.rn.f16x2"):
            a, b = _halves(src[0], _f16_val), _halves(src[1], _f16_val)
            c = _halves(src[2], _f16_val) if op.startswith("fma") else (0.0, 0.0)
            r = _pack(a[0] * b[0] + c[0], a[1] * b[1] + c[1], _f16_bits)   # one rounding
        elif op == "fma.rn.bf16x2":
            a, b, c = (_halves(x, _bf16_val) for x in src)
            r = _pack(a[0] * b[0] + c[0], a[1] * b[1] + c[1], _bf16_bits)
        elif op == "cvt.f32.f16":
            r = _f32_bits(_f16_val(src[0]))
        elif op == "add.f32":
            r = _f32_bits(_f32_val(src[0]).astype(np.float32) + _f32_val(src[1]).astype(np.float32))
        elif op == "cvt.rn.f16x2.f32":   # d = {cvt(a) in the high half, cvt(b) in the low half}
            r = _pack(_f32_val(src[1]), _f32_val(src[0]), _f16_bits)
        else:
            raise SystemExit(f"the emulator does not know `{op}` ({line})")
        regs[d] = np.asarray(r, dtype=np.uint64).astype(np.uint32)
    return [regs[f"${i}"] for i in range(n_out)]


def _codes(w, i):
    return ((w >> np.uint32(4 * i)) & 0xF).astype(np.int64)


def _h2_dot_expected(w, h):
    """The fp16-pair dot as meant: lane 0 sums (q_i - 8) / 16 * a_i, i = 0..3, lane 1 i = 4..7,
    each step one fp16 rounding (fma), then fp32(lane 0) + fp32(lane 1) in fp32."""
    lanes = []
    for off in (0, 4):
        acc = None
        for i in range(4):
            q = (_codes(w, i + off) - 8) / 16.0
            a = _f16_val(h[i] >> (16 if off else 0))
            acc = _f16_val(_f16_bits(q * a if acc is None else q * a + acc))
        lanes.append(acc.astype(np.float32))
    return _f32_bits(lanes[0] + lanes[1])


def check_ptx(cand) -> int:
    rng = np.random.default_rng(7)
    n = 1 << 16
    failed = 0
    words = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    if hasattr(cand, "_H2_ACT_ASM"):
        a = rng.standard_normal((8, n)) * np.exp(rng.uniform(-6, 6, (8, n)))
        ab = _bf16_bits(a)
        x = [ab[2 * p] | (ab[2 * p + 1] << 16) for p in range(4)]
        got = emulate(cand._H2_ACT_ASM.value, x, 4)
        want = [_pack(_bf16_val(ab[i]), _bf16_val(ab[i + 4]), _f16_bits) for i in range(4)]
        ok = all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
        failed += not ok
        print(f"ptx _H2_ACT_ASM: bf16 words -> fp16 pairs (a_i, a_i+4), {n} samples: {'ok' if ok else 'FAIL'}")
    if hasattr(cand, "_H2_DOT_ASM"):
        h = [_pack(rng.standard_normal(n), rng.standard_normal(n), _f16_bits) for _ in range(4)]
        got = emulate(cand._H2_DOT_ASM.value, [words, *h], 1)[0]
        ok = np.array_equal(got, _h2_dot_expected(words, h))
        # the dequantization alone: register t_i holds codes (i, i + 4) as (q - 8) / 16, exactly
        exact = True
        for i in range(4):
            t = emulate(cand._H2_DOT_ASM.value.replace("add.f32 $0, flo, fhi", f"mov.b32 $0, t{i}"), [words, *h], 1)[0]
            exact &= np.array_equal(_f16_val(t & 0xFFFF), (_codes(words, i) - 8) / 16.0)
            exact &= np.array_equal(_f16_val(t >> 16), (_codes(words, i + 4) - 8) / 16.0)
        failed += not (ok and exact)
        print(f"ptx _H2_DOT_ASM: 8 codes x fp16 pairs, {n} samples, bit-exact: {'ok' if ok else 'FAIL'}; "
              f"(q - 8) / 16 exact: {'ok' if exact else 'FAIL'}")
    for b in range(4):
        name = f"_PAIR_ASM{b}"
        if hasattr(cand, name):
            got = emulate(getattr(cand, name).value, [words, words], 1)[0]
            ok = np.array_equal(_bf16_val(got & 0xFFFF), _codes(words, b) - 8.0) and \
                np.array_equal(_bf16_val(got >> 16), _codes(words, b + 4) - 8.0)
            failed += not ok
            print(f"ptx {name}: word -> bf16 pair (q_{b} - 8, q_{b + 4} - 8), {n} samples: {'ok' if ok else 'FAIL'}")
    if hasattr(cand, "_H2_DOT_ASM") and hasattr(cand, "_H2_ACT_ASM"):
        failed += _h2_precision(cand)
    return failed


def _h2_precision(cand) -> int:
    """The fp16-pair GEMV arithmetic (emulated PTX) at the m1 workload's K and at K = 28672, bf16
    inputs from reference.make_inputs, against the reference's C (which rounds W to bf16)."""
    import torch
    ref = _module(ROOT / "tasks" / "w4a16_gemm" / "reference.py", "w4a16_reference_p")
    failed = 0
    for n, k in ((96, 4096), (32, 28672)):
        gen = torch.Generator().manual_seed(k + n)
        inp = ref.make_inputs({"M": 1, "N": n, "K": k}, {"dtype": torch.bfloat16}, {}, gen, "cpu")
        want = ref.reference(**inp).float().numpy()[0]
        exact = (inp["A"].double() @ ((ref.unpack_int4(inp["Wq"]) - 8).double()
                                      * inp["S"].double().repeat_interleave(128, 0))).numpy()[0]
        a_bits = inp["A"].view(torch.int16).numpy().astype(np.uint32)[0] & 0xFFFF      # [K]
        x = [(a_bits[2 * p::8] | (a_bits[2 * p + 1::8] << 16)).astype(np.uint32) for p in range(4)]
        h = emulate(cand._H2_ACT_ASM.value, x, 4)                                         # [K/8] each
        w = inp["Wq"].numpy().view(np.uint32)                                               # [K/8, N]
        part = _f32_val(emulate(cand._H2_DOT_ASM.value, [w, *(v[:, None] for v in h)], 1)[0])
        s = inp["S"].float().numpy().astype(np.float64).repeat(16, axis=0)                  # per word
        got = 16.0 * (part * s).sum(axis=0)          # fp32 accumulation in some order: f64 here
        got_bf16 = _bf16_val(_bf16_bits(got))
        err = np.abs(got_bf16 - want)
        ok = bool(np.all(err <= 2e-2 + 2e-2 * np.abs(want)))
        failed += not ok
        print(f"ptx fp16-pair GEMV, M=1 N={n} K={k} (bf16): max |C - reference| {err.max():.2e}, "
              f"max |C - exact| before rounding {np.abs(got - exact).max():.2e} "
              f"(the reference's own: {np.abs(want - exact).max():.2e}) {'ok' if ok else 'FAIL'}")
    return failed


# ---------------------------------------------------------------------------------------------

def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: interp_check.py CANDIDATE.py [M,N,K ...]")
    import triton

    ref = _module(ROOT / "tasks" / "w4a16_gemm" / "reference.py", "w4a16_reference")
    cand = _module(Path(argv[0]), "w4a16_candidate")
    shapes = [tuple(int(x) for x in s.split(",")) for s in argv[1:]] or SHAPES
    failed = 0
    print(f"== {Path(argv[0]).name}: shapes (interpreter configs)")
    for m, n, k in shapes:
        ok, err = _check(ref, cand.run, m, n, k)
        failed += not ok
        print(f"M={m} N={n} K={k}: max abs error {err:.2e} {'ok' if ok else 'FAIL'}")
    if argv[1:]:
        return 1 if failed else 0

    print("== configs patched in one at a time")
    if hasattr(cand, "_prune_gemv"):   # the GEMV with the new load side (gemv_h2, gemv_prefetch)
        failed += check_gemv_configs(ref, cand)
    if "PAIRS" in cand._w4a16_kernel.arg_names:
        for bn, split in MMA_CONFIGS:
            cfg = triton.Config({"BM": 16, "BN": bn, "BK": 128, "SPLIT_K": split, "PLANES": False}, num_warps=4)
            cand._w4a16.configs, cand._CFGS, cand._MIN_BN = [cfg], [cfg], bn
            for m, n, k in ((2, 300, 512), (16, 200, 384)):
                ok, err = _check(ref, cand.run, m, n, k)
                failed += not ok
                print(f"MMA pairs BN={bn} SPLIT_K={split} M={m} N={n} K={k}: max abs error {err:.2e} "
                      f"{'ok' if ok else 'FAIL'}")

    print("== inline PTX on the emulator")
    failed += check_ptx(cand)
    print(f"== {Path(argv[0]).name}: {'all passed' if not failed else f'{failed} FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
