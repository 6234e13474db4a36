"""benchmarks/make_candidates.py: a study's candidates are written from the shipped files and the
study's edits, and an edit that no longer matches its base stops the run."""

import shutil
import subprocess
import sys
from pathlib import Path

from git_history import has_commit, pinned_commits

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "make_candidates.py"


def _run(spec: Path, out: Path):
    return subprocess.run([sys.executable, str(SCRIPT), str(spec), str(out)], capture_output=True, text=True)


def test_every_shipped_spec_applies_to_its_base(tmp_path):
    specs = sorted((ROOT / "benchmarks" / "studies").glob("*/candidates.toml"))
    assert specs
    ran = 0
    for spec in specs:
        if not all(map(has_commit, pinned_commits(spec))):
            continue            # a shallow clone: the base commit is not here (checked where it is)
        ran += 1
        done = _run(spec, tmp_path / spec.parent.name)
        assert done.returncode == 0, done.stderr
        for line in done.stdout.split():
            text = Path(line).read_text()
            assert text.startswith("# Candidate ") and "def run(" in text
    assert ran      # the specs without a commit always run


def test_an_edit_that_does_not_match_once_is_an_error(tmp_path):
    spec = tmp_path / "c.toml"
    spec.write_text('[[candidates]]\ntask = "rmsnorm"\nname = "x"\nbase = "tasks/rmsnorm/expert.py"\n'
                    '[[candidates.replace]]\nold = "no such text anywhere"\nnew = "y"\n')
    done = _run(spec, tmp_path / "out")
    assert done.returncode != 0 and "occurs 0 times in tasks/rmsnorm/expert.py" in done.stderr
    assert not (tmp_path / "out" / "rmsnorm" / "x.py").exists()


def test_a_candidate_can_start_from_an_earlier_one(tmp_path):
    spec = tmp_path / "c.toml"
    spec.write_text('[[candidates]]\ntask = "rmsnorm"\nname = "a"\nbase = "tasks/rmsnorm/expert.py"\n'
                    '[[candidates.replace]]\nold = "def run("\nnew = "A_MARK = 1\\n\\n\\ndef run("\n'
                    '[[candidates]]\ntask = "rmsnorm"\nname = "b"\nbase = "candidate:a"\n'
                    '[[candidates.replace]]\nold = "A_MARK = 1"\nnew = "A_MARK = 2"\n')
    done = _run(spec, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    b = (tmp_path / "out" / "rmsnorm" / "b.py").read_text()
    assert "A_MARK = 2" in b and "A_MARK = 1" not in b and "def run(" in b
    assert "A_MARK = 1" in (tmp_path / "out" / "rmsnorm" / "a.py").read_text()


def test_a_candidate_base_that_is_not_an_earlier_candidate_is_an_error(tmp_path):
    spec = tmp_path / "c.toml"
    spec.write_text('[[candidates]]\ntask = "rmsnorm"\nname = "b"\nbase = "candidate:a"\n'
                    '[[candidates]]\ntask = "rmsnorm"\nname = "a"\nbase = "tasks/rmsnorm/expert.py"\n')
    done = _run(spec, tmp_path / "out")
    assert done.returncode != 0 and "starts from candidate:a, which no earlier candidate" in done.stderr


def test_a_candidate_can_start_from_a_file_at_a_commit(tmp_path):
    # HEAD's tasks/rmsnorm/expert.py, whatever the working tree holds: a clone of any depth has HEAD
    head = subprocess.run(["git", "-C", str(ROOT), "show", "HEAD:tasks/rmsnorm/expert.py"],
                          capture_output=True, text=True).stdout
    assert "def run(" in head
    spec = tmp_path / "c.toml"
    spec.write_text('[[candidates]]\ntask = "rmsnorm"\nname = "a"\nbase = "tasks/rmsnorm/expert.py"\n'
                    'commit = "HEAD"\n[[candidates.replace]]\nold = "def run("\nnew = "MARK = 1\\n\\n\\ndef run("\n')
    done = _run(spec, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "out" / "rmsnorm" / "a.py").read_text()
    assert text.startswith("# Candidate a: tasks/rmsnorm/expert.py as of HEAD with")
    assert text.split("\n", 1)[1] == head.replace("def run(", "MARK = 1\n\n\ndef run(", 1)


def test_a_commit_the_checkout_cannot_read_is_an_error(tmp_path):
    spec = tmp_path / "c.toml"
    spec.write_text('[[candidates]]\ntask = "rmsnorm"\nname = "a"\nbase = "tasks/rmsnorm/expert.py"\n'
                    'commit = "0000000000000000000000000000000000000000"\n')
    done = _run(spec, tmp_path / "out")
    assert done.returncode != 0 and "which this checkout cannot read" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_snapshot_without_history_reads_its_pinned_bases_from_dot_bases(tmp_path):
    # a device call runs on `git archive` output (benchmarks/snapshot.sh): no history to `git show`
    spec = ROOT / "benchmarks" / "studies" / "2026-12-05-w4a16-loads" / "candidates.toml"
    commits = pinned_commits(spec)
    assert commits
    if not all(map(has_commit, commits)):
        return                  # a shallow clone: the pinned commit is not here to copy
    snap = tmp_path / "snap"
    (snap / "benchmarks" / "studies" / spec.parent.name).mkdir(parents=True)
    shutil.copy(SCRIPT, snap / "benchmarks" / "make_candidates.py")
    shutil.copy(spec, snap / "benchmarks" / "studies" / spec.parent.name / "candidates.toml")
    snap_spec = snap / "benchmarks" / "studies" / spec.parent.name / "candidates.toml"
    run_in_snap = [sys.executable, str(snap / "benchmarks" / "make_candidates.py"), str(snap_spec)]

    done = subprocess.run(run_in_snap + [str(tmp_path / "bare")], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode != 0 and "benchmarks/snapshot.sh" in done.stderr and "Traceback" not in done.stderr

    wrote = subprocess.run([sys.executable, str(SCRIPT), "--write-bases", str(snap)], capture_output=True, text=True)
    assert wrote.returncode == 0, wrote.stderr
    for commit in commits:
        assert (snap / ".bases" / commit / "tasks" / "w4a16_gemm" / "expert.py").is_file()
    done = subprocess.run(run_in_snap + [str(tmp_path / "snap_out")], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _run(spec, tmp_path / "repo_out").returncode == 0
    for made in sorted((tmp_path / "repo_out").rglob("*.py")):
        twin = tmp_path / "snap_out" / made.relative_to(tmp_path / "repo_out")
        assert twin.read_text() == made.read_text()    # the same candidates as from git history
