"""Candidates against the shipped expert and the fp32 token-by-token reference under the Triton CPU
interpreter, on inputs larger than the smoke workloads (several chunks, a partial last chunk,
two sequences, non-zero initial states) and on adversarial keys (near-parallel, beta ~ 1, almost no
decay: large entries in the inverse T). The interpreter has no bfloat16, so q, k, v are float16
(as in the smoke workloads) and dots are numpy float32: this checks the logic and the fp32-level
arithmetic, not tensor-core rounding. No figure here is a speed.

    python3 benchmarks/make_candidates.py benchmarks/studies/2026-12-04-gdn-prefill-candidates/candidates.toml /tmp/gdn_cands
    python3 benchmarks/studies/2026-12-04-gdn-prefill-candidates/interp_compare.py /tmp/gdn_cands wy_warps8 wy_split
"""

import importlib.util
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
import torch  # noqa: E402

TASK = Path(__file__).resolve().parents[3] / "tasks" / "gdn_chunk_prefill"
sys.path.insert(0, str(TASK))
import reference as R  # noqa: E402


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inputs(seq_lens, Hqk, Hv, K, V, seed, adversarial):
    gen = torch.Generator().manual_seed(seed)
    T = sum(seq_lens)
    axes = {"T": T, "N": len(seq_lens), "Hqk": Hqk, "Hv": Hv, "K": K, "V": V}
    x = R.make_inputs(axes, {"dtype": torch.float16}, {"seq_lens": seq_lens, "init_state": True}, gen, "cpu")
    if adversarial:
        base = torch.randn(1, Hqk, K, generator=gen)
        keys = base + 0.15 * torch.randn(T, Hqk, K, generator=gen)
        x["k"] = torch.nn.functional.normalize(keys, dim=-1).to(torch.float16)
        x["beta"] = 0.9 + 0.1 * torch.rand(T, Hv, generator=gen)
        x["g"] = -1e-3 * torch.rand(T, Hv, generator=gen)
    return x


CASES = (("make_inputs statistics, sequences of 300 and 437 tokens, K = V = 128", ([300, 437], 1, 2, 128, 128, 0, False)),
         ("adversarial keys, one sequence of 333 tokens, K = V = 128", ([333], 1, 2, 128, 128, 1, True)))


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        raise SystemExit("usage: interp_compare.py CANDIDATES_DIR NAME [NAME ...]")
    mods = {"shipped": _load(TASK / "expert.py", "shipped")}
    for name in argv[1:]:
        mods[name] = _load(Path(argv[0]) / "gdn_chunk_prefill" / f"{name}.py", name)
    for label, args in CASES:
        x = _inputs(*args)
        scale = args[3] ** -0.5
        ref_o, ref_s = R.reference(x["q"], x["k"], x["v"], x["g"], x["beta"], x["state"], x["cu_seqlens"], scale)
        outs = {n: m.run(x["q"], x["k"], x["v"], x["g"], x["beta"], x["state"], x["cu_seqlens"], scale)
                for n, m in mods.items()}
        print(f"{label}:")
        print("| solution | o rel. RMS err | o max abs err | state rel. RMS err | state max abs err | o max abs diff "
              "vs shipped | state max abs diff vs shipped |\n|---|---|---|---|---|---|---|")
        for n, (o, s) in outs.items():
            eo, es = o.float() - ref_o.float(), s - ref_s
            print(f"| {n} | {eo.norm() / ref_o.float().norm():.3e} | {eo.abs().max():.2e} | {es.norm() / ref_s.norm():.3e} "
                  f"| {es.abs().max():.2e} | {(o.float() - outs['shipped'][0].float()).abs().max():.2e} "
                  f"| {(s - outs['shipped'][1]).abs().max():.2e} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
