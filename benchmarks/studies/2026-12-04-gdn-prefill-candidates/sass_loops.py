"""Loop census of SASS files written by `benchmarks/aot_screen.py --sass-dir DIR`: per file, the
instruction count and a few opcode counts, then every backward-branch loop with its size and its
barriers, shuffles, shared and local (spill) accesses. aot_screen's "hottest loop" column only
reports loops that hold tensor-core instructions or global loads; the WY kernel's triangular-solve
loops hold neither, so this lists them. Static counts: a loop body runs once per trip (15 trips for
the 16-row forward substitution).

    python3 benchmarks/studies/2026-12-04-gdn-prefill-candidates/sass_loops.py DIR/*.sass
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from aot_screen import _opcode, backward_loops, sass_instructions  # noqa: E402  (benchmarks/aot_screen.py)

OPS = ("BAR", "SHFL", "LDS", "STS", "LDL", "STL", "HMMA", "HGMMA", "FFMA", "LDG", "STG")


def census(sass: str) -> tuple[dict[str, int], list[dict[str, int]]]:
    ins = sass_instructions(sass)
    ops = [_opcode(t) for _, t in ins]
    total = {"instructions": len(ins), **{o: ops.count(o) for o in OPS}}
    loops = []
    for lo, hi in backward_loops(ins):
        body = [_opcode(t) for a, t in ins if lo <= a <= hi]
        loops.append({"instructions": len(body), **{o: body.count(o) for o in OPS if body.count(o)}})
    return total, loops


def main(paths: list[str]) -> int:
    for path in paths:
        with open(path, encoding="utf-8") as f:
            total, loops = census(f.read())
        print(path.rsplit("/", 1)[-1] + ": " + ", ".join(f"{k} {v}" for k, v in total.items()))
        for loop in loops:
            print("    loop: " + ", ".join(f"{k} {v}" for k, v in loop.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
