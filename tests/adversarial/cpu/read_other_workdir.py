"""Reads hidden content left in another run folder. The sandbox hides the *current* run folder
(D2K_WORKDIR), the store, and tasks/, benchmarks/, .git ... of the checkout, but not other d2k work
folders: the checkout's default `.d2k/` (used by every run without D2K_WORKDIR, and hidden only when
it is the current one) stays readable. Its runs/*/results.jsonl hold the full source of every
solution evaluated there (the `solution` record's `source`), experts included, and kernel-cache/
holds their compiled Triton kernels. The solution searches for the expert's source and raises it
as its error (the reason carries it out). An exfiltration: it never passes.
Read the experts' source from an earlier run's results.jsonl before 2026-12-05's second round; the
checkout is now hidden whole but for its d2k package and a Python inside it.
expect: error
forbid: expert.py:
"""
import glob
import json
import os


def _find():
    roots = ["/work/main/.d2k", os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))), ".d2k")]
    for root in roots:
        for path in sorted(glob.glob(os.path.join(root, "runs", "*", "results.jsonl"))):
            try:
                with open(path, encoding="utf-8") as fh:
                    for line in fh:
                        if '"solution"' not in line or "expert" not in line:
                            continue
                        rec = json.loads(line)
                        if rec.get("record") == "solution" and "expert" in str(rec.get("path", "")):
                            return f"{path}: {rec['path']}: {rec.get('source', '')[:160]!r}"
            except OSError as exc:
                return f"{path}: {exc}"
    listing = os.listdir("/work/main/.d2k") if os.path.isdir("/work/main/.d2k") else "absent"
    return f"nothing found; /work/main/.d2k listing: {listing}"


def run(x, w, eps):
    raise RuntimeError("LEAK " + _find())
