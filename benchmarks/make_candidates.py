"""Writes a study's candidate solutions from the shipped files they change, so a study keeps its
edits (data) rather than full copies of a kernel:

    python3 benchmarks/make_candidates.py benchmarks/studies/<study>/candidates.toml OUT_DIR
    VARIANTS_DIR=OUT_DIR bash benchmarks/variants_h200.sh

The spec lists, per candidate, its task, name, the file it starts from (relative to the repository
root, or ``candidate:NAME`` for an earlier candidate of the same spec, so a variant of a variant
keeps only its own edits) and exact-text replacements, each of which must match exactly once: a
candidate whose base file has moved on stops with an error instead of silently testing something
else. Writes OUT_DIR/<task>/<name>.py, with a comment naming the base file and the spec.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
        path.write_text(f"# Candidate {cand['name']}: {cand['base']} with the replacements of {rel}.\n" + text,
                        encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit("usage: make_candidates.py SPEC.toml OUT_DIR")
    for path in build(Path(argv[0]), Path(argv[1])):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
