"""Rebuild the wild set's kernel copies (judges/wild/<task>/<name>.py) from their MANIFEST.md.

The copies of public kernels are not committed (judges/wild/README.md); each task's MANIFEST.md
names, per file, the repository, the commit, the upstream paths, the licence, the entry function
and the sha256 of the copy. A copy is a fixed header over the upstream text, verbatim (several
upstream files joined under ``# ===== <path> =====`` markers). This module downloads the upstream
files at the recorded commit, assembles each copy and writes it only if its sha256 matches.

    python -m d2k.judge.wild [--set wild|wild_dev] [--task TASK] [--check]

``--check`` downloads nothing: it verifies the copies already present (each against its sha256).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| `(?P<entry>[^`]+)` \| (?P<licence>.+?) \| (?P<sources>.+?) \| `[0-9a-f]+` \|")
FULL = re.compile(r"^- `(?P<file>[^`]+)`: https://github.com/(?P<repo>[^ ]+) @ `(?P<commit>[0-9a-f]{40})`, "
                  r"sha256 `(?P<sha>[0-9a-f]{64})`")
LINK = re.compile(r"\[(?P<path>[^\]]+)\]\(https://github.com/[^)]+\)")


@dataclass
class Copy:
    task: str
    file: str
    repo: str
    commit: str
    paths: list[str]
    licence: str
    entry: str
    sha256: str
    folder: str = "judges/wild"   # the set's folder: judges/wild (frozen) or judges/wild_dev (tunable)


def manifest(task_dir: Path) -> list[Copy]:
    """The copies listed in one task's MANIFEST.md."""
    text = (task_dir / "MANIFEST.md").read_text()
    rows = {m["file"]: m for m in map(ROW.match, text.splitlines()) if m}
    copies = []
    for m in filter(None, map(FULL.match, text.splitlines())):
        row = rows[m["file"]]
        copies.append(Copy(task_dir.name, m["file"], m["repo"], m["commit"], LINK.findall(row["sources"]),
                           row["licence"], row["entry"], m["sha"], f"judges/{task_dir.parent.name}"))
    return copies


def assemble(copy: Copy, texts: list[str]) -> str:
    """The copy's text: the header, then the upstream text (several files under markers)."""
    url = f"https://github.com/{copy.repo}"
    header = [f"# d2k wild set — task {copy.task}: a public expert kernel, copied verbatim below for judging only.",
              f"# repository: {url}",
              f"# commit:     {copy.commit}",
              *[f"# source:     {url}/blob/{copy.commit}/{path}" for path in copy.paths],
              f"# licence:    {copy.licence} (the upstream LICENSE; its notice is kept in the copied text where "
              "upstream has one)",
              f"# entry:      {copy.entry}   (the function a caller uses for this task; the file has no d2k run())",
              f"# Labels: {copy.folder}/{copy.task}/labels.toml, written blind (see MANIFEST.md). Not part of d2k's code."]
    body = texts[0] if len(texts) == 1 else "".join(f"\n# ===== {p} =====\n{t}" for p, t in zip(copy.paths, texts))
    return "\n".join(header) + "\n\n" + body


def split(copy: Copy, text: str) -> list[str]:
    """The upstream texts inside an existing copy (the inverse of ``assemble``)."""
    body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
    if len(copy.paths) == 1:
        return [body]
    parts = re.split(r"\n# ===== .* =====\n", body)
    return parts[1:]


def download(copy: Copy, path: str) -> str:
    raw = f"https://raw.githubusercontent.com/{copy.repo}/{copy.commit}/{path}"
    with urllib.request.urlopen(raw, timeout=60) as response:
        return response.read().decode("utf-8")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m d2k.judge.wild", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=".", help="the content root (holding judges/wild)")
    parser.add_argument("--set", default="wild", choices=("wild", "wild_dev"),
                        help="which set: wild (frozen, out of sample) or wild_dev (signals may be tuned on it)")
    parser.add_argument("--task", help="one task only")
    parser.add_argument("--check", action="store_true", help="verify the copies present; download nothing")
    args = parser.parse_args(argv)
    wild = Path(args.root) / "judges" / args.set
    if not wild.is_dir():
        print(f"error: no {wild} here (run from the repository root or pass --root)", file=sys.stderr)
        return 2
    bad = 0
    for task_dir in sorted(p for p in wild.iterdir() if (p / "MANIFEST.md").exists()):
        if args.task and task_dir.name != args.task:
            continue
        for copy in manifest(task_dir):
            target = task_dir / copy.file
            if args.check:
                if not target.exists():
                    print(f"missing  {target}")
                    bad += 1
                    continue
                ok = sha256(target.read_text()) == copy.sha256
            else:
                try:
                    text = assemble(copy, [download(copy, p) for p in copy.paths])
                except OSError as exc:
                    print(f"failed   {target}: {exc}", file=sys.stderr)
                    bad += 1
                    continue
                ok = sha256(text) == copy.sha256
                if ok:
                    target.write_text(text)
            bad += not ok
            print(f"{'ok' if ok else 'MISMATCH':8} {target}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
