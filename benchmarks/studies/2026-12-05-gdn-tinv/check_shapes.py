"""Runs candidate solutions of gdn_chunk_prefill on extra shapes under the CPU Triton interpreter and
compares them with the task's reference (the fp32 token-by-token recurrence) and with the shipped
expert. Correctness only: the interpreter evaluates every tl.dot in fp32 whatever its
input_precision, so tf32 / tf32x3 rounding is NOT exercised here (numerics_tf32.py emulates it);
and it has no bfloat16, so q, k, v and o are float16 here, as in the harness's smoke runs.

    TRITON_INTERPRET=1 .venv/bin/python benchmarks/studies/2026-12-05-gdn-tinv/check_shapes.py \
        /tmp/gdn_tinv/gdn_chunk_prefill/*.py

Shapes: sequence lengths that are not multiples of 64 (1, 15, 16, 17, 63, 64, 65, 100, 130, 200),
several packed sequences, Hv / Hqk in {1, 2, 4}, K in {32, 64, 128}, V in {16, 32, 64}, zero and
random initial states; inputs from the task's make_inputs (Qwen3-Next-like gates: some heads forget
within a token, others over thousands), plus one adversarial case (near-parallel keys, beta near 1,
almost no decay: large entries in T), as in ../2026-12-04-gdn-prefill-candidates/interp_compare.py.
"""

import importlib.util
import os
import sys
from pathlib import Path

assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
TASK = ROOT / "tasks" / "gdn_chunk_prefill"

# (name, seq_lens, Hqk, Hv, K, V, init_state)
SHAPES = [
    ("1x100 r2 K128 V32", [100], 1, 2, 128, 32, False),
    ("5seq r2 K64 V32 state", [1, 63, 64, 65, 130], 2, 4, 64, 32, True),
    ("3seq r1 K32 V16 state", [15, 16, 17], 2, 2, 32, 16, True),
    ("2seq r4 K128 V64 state", [200, 37], 1, 4, 128, 64, True),
    ("1x192 r2 K128 V64", [192], 2, 4, 128, 64, False),
    ("adversarial 2seq r2 K64 V32 state", [150, 70], 1, 2, 64, 32, True),
]
TOL = {"o": (3e-3, 3e-2, 2e-2), "final_state": (1.5e-2, 3e-2, 0.1)}   # atol, rtol, max_abs (task.toml)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(paths):
    ref = load(TASK / "reference.py", "gdn_ref")
    expert = load(TASK / "expert.py", "gdn_expert")
    sols = [(Path(p).stem, load(p, f"cand_{i}")) for i, p in enumerate(paths)]
    worst_ok = True
    print("| shape | solution | o max err vs ref | o fail frac | state max err vs ref | state fail frac | "
          "o max diff vs expert | state max diff vs expert |")
    print("|---|---|---|---|---|---|---|---|")
    for si, (label, lens, hqk, hv, K, V, init) in enumerate(SHAPES):
        T, N = sum(lens), len(lens)
        gen = torch.Generator().manual_seed(100 + si)
        axes = {"T": T, "N": N, "Hqk": hqk, "Hv": hv, "K": K, "V": V}
        inp = ref.make_inputs(axes, {"dtype": torch.float16}, {"seq_lens": lens, "init_state": init}, gen, "cpu")
        if label.startswith("adversarial"):
            base = torch.randn(1, hqk, K, generator=gen)
            keys = base + 0.15 * torch.randn(T, hqk, K, generator=gen)
            inp["k"] = torch.nn.functional.normalize(keys, dim=-1).to(torch.float16)
            inp["beta"] = 0.9 + 0.1 * torch.rand(T, hv, generator=gen)
            inp["g"] = -1e-3 * torch.rand(T, hv, generator=gen)
        args = [inp[n] for n in ("q", "k", "v", "g", "beta", "state", "cu_seqlens")] + [K ** -0.5]
        o_ref, s_ref = ref.reference(*args)
        o_exp, s_exp = expert.run(*args)
        for name, mod in sols:
            o, s = mod.run(*args)
            row = [label, name]
            for key, got, want, base in (("o", o, o_ref, o_exp), ("final_state", s, s_ref, s_exp)):
                atol, rtol, cap = TOL[key]
                err = (got.float() - want.float()).abs()
                bad = (err > atol + rtol * want.float().abs()).float().mean().item()
                worst_ok &= bad <= 1e-5 and err.max().item() <= cap and torch.isfinite(got).all().item()
                row += [f"{err.max().item():.2e}", f"{bad:.1e}"]
            row += [f"{(o.float() - o_exp.float()).abs().max().item():.2e}",
                    f"{(s - s_exp).abs().max().item():.2e}"]
            print("| " + " | ".join(row) + " |", flush=True)
    print("all within the task tolerance:" if worst_ok else "SOME OUTSIDE the task tolerance:", worst_ok)
    return 0 if worst_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
