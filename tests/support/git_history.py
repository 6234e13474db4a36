"""Whether this checkout's git history holds a commit: a shallow clone (CI may make one) lacks the
older commits that some studies read their base files at, and the tests that need them skip there."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # tests/support/ -> the repository root


def has_commit(commit: str) -> bool:
    return subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode == 0


def pinned_commits(spec: Path) -> set[str]:
    """The commits a study spec (candidates or screen TOML) pins its base files to."""
    return set(re.findall(r'^commit = "([0-9a-f]+)"', spec.read_text(), re.M))
