"""Compiles Triton kernels for a GPU this machine does not have and reports what the compiler made
of them: registers, spilled bytes, shared memory, the tensor-core layouts and instructions, and the
main loop's instruction mix. A screening tool for candidates before they cost device time; it
measures nothing about speed.

    python3 benchmarks/aot_screen.py benchmarks/studies/<study>/screen.toml [--sass-dir DIR]

The spec names kernels and the compilations to make of each:

    target = [90, 32]                      # compute capability, warp size (default sm_90)

    [[kernels]]
    label = "shipped"
    file = "tasks/mla_decode/expert.py"    # relative to the repository root (commit = "bc05a22":
                                           # as of that git commit); or, instead,
    # candidate = "transposed_scores"      # a candidate of the candidates.toml beside this spec
    # candidates = "screened_out.toml"     # (optional) another edits file beside the spec
    kernel = "_mla_decode_split"           # a @triton.jit function of that file (an autotuned one is
                                           # unwrapped: the configs below replace its own)
    signature = {QN = "*bf16", H = "i32", desc = "tensordesc<bf16[{BLOCK_N},256]>", ...}
    constexprs = {BLOCK_H = 64, PS = 64}
    configs = [{BLOCK_N = 32, num_warps = 8, num_stages = 2}, ...]

The launcher specialises on alignment: `divisible_by_16` lists the parameters a real launch would
find divisible by 16 (pointers: 16-byte aligned; integers: multiples of 16); by default every
pointer. An integer argument equal to 1 is a constant to the launcher: give it as "constexpr".
`signature`, `constexprs` and `divisible_by_16` may also stand at the top level, for every kernel
that does not give its own.
Every parameter of the kernel is in `signature`, constexpr ones as "constexpr"; `{NAME}` in a
signature type is filled from the config (a descriptor's block shape follows BLOCK_N). A config's
keys other than num_warps / num_stages are constexprs. A Gluon kernel (@gluon.jit) is screened the
same way; its descriptors' types name their shared layout, as in
"tensordesc<bf16[64,256],NVMMASharedLayout(swizzle_byte_width=128, ...)>" (the layout's repr).

Per compilation it prints: registers per thread, stack (spilled) bytes, shared memory bytes (the
compiler's figure; sm_90 allows 232448 per block), the MMA layouts (warpsPerCTA, instrShape), the
wgmma shapes, and for the innermost loop with tensor-core instructions (else with global loads)
its counts of HGMMA / HMMA,
global loads (LDG plain, LDGSTS cp.async, i.e. pipelined, UTMALDG TMA), local loads/stores
(spills inside the loop), shared loads/stores and MUFU. A configuration the compiler rejects is a
row saying why. Compiling needs no GPU: the Triton wheel carries ptxas and cuobjdump.

The figures are those of the Triton that runs the screen, printed first. The H200 image runs its
own Triton (3.6.0 as of 2026-12); `bash benchmarks/triton_venv.sh 3.6.0 /tmp/t36` makes a side
environment with that version (and this project's torch), so `/tmp/t36/bin/python
benchmarks/aot_screen.py SPEC` screens with the GPU's compiler.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMEM_LIMIT_SM90 = 232448   # bytes of shared memory one block may use on sm_90


@dataclass
class Screen:
    label: str
    config: str
    regs: int
    stack_bytes: int
    shared_bytes: int
    mma_layouts: list[str]
    wgmma_shapes: list[str]
    loop: dict[str, int]

    def row(self) -> str:
        loop = ", ".join(f"{k} {v}" for k, v in self.loop.items())
        over = " (over the sm_90 limit)" if self.shared_bytes > SMEM_LIMIT_SM90 else ""
        return (f"| {self.label} | {self.config} | {self.regs} | {self.stack_bytes} | {self.shared_bytes}{over} | "
                f"{'; '.join(self.mma_layouts)} | {' '.join(self.wgmma_shapes)} | {loop} |")


HEADER = ("| kernel | config | regs | stack B | shared B | MMA layouts (warpsPerCTA, instrShape) | wgmma | "
          "hottest loop |\n|---|---|---|---|---|---|---|---|")


def _load_kernel(file: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"screened_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from triton.runtime.jit import JITFunction

    kernel = getattr(module, name, None)
    while kernel is not None and not isinstance(kernel, JITFunction) and hasattr(kernel, "fn"):
        kernel = kernel.fn   # an autotuned or heuristics-wrapped kernel: its configs come from the spec
    if not isinstance(kernel, JITFunction):
        raise SystemExit(f"{file}: no @triton.jit function named {name!r}")
    return kernel


def _tool(name: str) -> str:
    import triton
    path = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    if not path.exists():
        raise SystemExit(f"{path} is missing: this Triton wheel carries no CUDA tools to compile with")
    return str(path)


# tensor cores (wgmma, mma.sync), global loads (plain, cp.async, TMA), spills, shared memory, SFU
LOOP_OPCODES = ("HGMMA", "HMMA", "LDG", "LDGSTS", "UTMALDG", "LDL", "STL", "LDS", "LDSM", "STS", "MUFU")


def _opcode(text: str) -> str:
    """The base opcode of one SASS instruction: `@!P0 LDG.E.128 R4, ...` -> LDG."""
    return re.sub(r"^@!?U?P[T0-9]+\s+", "", text).split(" ", 1)[0].split(".", 1)[0]


def sass_instructions(sass: str) -> list[tuple[int, str]]:
    """(address, text) of every instruction of a cuobjdump SASS listing, in order."""
    return [(int(m.group(1), 16), m.group(2)) for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", sass)]


def backward_loops(ins: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """(first, last) address of each loop: a branch back to an earlier address, in listing order."""
    spans = []
    for addr, text in ins:
        target = re.search(r"BRA\s+0x([0-9a-f]+)", text)
        if target and int(target.group(1), 16) < addr:
            spans.append((int(target.group(1), 16), addr))
    return spans


def _loop_stats(sass: str) -> dict[str, int]:
    """Counts in the innermost backward-branch loop that holds tensor-core instructions, or, in a
    kernel without them, global loads (the main loop; an enclosing branch back over it and the
    tail would count the tail's code too)."""
    ins = sass_instructions(sass)
    loops = []
    for lo, hi in backward_loops(ins):
        body = [_opcode(t) for a, t in ins if lo <= a <= hi]
        loops.append({"instructions": len(body), **{op: body.count(op) for op in LOOP_OPCODES}})
    for hot in (("HGMMA", "HMMA"), ("LDG", "LDGSTS", "UTMALDG")):
        found = [c for c in loops if any(c[op] for op in hot)]
        if found:
            return min(found, key=lambda c: c["instructions"])
    return {}


class CompileOnlyDriver:
    """Enough of a CUDA driver for Triton's launcher to bind, specialise and compile for sm_90 on a
    machine without a GPU; it launches nothing. Install with
    ``triton.runtime.driver.set_active(CompileOnlyDriver())``, then ``kernel.warmup(...)``."""

    backend = "cuda"

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget
        return GPUTarget("cuda", 90, 32)

    def get_device_interface(self):
        import torch
        return torch.cuda

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")


def screen_one(kernel, label: str, signature: dict, constexprs: dict, config: dict, target: tuple[int, int],
               sass_dir: Path | None = None, divisible_by_16: list[str] | None = None) -> Screen:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    options = {k: config[k] for k in ("num_warps", "num_stages") if k in config}
    consts = {**constexprs, **{k: v for k, v in config.items() if k not in options}}
    missing = [a for a in kernel.arg_names if a not in signature]
    if missing:
        raise SystemExit(f"{label}: the signature lacks {', '.join(missing)}")
    sig = {a: str(signature[a]).format(**consts) for a in kernel.arg_names}
    # what the launcher would specialise on: 16-byte alignment (divisibility by 16) of these args
    aligned = divisible_by_16 if divisible_by_16 is not None else [a for a in sig if sig[a].startswith("*")]
    unknown = [a for a in aligned if a not in sig]
    if unknown:
        raise SystemExit(f"{label}: divisible_by_16 names {', '.join(unknown)}, not parameters of the kernel")
    attrs = {(kernel.arg_names.index(a),): [["tt.divisibility", 16]] for a in aligned}
    try:   # a Gluon kernel (explicit layouts) is lowered from its own AST source
        from triton.experimental.gluon._runtime import GluonASTSource, GluonJITFunction
    except ImportError:
        GluonASTSource = GluonJITFunction = None
    source_type = GluonASTSource if GluonJITFunction and isinstance(kernel, GluonJITFunction) else ASTSource
    source = source_type(kernel, sig, {k: v for k, v in consts.items() if sig.get(k) == "constexpr"}, attrs)
    compiled = triton.compile(source, target=GPUTarget("cuda", target[0], target[1]), options=options)
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(compiled.asm["cubin"])
    try:
        usage = subprocess.run([_tool("cuobjdump"), "--dump-resource-usage", f.name],
                               capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([_tool("cuobjdump"), "-sass", f.name], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    regs = re.search(r"REG:(\d+)", usage)
    stack = re.search(r"STACK:(\d+)", usage)
    name = "_".join(f"{k}{v}" for k, v in config.items())
    if sass_dir is not None:
        sass_dir.mkdir(parents=True, exist_ok=True)
        (sass_dir / f"{label}_{name}.sass").write_text(sass)
        (sass_dir / f"{label}_{name}.ttgir").write_text(compiled.asm["ttgir"])
    # "[warpsPerCTA], [instrShape]" for wgmma (v3); prefixed "v2" for mma.sync
    layouts = [re.sub(r"versionMajor = (\d+), versionMinor = \d+, ", lambda v: "" if v.group(1) == "3" else f"v{v.group(1)} ",
                      m.group(1))
               for m in re.finditer(r"^#mma\d* = #ttg\.nvidia_mma<\{(.*?)\}>", compiled.asm["ttgir"], re.M)]
    layouts = [re.sub(r"(warpsPerCTA|instrShape) = ", "", x) for x in layouts]
    return Screen(label=label, config=" ".join(f"{k}={v}" for k, v in config.items()),
                  regs=int(regs.group(1)) if regs else -1, stack_bytes=int(stack.group(1)) if stack else -1,
                  shared_bytes=int(compiled.metadata.shared), mma_layouts=layouts,
                  wgmma_shapes=sorted(set(re.findall(r"wgmma\.mma_async\S*?\.(m64n\d+k\d+)", compiled.asm["ptx"]))),
                  loop=_loop_stats(sass))


def _kernel_file(entry: dict, spec_path: Path, out_dir: Path) -> Path:
    """The entry's file (at its git ``commit`` if it names one), or its candidate written from the
    study's candidates.toml."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from make_candidates import _at_commit, build
    if "candidate" not in entry:
        if "commit" not in entry:
            return ROOT / entry["file"]
        path = out_dir / entry["commit"] / entry["file"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_at_commit(entry["commit"], entry["file"], f"{spec_path}: {entry['label']}"), encoding="utf-8")
        return path
    edits = spec_path.parent / entry.get("candidates", "candidates.toml")
    for path in build(edits, out_dir / edits.stem):
        if path.stem == entry["candidate"]:
            return path
    raise SystemExit(f"{edits} has no candidate {entry['candidate']!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("--sass-dir", type=Path, default=None, help="also write each compilation's SASS and TTGIR here")
    args = parser.parse_args(argv)
    try:
        spec = tomllib.loads(args.spec.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SystemExit(f"{args.spec}: {exc}") from None
    for i, entry in enumerate(spec.get("kernels", [])):
        missing = [k for k in ("label", "kernel", "configs") if k not in entry]
        if missing or not ("file" in entry or "candidate" in entry):
            raise SystemExit(f"{args.spec}: kernels[{i}] needs {', '.join(missing or ['file or candidate'])}")
    target = tuple(spec.get("target", (90, 32)))
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # Triton 3.9's default, without its warning
    import triton
    # the figures are this compiler's: screen with the GPU image's Triton (benchmarks/triton_venv.sh)
    print(f"Triton {triton.__version__}, target sm_{target[0]}\n")
    print(HEADER)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="aot_screen_") as candidates_dir:
        for entry in spec.get("kernels", []):
            kernel = _load_kernel(_kernel_file(entry, args.spec, Path(candidates_dir)), entry["kernel"])
            for config in entry["configs"]:
                try:
                    result = screen_one(kernel, entry["label"], entry.get("signature", spec.get("signature", {})),
                                        entry.get("constexprs", spec.get("constexprs", {})), config, target,
                                        args.sass_dir, entry.get("divisible_by_16", spec.get("divisible_by_16")))
                except Exception as exc:   # the compiler's verdict on this config, not the tool's failure
                    failed += 1
                    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
                    print(f"| {entry['label']} | {' '.join(f'{k}={v}' for k, v in config.items())} | "
                          f"compile failed: {reason} |||||", flush=True)
                    continue
                print(result.row(), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
