"""`d2k task new`: a new task across its four folders, reported as unfinished by `d2k validate`
until its TODO markers are resolved, and refused for an id or catalog number already used."""

import subprocess

from conftest import d2k_command

from d2k.content import task_ids
from d2k.scaffold import FILES, MARKER, next_catalog, unfinished
from d2k.validate import validate


def d2k(*args):
    return subprocess.run(d2k_command(*args), capture_output=True, text=True, timeout=120)


def test_new_task_files_then_validate_names_the_todos_then_duplicate_refused(content_copy):
    assert next_catalog(content_copy) == "T27"
    made = d2k("task", "new", "my_new_op", "--title", 'My "new" op')
    assert made.returncode == 0, made.stderr
    expected = [dest.format(id="my_new_op") for dest in FILES.values()]
    for rel in expected:
        assert (content_copy / rel).is_file(), rel
        assert rel in made.stdout
    task_toml = (content_copy / "tasks/my_new_op/task.toml").read_text()
    assert 'catalog = "T27"' in task_toml and 'title = "My \\"new\\" op"' in task_toml

    # validate: every scaffolded file is named as unfinished, nothing crashes, and the placeholders
    # raise no other problem (so the TODO lines are the whole list for the new task)
    problems, stats = validate(content_copy)
    ours = [p for p in problems if "my_new_op" in p.path]
    assert sorted(p.path for p in ours) == sorted(expected)
    assert all(p.message.startswith("unfinished: ") and MARKER in p.message for p in ours)
    assert stats["tasks"] == len(task_ids(content_copy))
    out = d2k("validate")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"tasks/my_new_op/expert.py: unfinished: 2 {MARKER} marker(s) to resolve" in out.stderr

    # markers resolved (here: simply removed) -> the task is no longer reported as unfinished
    for rel in expected:
        path = content_copy / rel
        path.write_text(path.read_text().replace(MARKER + ":", "done:").replace(MARKER, "done"))
    assert unfinished(content_copy, "my_new_op") == []
    assert not [p for p in validate(content_copy)[0] if "my_new_op" in p.path]

    # the same id again, an invalid id, a catalog number in use: one line, exit 2, nothing written
    before = sorted(p for p in content_copy.rglob("*") if p.is_file())
    for args, message in [
        (("my_new_op",), "task my_new_op exists already"),
        (("My-Op",), "'My-Op' is not a task id"),
        (("other_op", "--catalog", "T01"), "--catalog T01 is task rmsnorm's"),
        (("other_op", "--catalog", "27"), "is not a catalog number"),
    ]:
        out = d2k("task", "new", *args)
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.strip().splitlines() == [out.stderr.strip()] and message in out.stderr, out.stderr
    assert sorted(p for p in content_copy.rglob("*") if p.is_file()) == before
