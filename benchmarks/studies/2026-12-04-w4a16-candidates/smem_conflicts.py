"""Shared-memory bank conflicts of every register <-> shared transfer in TTGIR dumps, as counted by
the Triton that parses them (Gluon's `get_shared_bank_conflicts`: the excess wavefronts per
wavefront of each ld/st.shared instruction, 0 = conflict free). Offline: no GPU.

    /tmp/t36/bin/python benchmarks/aot_screen.py SPEC --sass-dir DIR      # writes DIR/*.ttgir
    /tmp/t36/bin/python benchmarks/studies/2026-12-04-w4a16-candidates/smem_conflicts.py DIR/*.ttgir

One row per ttg.local_alloc with a value (registers -> shared: STS), ttg.local_store (STS),
ttg.local_load (shared -> registers: LDS, or LDSM for a dot operand, which the count treats as
plain loads) and ttg.async_copy_global_to_local (cp.async into shared: the pointer tensor's layout),
marked `loop` when it sits inside an scf.for; identical rows are one, with their number of ops. The
counts are the compiler's model of the lowering; the profile's wavefront figures are the measurement.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

KINDS = {"ttg.local_alloc": "store", "ttg.local_store": "store", "ttg.local_load": "load",
         "ttg.async_copy_global_to_local": "cp.async"}


def _shape_bits(type_text: str) -> tuple[list[int], int]:
    m = re.match(r"(?:tensor|!ttg\.memdesc)<([0-9x]+)x(!tt\.ptr<)?([a-z]+)(\d+)", type_text)
    dims = [int(d) for d in m.group(1).split("x")]
    return dims, int(m.group(4))


def conflicts(path: Path) -> list[tuple[str, str, str, str, int]]:
    from triton._C.libtriton import gluon_ir, ir

    ctx = ir.context()
    ir.load_dialects(ctx)
    module = ir.parse_mlir_module(str(path), ctx)
    builder = gluon_ir.GluonOpBuilder(ctx)
    loops: set[int] = set()
    module.walk(lambda op: loops.add(op.get_region(0).id()) if op.get_name() == "scf.for" else None)
    rows = []

    def visit(op):
        kind = KINDS.get(op.get_name())
        if kind is None or (op.get_name() == "ttg.local_alloc" and op.get_num_operands() == 0):
            return
        if op.get_name() == "ttg.local_load":
            reg, mem = op.get_result(0), op.get_operand(0)
        elif op.get_name() == "ttg.local_alloc":
            reg, mem = op.get_operand(0), op.get_result(0)
        else:
            reg, mem = op.get_operand(0), op.get_operand(1)
        shape, bits = _shape_bits(str(reg.get_type()))
        if op.get_name() == "ttg.async_copy_global_to_local":   # pointers: the element is the memdesc's
            bits = _shape_bits(str(mem.get_type()))[1]
        rl = builder.get_gluon_layout_from_tensor(reg)
        sl = builder.get_gluon_layout_from_memdesc(mem)
        n = builder.get_shared_bank_conflicts(rl._to_ir(builder), sl._to_ir(builder), shape, bits)
        region, in_loop = op.get_block().get_parent(), False
        while region is not None:
            if region.id() in loops:
                in_loop = True
                break
            region = region.get_parent_region()
        dtype = re.search(r"x(!tt\.ptr<)?([a-z]+\d+)", str(reg.get_type())).group(2)
        rows.append(("loop" if in_loop else "", kind, f"{'x'.join(map(str, shape))} {dtype}",
                     f"{type(rl).__name__} -> {type(sl).__name__}" if kind != "load"
                     else f"{type(sl).__name__} -> {type(rl).__name__}", n))

    module.walk(visit)
    return rows


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: smem_conflicts.py FILE.ttgir ...")
    print("| ttgir | where | transfer | tile | layouts | excess wavefronts | ops |\n|---|---|---|---|---|---|---|")
    for name in argv:
        rows = conflicts(Path(name))
        for row in dict.fromkeys(rows):   # the prologue's copies of a pipelined load: one row, counted
            where, kind, tile, layouts, n = row
            print(f"| {Path(name).stem} | {where} | {kind} | {tile} | {layouts} | {n} | {rows.count(row)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
