"""Whole-kernel instruction mix of the SASS that benchmarks/aot_screen.py dumps (--sass-dir). The merge
kernels have no loop, so aot_screen's "hottest loop" column is empty; this counts the straight-line
code instead (static counts per thread, not executed instructions; nothing here is a speed).

    /tmp/t36/bin/python benchmarks/aot_screen.py benchmarks/studies/2026-12-04-merge-candidates/screen.toml \
        --sass-dir /tmp/merge_sass
    .venv/bin/python benchmarks/studies/2026-12-04-merge-candidates/sass_mix.py /tmp/merge_sass [--head-dim 128]

Per dump: the instructions up to the first EXIT (NOPs left out; the subroutine after EXIT is the
64-bit integer division's slow path, reached by CALL when an operand does not fit 32 bits), the
16-byte and 4-byte global loads and stores, the MUFU (exp2, rcp, log2), the CALLs, and the o
elements each thread merges (tile rows x D / threads), with the instructions per 8 o elements.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from aot_screen import _opcode, sass_instructions  # noqa: E402  (benchmarks/aot_screen.py)

INT_OPS = ("IMAD", "IADD3", "LOP3", "SHF", "ISETP", "SEL", "LEA", "VIADD", "IABS", "I2F", "F2I")
FP_OPS = ("FMUL", "FFMA", "FADD", "FSEL", "FSETP", "FMNMX", "F2FP")


def mix(sass: str) -> dict[str, int]:
    ins = [text for _, text in sass_instructions(sass)]
    main = []
    for text in ins:
        if _opcode(text) == "EXIT":
            break
        main.append(text)
    ops = [_opcode(t) for t in main if _opcode(t) != "NOP"]

    def full(t: str) -> str:                     # the opcode with its modifiers, predicate dropped
        return re.sub(r"^@!?U?P[T0-9]+\s+", "", t).split(" ", 1)[0]

    names = [full(t) for t in main]
    return {
        "instructions": len(ops),
        "LDG.128": sum(n.startswith("LDG") and n.endswith(".128") for n in names),
        "LDG.32": sum(n.startswith("LDG") and not n.endswith((".64", ".128")) for n in names),
        "STG.128": sum(n.startswith("STG") and n.endswith(".128") for n in names),
        "STG.32": sum(n.startswith("STG") and not n.endswith((".64", ".128")) for n in names),
        "MUFU": ops.count("MUFU"),
        "CALL": ops.count("CALL"),
        "int ALU": sum(op.startswith(INT_OPS) for op in ops),
        "fp ALU": sum(op.startswith(FP_OPS) for op in ops),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sass_dir", type=Path)
    parser.add_argument("--head-dim", type=int, default=128)
    args = parser.parse_args(argv)
    rows = []
    for path in sorted(args.sass_dir.glob("*.sass")):
        m = re.search(r"(?:ROWS|TB)(\d+)_num_warps(\d+)", path.stem)
        per_thread = int(m.group(1)) * args.head_dim // (int(m.group(2)) * 32) if m else 0
        rows.append((path.stem, per_thread, mix(path.read_text())))
    if not rows:
        raise SystemExit(f"{args.sass_dir}: no .sass files")
    keys = list(rows[0][2])
    print("| dump | o elements / thread | " + " | ".join(keys) + " | instructions / 8 elements |")
    print("|---" * (len(keys) + 3) + "|")
    for stem, per_thread, counts in rows:
        per8 = f"{8 * counts['instructions'] / per_thread:.0f}" if per_thread else "?"
        print(f"| {stem} | {per_thread} | " + " | ".join(str(counts[k]) for k in keys) + f" | {per8} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
