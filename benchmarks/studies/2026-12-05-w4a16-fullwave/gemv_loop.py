"""The M = 1 GEMV loops of this study's screen, from the SASS that benchmarks/aot_screen.py dumped
(--sass-dir) and its table (registers, spilled bytes), with occupancy, grid and in-flight estimates
for w4a16_gemm_m1_n28672_k4096 on a 132-SM H100/H200. Arithmetic on compiler output, not a
measurement:

    /tmp/t36/bin/python benchmarks/aot_screen.py benchmarks/studies/2026-12-05-w4a16-fullwave/screen.toml \
        --sass-dir /tmp/w4fw_scr > benchmarks/studies/2026-12-05-w4a16-fullwave/data/aot_screen_t36.md
    .venv/bin/python benchmarks/studies/2026-12-05-w4a16-fullwave/gemv_loop.py \
        benchmarks/studies/2026-12-05-w4a16-fullwave/data/aot_screen_t36.md /tmp/w4fw_scr

aot_screen's "hottest loop" is the innermost loop with global loads, which for the new kernels is the
epilogue's partial-sum loop; here the main loop is the innermost backward branch whose body holds the
word loads: evict-first loads into registers (LDG.E.EF.*) or, pipelined (STAGES > 1), cp.async
into shared memory (LDGSTS). Weights a thread handles per trip: 8 codes x (BKW / warps) word rows
x 4 NR columns.

Estimates (sm_90: 65536 registers an SM allocated per warp in units of 256, 2048 threads, 32 CTAs,
233472 B of shared memory, 1 KB of it reserved per CTA): CTAs an SM ("slots"); the m1 grid: shipped =
T x SPLIT_K (the config's SPLIT_K), gemv_streamk = 132 x slots (CPS = slots), gemv_fitsplit = T x S
with S = floor(132 slots / T); "fill" = grid / (132 slots) for a grid of at most one wave (else the
waves); "busiest SM" = the most CTAs any SM holds over the mean (1.00 = balanced; the block
scheduler spreads one wave's CTAs over the SMs as evenly as it can, so ceil(grid / 132) / (grid /
132)); "KB / step / SM": weight bytes one step of every resident CTA loads, per SM (mean), the bytes
a thread has in flight at once in the register loop (PREFETCH: while it computes, else while it
waits); "KB ahead / SM": with STAGES > 1, the cp.async of a step issues at the end of the body
STAGES - 1 trips before its use (column "word loads at"), so (STAGES - 2) whole steps of words are
in flight beyond the body's tail while a step is computed (STAGES 2: none, as with the register
PREFETCH, whose load also issues at the body's end); "word loads at": where in the loop body (instruction index / loop length) the word loads
issue, a register load late in the body is waited for early in the next trip; "issue us": loop
instructions x 117.44 M weights / instr.-weights-per-trip / 32 lanes / (132 x 4 schedulers) /
1.755 GHz, every scheduler issuing every cycle, for the SM-balanced case (x "busiest SM" for the
slowest SM).
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from aot_screen import backward_loops, sass_instructions  # noqa: E402  (benchmarks/aot_screen.py)

SMS, REGS, THREADS, CTAS, SMEM = 132, 65536, 2048, 32, 233472
N, K = 28672, 4096
WEIGHTS = N * K
CLOCK = 1.755e9


def main_loop(sass: str) -> list[str]:
    ins = sass_instructions(sass)
    loops = [[re.sub(r"^@!?U?P[T0-9]+\s+", "", t).split(" ", 1)[0] for a, t in ins if lo <= a <= hi]
             for lo, hi in backward_loops(ins)]
    found = [b for b in loops if any(op.startswith(("LDG.E.EF", "LDGSTS")) for op in b)]
    return min(found, key=len) if found else []


def rows(table: str):
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[2].isdigit():
            yield cells[0], cells[1], int(cells[2]), int(cells[3]), int(cells[4].split()[0])


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit("usage: gemv_loop.py AOT_SCREEN_OUTPUT.md SASS_DIR")
    table, sass_dir = Path(argv[0]).read_text(), Path(argv[1])
    print("| kernel | NR, BKW, warps, PREFETCH, STAGES | regs | stack B | shared B | loop instr. | "
          "weights / thread / trip | instr. / weight | loop loads | FFMA, LOP3, FSEL, other | slots / SM | "
          "m1 grid, fill | busiest SM | KB / step / SM | KB ahead / SM | word loads at | issue us (balanced, busiest) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, config, regs, stack, shared in rows(table):
        cfg = dict(kv.split("=") for kv in config.split())
        name = "_".join(f"{k}{v}" for k, v in cfg.items())
        path = sass_dir / f"{label}_{name}.sass"
        if not path.exists():
            print(f"| {label} | {config} | no SASS at {path} |")
            continue
        body = main_loop(path.read_text())
        nr, bkw, warps = int(cfg["NR"]), int(cfg["BKW"]), int(cfg["num_warps"])
        threads = 32 * warps
        rows_a_thread = bkw // warps
        weights = 8 * rows_a_thread * nr * 4
        loads = Counter(op for op in body if op.startswith(("LDG", "LDS")) and op != "LDGDEPBAR")
        ops = Counter(op.split(".")[0] for op in body)
        regs_warp = math.ceil(regs * 32 / 256) * 256
        slots = min(REGS // regs_warp // warps, THREADS // threads, CTAS, SMEM // (shared + 1024))
        stages = int(cfg.get("STAGES", 1))
        tiles = math.ceil(N / (128 * nr))
        if label.startswith("shipped"):
            grid = tiles * int(cfg["SPLIT_K"])
        elif "streamk" in label:
            grid = SMS * slots
        else:
            grid = tiles * max(1, min(K // 8, SMS * slots // tiles))
        waves = grid / (SMS * slots)
        fill = f"{waves:.2f}" if waves <= 1 else f"{waves:.2f} waves"
        busiest = math.ceil(grid / SMS) / (grid / SMS) if waves <= 1 else math.ceil(waves) / waves
        step_kb = min(grid / SMS, slots) * threads * rows_a_thread * nr * 16 / 1024
        ahead = f"{(stages - 2) * step_kb:.0f}" if stages > 1 else "-"
        issue = len(body) / weights * WEIGHTS / 32 / (SMS * 4) / CLOCK * 1e6
        other = len(body) - ops["FFMA"] - ops["LOP3"] - ops["FSEL"]
        at = ", ".join(str(i) for i, op in enumerate(body) if op.startswith(("LDG.E.EF", "LDGSTS.E.BYPASS")))
        at = f"{at} / {len(body)}"
        fmt = ", ".join(f"{v}x {k}" for k, v in sorted(loads.items()))
        print(f"| {label} | {nr}, {bkw}, {warps}, {cfg['PREFETCH']}, {stages} | {regs} | {stack} | {shared} | "
              f"{len(body)} | {weights} | {len(body) / weights:.2f} | {fmt} | "
              f"{ops['FFMA']}, {ops['LOP3']}, {ops['FSEL']}, {other} | {slots} | {grid}, {fill} | {busiest:.2f} | "
              f"{step_kb:.0f} | {ahead} | {at} | {issue:.1f}, {issue * busiest:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
