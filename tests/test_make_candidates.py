"""benchmarks/make_candidates.py: a study's candidates are written from the shipped files and the
study's edits, and an edit that no longer matches its base stops the run."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "make_candidates.py"


def _run(spec: Path, out: Path):
    return subprocess.run([sys.executable, str(SCRIPT), str(spec), str(out)], capture_output=True, text=True)


def test_every_shipped_spec_applies_to_its_base(tmp_path):
    specs = sorted((ROOT / "benchmarks" / "studies").glob("*/candidates.toml"))
    assert specs
    for spec in specs:
        done = _run(spec, tmp_path / spec.parent.name)
        assert done.returncode == 0, done.stderr
        for line in done.stdout.split():
            text = Path(line).read_text()
            assert text.startswith("# Candidate ") and "def run(" in text


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
