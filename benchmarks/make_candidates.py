"""Writes a study's candidate solutions from the shipped files they change, so a study keeps its
edits (data) rather than full copies of a kernel:

    python3 benchmarks/make_candidates.py benchmarks/studies/<study>/candidates.toml OUT_DIR
    VARIANTS_DIR=OUT_DIR bash benchmarks/variants_h200.sh

The spec lists, per candidate, its task, name, the file it starts from (relative to the repository
root, or ``candidate:NAME`` for an earlier candidate of the same spec, so a variant of a variant
keeps only its own edits), optionally the git ``commit`` to read that file at (a study whose winner
was adopted keeps its edits against the file as it was, without a frozen copy; needs the
repository's history, or a snapshot's .bases/ below) and exact-text replacements, each of which
must match exactly once: a candidate whose base file has moved on stops with an error instead of
silently testing something else. Writes OUT_DIR/<task>/<name>.py, with a comment naming the base
file and the spec.

A device call runs on a snapshot of the tree without git history (benchmarks/snapshot.sh), so the
pinned base files travel with it: `make_candidates.py --write-bases SNAP` writes every file that a
study spec (candidates or screen) pins to a commit as SNAP/.bases/<commit>/<path>, and a pinned
base is read from ROOT/.bases first, from git otherwise.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASES = ".bases"   # a snapshot's copies of the pinned base files: .bases/<commit>/<path>


def _at_commit(commit: str, path: str, who: str) -> str:
    """The text of ``path`` at git ``commit`` (the file as the study's edits were written for it):
    the snapshot's copy in .bases/ if there is one, else from git."""
    frozen = ROOT / BASES / commit / path
    if frozen.is_file():
        return frozen.read_text(encoding="utf-8")
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"],
                              capture_output=True, text=True)
    except FileNotFoundError:
        raise SystemExit(f"{who} starts from {path} at commit {commit}, and git is not installed") from None
    if done.returncode != 0:
        raise SystemExit(f"{who} starts from {path} at commit {commit}, which this checkout cannot "
                         f"read (a shallow clone, or a snapshot made without benchmarks/snapshot.sh?): "
                         f"{done.stderr.strip()}")
    return done.stdout


def pinned_bases() -> list[tuple[str, str]]:
    """Every (commit, path) that a study spec under benchmarks/studies pins: candidates'
    ``base`` and screen kernels' ``file`` entries that name a ``commit``."""
    pins = set()
    for spec_path in sorted((ROOT / "benchmarks" / "studies").glob("*/*.toml")):
        try:
            spec = tomllib.loads(spec_path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise SystemExit(f"{spec_path}: {exc}") from None
        for entry in spec.get("candidates", []) + spec.get("kernels", []):
            path = entry.get("base") or entry.get("file")
            if "commit" in entry and path and not path.startswith("candidate:"):
                pins.add((entry["commit"], path))
    return sorted(pins)


def write_bases(snapshot: Path) -> list[Path]:
    """Copies every pinned base file, read from git, into SNAPSHOT/.bases/<commit>/<path>."""
    written = []
    for commit, path in pinned_bases():
        out = snapshot / BASES / commit / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(_at_commit(commit, path, f"pinned base {path}"), encoding="utf-8")
        written.append(out)
    return written


def build(spec_path: Path, out_dir: Path) -> list[Path]:
    spec = tomllib.loads(spec_path.read_text(encoding="utf-8"))
    written, texts = [], {}
    for cand in spec.get("candidates", []):
        base = cand["base"]
        if base.startswith("candidate:"):
            if base.removeprefix("candidate:") not in texts:
                raise SystemExit(f"{spec_path}: candidate {cand['name']} starts from {base}, "
                                 "which no earlier candidate of the spec is")
            text = texts[base.removeprefix("candidate:")]
        elif "commit" in cand:
            text = _at_commit(cand["commit"], base, f"{spec_path}: candidate {cand['name']}")
        else:
            text = (ROOT / base).read_text(encoding="utf-8")
        for i, rep in enumerate(cand.get("replace", [])):
            found = text.count(rep["old"])
            if found != 1:
                raise SystemExit(f"{spec_path}: candidate {cand['name']}, replacement {i + 1}: "
                                 f"its text occurs {found} times in {cand['base']} (expected once)")
            text = text.replace(rep["old"], rep["new"])
        texts[cand["name"]] = text
        path = out_dir / cand["task"] / f"{cand['name']}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        rel = spec_path.resolve().relative_to(ROOT) if spec_path.resolve().is_relative_to(ROOT) else spec_path
        at = f" as of {cand['commit']}" if "commit" in cand else ""
        path.write_text(f"# Candidate {cand['name']}: {cand['base']}{at} with the replacements of {rel}.\n" + text,
                        encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit("usage: make_candidates.py SPEC.toml OUT_DIR | --write-bases SNAPSHOT_DIR")
    if argv[0] == "--write-bases":
        written = write_bases(Path(argv[1]))
        print(f"{len(written)} pinned base files under {Path(argv[1]) / BASES}")
        return 0
    for path in build(Path(argv[0]), Path(argv[1])):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
