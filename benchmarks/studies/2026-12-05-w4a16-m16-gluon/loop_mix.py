"""The main loop's instruction mix, per scale group, of the SASS that benchmarks/aot_screen.py
wrote (--sass-dir) for screen.toml: what the offline compile made of each kernel, not a speed.

    /tmp/t36/bin/python benchmarks/studies/2026-12-05-w4a16-m16-gluon/loop_mix.py SASS_DIR

Per compilation: the innermost loop holding tensor-core instructions (aot_screen's choice), the
scale groups one trip covers (shipped: 1, BK = 128; gluon: PF + 1, the unrolled register sets),
its instructions per group by opcode, the global-load widths, and the shared-memory instructions
(LDS/STS/LDSM) in the loop and in the whole kernel.
"""
import collections
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from aot_screen import _opcode, backward_loops, sass_instructions  # noqa: E402

OPS = ("HMMA", "HGMMA", "LOP3", "SHF", "HFMA2", "PRMT", "FFMA", "IMAD", "LDG", "LDGSTS", "LDS", "LDSM", "STS",
       "LDL", "STL", "BAR")


def main(d: Path) -> None:
    print("| compilation | groups a trip | loop instr / group | " + " | ".join(OPS) + " | LDG widths (loop) | LDS+STS+LDSM whole kernel |")
    print("|---|---|---|" + "---|" * len(OPS) + "---|---|")
    for f in sorted(d.glob("*.sass")):
        ins = sass_instructions(f.read_text())
        loops = []
        for lo, hi in backward_loops(ins):
            body = [t for a, t in ins if lo <= a <= hi]
            ops = [_opcode(t) for t in body]
            if any(o in ("HMMA", "HGMMA") for o in ops):
                loops.append((len(body), body, ops))
        if not loops:
            continue
        _, body, ops = min(loops, key=lambda x: x[0])
        m = re.search(r"PF(\d)", f.stem)
        groups = int(m.group(1)) + 1 if (f.stem.startswith("gluon") and m) else 1
        c = collections.Counter(ops)
        widths = collections.Counter(re.sub(r"^@!?P\d+\s+", "", t).split()[0] for t in body if _opcode(t) in ("LDG", "LDGSTS"))
        whole = collections.Counter(_opcode(t) for _, t in ins)
        print(f"| {f.stem} | {groups} | {len(body) / groups:.0f} | " + " | ".join(f"{c[o] / groups:g}" for o in OPS)
              + f" | {', '.join(f'{k} x{v}' for k, v in sorted(widths.items()))} | {whole['LDS'] + whole['STS'] + whole['LDSM']} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
