"""Main-loop census of fp8 kernels in SASS files written by `benchmarks/aot_screen.py --sass-dir DIR`.

aot_screen's "hottest loop" looks for HGMMA / HMMA, but Hopper's fp8 wgmma is spelled QGMMA in
SASS, so for an fp8 kernel it falls back to the innermost loop with global loads: in the
warp-specialized kernel that is the one-warp TMA producer, not the math loop. This lists, per
file, the whole kernel's counts and every innermost backward-branch loop that holds QGMMA
(a consumer's K loop; two in the Gluon kernel, one per consumer warpgroup) or UTMALDG (the
producer's), with what sits in it: wgmma, FFMA / FMUL (the promotion), global loads (scales),
barriers, mbarrier operations (SYNCS), and local loads / stores (spills); and the highest register
number used anywhere. Static counts, one trip of the body (one 128-wide scale group).

    python3 benchmarks/studies/2026-12-04-fp8-candidates/sass_loops.py DIR/*.sass
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from aot_screen import _opcode, backward_loops, sass_instructions  # noqa: E402  (benchmarks/aot_screen.py)

OPS = ("QGMMA", "HGMMA", "FFMA", "FMUL", "FADD", "LDG", "UTMALDG", "UTMASTG", "BAR", "SYNCS", "LDL", "STL",
       "LDS", "STS", "STSM", "USETMAXREG")


def census(sass: str) -> tuple[dict[str, int], list[dict[str, int]]]:
    ins = sass_instructions(sass)
    ops = [_opcode(t) for _, t in ins]
    total = {"instructions": len(ins), **{o: ops.count(o) for o in OPS if ops.count(o)}}
    # registers a thread actually touches (the launch figure of a warp-specialized kernel, 168 at
    # 384 threads, is what each warp holds before setmaxnreg moves registers between partitions)
    total["highest register"] = max((int(r) for _, t in ins for r in re.findall(r"\bR(\d+)\b", t)), default=-1)
    spans = backward_loops(ins)
    loops = []
    for lo, hi in spans:
        # innermost: no other backward branch lies strictly inside this one
        if any(lo <= a and b <= hi and (a, b) != (lo, hi) for a, b in spans):
            continue
        body = [_opcode(t) for a, t in ins if lo <= a <= hi]
        if not any(op in body for op in ("QGMMA", "HGMMA", "UTMALDG", "LDGSTS")):
            continue
        loops.append({"at": f"0x{lo:04x}", "instructions": len(body),
                      **{o: body.count(o) for o in OPS if body.count(o)}})
    return total, loops


def main(paths: list[str]) -> int:
    for path in paths:
        with open(path, encoding="utf-8") as f:
            total, loops = census(f.read())
        print(path.rsplit("/", 1)[-1] + ": " + ", ".join(f"{k} {v}" for k, v in total.items()))
        for loop in loops:
            print("    loop " + ", ".join(f"{k} {v}" for k, v in loop.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
