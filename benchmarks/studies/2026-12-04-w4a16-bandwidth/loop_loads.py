"""The main loop's memory instructions and issue cost per weight, from the SASS that
benchmarks/aot_screen.py dumped (--sass-dir) and its table (registers, shared memory), with rough
occupancy, grid and bytes-in-flight estimates for the two workloads. Arithmetic on compiler
output, not a measurement:

    /tmp/t36/bin/python benchmarks/aot_screen.py benchmarks/studies/2026-12-04-w4a16-bandwidth/screen.toml \
        --sass-dir /tmp/w4b_scr > benchmarks/studies/2026-12-04-w4a16-bandwidth/data/aot_screen_t36.md
    .venv/bin/python benchmarks/studies/2026-12-04-w4a16-bandwidth/loop_loads.py \
        benchmarks/studies/2026-12-04-w4a16-bandwidth/data/aot_screen_t36.md /tmp/w4b_scr

The main loop is found as aot_screen finds it (the innermost backward branch holding tensor-core
instructions, else global loads). Weights a thread handles per trip: the GEMV's 8 (BKW / warps) NR
4, the MMA kernel's BN BK / threads. Estimates (sm_90: 65536 registers, 2048 threads, 32 CTAs,
228 KB of shared memory an SM, 1 KB of it reserved per CTA; 132 SMs): CTAs an SM; the grid at
m1_n28672_k4096 (GEMV) or m16_n8192_k28672 (MMA) and its waves; weight bytes issued ahead of use
per SM with every resident CTA streaming: the GEMV's PREFETCH steps of words a thread (1 step
without prefetch: the load it waits on), the MMA's num_stages - 1 cp.async'd word tiles a CTA.
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
M1_N, M16_N = 28672, 8192


def _loop(sass: str) -> list[str]:
    ins = sass_instructions(sass)
    # each loop's opcodes with their modifiers (LDG.E.EF.128), predicates dropped
    loops = [[re.sub(r"^@!?U?P[T0-9]+\s+", "", t).split(" ", 1)[0] for a, t in ins if lo <= a <= hi]
             for lo, hi in backward_loops(ins)]
    for hot in (("HGMMA",), ("LDG", "LDGSTS")):
        found = [b for b in loops if any(op.split(".")[0] in hot for op in b)]
        if found:
            return min(found, key=len)
    return []


def _rows(table: str):
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[2].isdigit():
            yield cells[0], cells[1], int(cells[2]), int(cells[4])


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit("usage: loop_loads.py AOT_SCREEN_OUTPUT.md SASS_DIR")
    table, sass_dir = Path(argv[0]).read_text(), Path(argv[1])
    print("| kernel | config | regs | shared B | loop instr. | weights / thread / trip | instr. / weight | "
          "weight loads in the loop | other loads / shared ops | CTAs / SM (est.) | grid, waves (est.) | "
          "weight KB issued ahead / SM (est.) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, config, regs, shared in _rows(table):
        cfg = dict(kv.split("=") for kv in config.split())
        name = "_".join(f"{k}{v}" for k, v in cfg.items())
        path = sass_dir / f"{label}_{name}.sass"
        if not path.exists():
            print(f"| {label} | {config} | no SASS at {path} |")
            continue
        body = _loop(path.read_text())
        ops = Counter(op for op in body if op.split(".")[0] in ("LDG", "LDGSTS", "LDS", "LDSM", "STS"))
        warps = int(cfg["num_warps"])
        threads = 32 * warps
        if "NR" in cfg:   # the GEMV
            rows_a_thread, nr = int(cfg["BKW"]) // warps, int(cfg["NR"])
            weights = 8 * rows_a_thread * nr * 4
            grid = math.ceil(M1_N / (128 * nr)) * int(cfg["SPLIT_K"])
            pf = {"True": 1, "False": 0}.get(cfg["PREFETCH"], None)
            pf = int(cfg["PREFETCH"]) if pf is None else pf
            ahead = threads * max(pf, 1) * rows_a_thread * nr * 16
            weight_ops = {k: v for k, v in ops.items() if k.startswith("LDG.E.EF")}
        else:             # the MMA kernel
            weights = int(cfg["BN"]) * int(cfg["BK"]) // threads
            grid = math.ceil(M16_N / int(cfg["BN"])) * int(cfg["SPLIT_K"])
            ahead = (int(cfg["num_stages"]) - 1) * int(cfg["BN"]) * int(cfg["BK"]) // 2
            weight_ops = {k: v for k, v in ops.items() if k.startswith("LDGSTS")}
        regs_warp = math.ceil(regs * 32 / 256) * 256
        ctas = min(REGS // regs_warp // warps, THREADS // threads, SMEM // (shared + 1024), CTAS)
        resident = min(ctas, grid / SMS)
        other = {k: v for k, v in ops.items() if k not in weight_ops}
        fmt = lambda d: ", ".join(f"{v}× {k}" for k, v in sorted(d.items())) or "—"   # noqa: E731
        print(f"| {label} | {config} | {regs} | {shared} | {len(body)} | {weights} | {len(body) / weights:.2f} | "
              f"{fmt(weight_ops)} | {fmt(other)} | {ctas} | {grid}, {grid / (ctas * SMS):.2f} | "
              f"{resident * ahead / 1024:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
