"""The M = 1 GEMV main loops of this study's screen, from the SASS that benchmarks/aot_screen.py dumped
(--sass-dir) and its table (registers, spilled bytes): instructions a weight, the loop's loads and
opcode mix, and where the word loads sit in the body. Arithmetic on compiler output, not a
measurement (adapted from ../2026-12-05-w4a16-fullwave/gemv_loop.py):

    /tmp/t36/bin/python benchmarks/aot_screen.py benchmarks/studies/2026-12-05-w4a16-loads/screen.toml \
        --sass-dir /tmp/w4loads_scr > benchmarks/studies/2026-12-05-w4a16-loads/data/aot_screen_t36.md
    .venv/bin/python benchmarks/studies/2026-12-05-w4a16-loads/gemv_loop.py \
        benchmarks/studies/2026-12-05-w4a16-loads/data/aot_screen_t36.md /tmp/w4loads_scr

The main loop is the innermost backward branch whose body holds the evict-first word loads
(LDG.E.EF.*). Weights a thread handles a trip: shipped 8 x (BKW / warps) word rows x 4 NR columns;
the candidates' trip is a scale group, 8 x (16 / warps) x 4 NR. Loads: LDG.E.EF.128 = 16 B of words
(4 columns), LDG.E.U16 = one activation (shipped), LDG.E.64 = 8 B: 4 activations (candidates, two a
word row) or 4 scales (both). "slots": CTAs an SM by registers and threads (65536 registers in
units of 256 a warp, 2048 threads, 32 CTAs). "issue us": loop instructions x 117.44 M weights (m1) /
weights a trip / 32 lanes / (132 SMs x 4 schedulers) / 1.755 GHz, every scheduler issuing every
cycle: a floor on the loop's issue time at m1, not a time.
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from aot_screen import backward_loops, sass_instructions  # noqa: E402  (benchmarks/aot_screen.py)

WEIGHTS = 28672 * 4096
CLOCK = 1.755e9


def main_loop(sass: str) -> list[str]:
    ins = sass_instructions(sass)
    loops = [[re.sub(r"^@!?U?P[T0-9]+\s+", "", t).split(" ", 1)[0] for a, t in ins if lo <= a <= hi]
             for lo, hi in backward_loops(ins)]
    found = [b for b in loops if any(op.startswith("LDG.E.EF") for op in b)]
    return min(found, key=len) if found else []


def rows(table: str):
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[2].isdigit():
            yield cells[0], cells[1], int(cells[2]), int(cells[3])


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit("usage: gemv_loop.py AOT_SCREEN_OUTPUT.md SASS_DIR")
    table, sass_dir = Path(argv[0]).read_text(), Path(argv[1])
    print("| kernel | NR, rows (BKW or 16), warps, PREFETCH | regs | stack B | slots / SM | loop instr. | "
          "weights / thread / trip | instr. / weight | loop loads | FFMA, LOP3, FMUL, FADD, SHF, other | "
          "word loads at | issue us (m1, floor) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, config, regs, stack in rows(table):
        cfg = dict(kv.split("=") for kv in config.split())
        name = "_".join(f"{k}{v}" for k, v in cfg.items())
        path = sass_dir / f"{label}_{name}.sass"
        if not path.exists():
            print(f"| {label} | {config} | no SASS at {path} |")
            continue
        body = main_loop(path.read_text())
        nr, warps = int(cfg["NR"]), int(cfg["num_warps"])
        rows_step = int(cfg["BKW"]) if "BKW" in cfg else 16
        weights = 8 * (rows_step // warps) * 4 * nr
        loads = Counter(op for op in body if op.startswith("LDG"))
        ops = Counter(op.split(".")[0] for op in body)
        regs_warp = math.ceil(regs * 32 / 256) * 256
        slots = min(65536 // regs_warp // warps, 2048 // (32 * warps), 32)
        known = ops["FFMA"] + ops["LOP3"] + ops["FMUL"] + ops["FADD"] + ops["SHF"]
        at = ", ".join(str(i) for i, op in enumerate(body) if op.startswith("LDG.E.EF"))
        issue = len(body) / weights * WEIGHTS / 32 / (132 * 4) / CLOCK * 1e6
        fmt = ", ".join(f"{v}x {k}" for k, v in sorted(loads.items()))
        print(f"| {label} | {nr}, {rows_step}, {warps}, {cfg['PREFETCH']} | {regs} | {stack} | {slots} | {len(body)} | "
              f"{weights} | {len(body) / weights:.2f} | {fmt} | {ops['FFMA']}, {ops['LOP3']}, {ops['FMUL']}, "
              f"{ops['FADD']}, {ops['SHF']}, {len(body) - known} | {at} / {len(body)} | {issue:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
