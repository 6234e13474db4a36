"""benchmarks/aot_screen.py: Triton kernels compiled for sm_90 on a machine without a GPU, and what
the compiler reports of them; every study's screen spec names files and candidates that exist."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from git_history import has_commit, pinned_commits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import aot_screen  # noqa: E402

# Triton 3.9 warns that its FP-fusion default will change; the screen compiles under today's default
pytestmark = pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def tile_matmul(A, B, C, BLOCK: tl.constexpr):
    """C[BLOCK, BLOCK] = A[BLOCK, BLOCK] . B[BLOCK, BLOCK] (fp16 in, fp32 out), one tile."""
    r = tl.arange(0, BLOCK)
    a = tl.load(A + r[:, None] * BLOCK + r[None, :])
    b = tl.load(B + r[:, None] * BLOCK + r[None, :])
    tl.store(C + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))
'''


def _tools_present() -> bool:
    import triton
    return (Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump").exists()


@pytest.mark.skipif(not _tools_present(), reason="this Triton wheel carries no ptxas/cuobjdump")
def test_a_dot_kernel_compiles_for_sm90_to_wgmma(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    kernel = aot_screen._load_kernel(path, "tile_matmul")
    sig = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "BLOCK": "constexpr"}
    got = aot_screen.screen_one(kernel, "toy", sig, {}, {"BLOCK": 64, "num_warps": 4, "num_stages": 1}, (90, 32))
    assert got.regs > 0 and got.stack_bytes == 0
    assert got.shared_bytes > 0                       # wgmma reads its operands from shared memory
    assert got.wgmma_shapes == ["m64n64k16"]
    assert got.mma_layouts and got.mma_layouts[0].startswith("[4, 1]")
    assert got.loop == {}                             # one tile: no loop
    assert "| toy | BLOCK=64 num_warps=4 num_stages=1 |" in got.row()


def test_a_missing_kernel_or_parameter_is_named(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    with pytest.raises(SystemExit, match="no @triton.jit function named 'nope'"):
        aot_screen._load_kernel(path, "nope")
    kernel = aot_screen._load_kernel(path, "tile_matmul")
    with pytest.raises(SystemExit, match="the signature lacks C, BLOCK"):
        aot_screen.screen_one(kernel, "toy", {"A": "*fp16", "B": "*fp16"}, {}, {"num_warps": 4}, (90, 32))


def test_every_study_screen_names_kernels_that_exist(tmp_path):
    specs = sorted((ROOT / "benchmarks" / "studies").glob("*/*screen.toml"))   # screen.toml, adopt_screen.toml
    assert specs
    for spec in specs:
        entries = tomllib.loads(spec.read_text())["kernels"]
        for entry in entries:
            # a shallow clone lacks the commit a file (or the candidates' base) is read at: checked where it is
            edits = spec.parent / entry.get("candidates", "candidates.toml")
            needed = [entry["commit"]] if "commit" in entry else []
            if "candidate" in entry:
                needed += pinned_commits(edits)
            if not all(map(has_commit, needed)):
                continue
            path = aot_screen._kernel_file(entry, spec, tmp_path / spec.parent.name)
            assert path.exists()
            aot_screen._load_kernel(path, entry["kernel"])


def test_a_file_at_a_commit_is_the_committed_text(tmp_path):
    # a study whose kernel was since adopted compiles the file as it was (HEAD: in any clone)
    entry = {"label": "then", "file": "tasks/rmsnorm/expert.py", "commit": "HEAD", "kernel": "x", "configs": []}
    path = aot_screen._kernel_file(entry, tmp_path / "screen.toml", tmp_path / "out")
    head = subprocess.run(["git", "-C", str(ROOT), "show", "HEAD:tasks/rmsnorm/expert.py"],
                          capture_output=True, text=True).stdout
    assert path.read_text() == head and path != ROOT / "tasks/rmsnorm/expert.py"
    with pytest.raises(SystemExit, match="which this checkout cannot read"):
        aot_screen._kernel_file({**entry, "commit": "0" * 40}, tmp_path / "screen.toml", tmp_path / "out2")


@pytest.mark.skipif(not _tools_present(), reason="this Triton wheel carries no ptxas/cuobjdump")
def test_a_config_the_compiler_rejects_is_a_row_and_a_failing_exit(tmp_path, capsys):
    (tmp_path / "k.py").write_text(KERNEL)
    spec = tmp_path / "screen.toml"
    spec.write_text(f'[[kernels]]\nlabel = "toy"\nfile = "{tmp_path / "k.py"}"\nkernel = "tile_matmul"\n'
                    'signature = {A = "*fp16", B = "*fp16", C = "*fp32", BLOCK = "constexpr"}\n'
                    'configs = [{BLOCK = 48, num_warps = 4}, {BLOCK = 64, num_warps = 4}]\n')
    assert aot_screen.main([str(spec)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Triton ") and out[0].endswith("target sm_90")
    rows = [line for line in out if line.startswith("| toy |")]
    assert rows[0].startswith("| toy | BLOCK=48 num_warps=4 | compile failed: ")
    assert rows[1].startswith("| toy | BLOCK=64 num_warps=4 | ") and "m64n64k16" in rows[1]


def test_a_bad_spec_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match="No such file"):
        aot_screen.main([str(tmp_path / "missing.toml")])
    (tmp_path / "broken.toml").write_text("x = [")
    with pytest.raises(SystemExit, match="broken.toml: "):
        aot_screen.main([str(tmp_path / "broken.toml")])
    (tmp_path / "partial.toml").write_text('[[kernels]]\nlabel = "x"\nkernel = "k"\nconfigs = []\n')
    with pytest.raises(SystemExit, match=r"kernels\[0\] needs file or candidate"):
        aot_screen.main([str(tmp_path / "partial.toml")])
