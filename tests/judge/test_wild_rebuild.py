"""Rebuilding the wild set's uncommitted kernel copies from their MANIFEST.md (downloads faked)."""

from __future__ import annotations

from d2k.judge import wild

UPSTREAM = {"ops/norm.py": "import triton\n\n\ndef norm(x):\n    return x\n", "ops/utils.py": "X = 1\n"}


def _manifest(tmp_path, sha):
    task = tmp_path / "judges" / "wild" / "rmsnorm"
    task.mkdir(parents=True)
    links = "<br>".join(f"[{p}](https://github.com/o/r/blob/{'a' * 40}/{p})" for p in UPSTREAM)
    (task / "MANIFEST.md").write_text(
        "| file | entry | licence | sources (at the commit) | commit | lines | sha256 |\n|---|---|---|---|---|---|---|\n"
        f"| `up_norm.py` | `norm` | MIT, Copyright Someone | o/r: {links} | `aaaaaaaaaaaa` | 9 | `{sha[:16]}…` |\n\n"
        f"- `up_norm.py`: https://github.com/o/r @ `{'a' * 40}`, sha256 `{sha}`\n")
    return task


def _expected():
    copy = wild.Copy("rmsnorm", "up_norm.py", "o/r", "a" * 40, list(UPSTREAM), "MIT, Copyright Someone", "norm", "")
    return wild.assemble(copy, list(UPSTREAM.values()))


def test_a_copy_is_rebuilt_and_written_only_when_its_sha256_matches(tmp_path, monkeypatch):
    text = _expected()
    task = _manifest(tmp_path, wild.sha256(text))
    [copy] = wild.manifest(task)
    assert copy.paths == list(UPSTREAM) and copy.entry == "norm" and copy.repo == "o/r"
    assert wild.split(copy, text) == list(UPSTREAM.values())  # assemble and split are inverse
    monkeypatch.setattr(wild, "download", lambda _copy, path: UPSTREAM[path])
    assert wild.main(["--root", str(tmp_path)]) == 0
    assert (task / "up_norm.py").read_text() == text
    assert wild.main(["--root", str(tmp_path), "--check"]) == 0


def test_a_changed_upstream_is_refused(tmp_path, monkeypatch):
    task = _manifest(tmp_path, wild.sha256(_expected()))
    monkeypatch.setattr(wild, "download", lambda _copy, path: UPSTREAM[path] + "# changed\n")
    assert wild.main(["--root", str(tmp_path)]) == 1
    assert not (task / "up_norm.py").exists()
    assert wild.main(["--root", str(tmp_path), "--check"]) == 1  # missing


def test_the_tunable_set_rebuilds_from_its_own_folder_and_names_it(tmp_path, monkeypatch):
    task = tmp_path / "judges" / "wild_dev" / "rmsnorm"
    task.mkdir(parents=True)
    copy = wild.Copy("rmsnorm", "up_norm.py", "o/r", "a" * 40, list(UPSTREAM), "MIT, Copyright Someone", "norm", "",
                     "judges/wild_dev")
    text = wild.assemble(copy, list(UPSTREAM.values()))
    assert "# Labels: judges/wild_dev/rmsnorm/labels.toml" in text
    frozen = _manifest(tmp_path, wild.sha256(_expected()))  # a frozen-set task beside it is left alone
    (task / "MANIFEST.md").write_text((frozen / "MANIFEST.md").read_text().replace(wild.sha256(_expected()), wild.sha256(text)))
    monkeypatch.setattr(wild, "download", lambda _copy, path: UPSTREAM[path])
    assert wild.main(["--root", str(tmp_path), "--set", "wild_dev"]) == 0
    assert (task / "up_norm.py").read_text() == text and not (frozen / "up_norm.py").exists()
