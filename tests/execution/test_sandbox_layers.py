"""On a GPU run the sandbox keeps the strongest layers under which the CUDA driver initialises,
and says which it gave up (the probe itself is replaced here: this machine has no GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from d2k.execution import sandbox


def _allowing(monkeypatch, works):
    monkeypatch.setattr(sandbox, "_cuda_initialises", lambda _p, _h, _r, ns, drop: works(ns, drop))


def test_all_layers_stay_when_cuda_works_under_them(monkeypatch):
    _allowing(monkeypatch, lambda ns, drop: True)
    assert sandbox._layers_cuda_allows(Path("/tmp"), [], [], True, True) == (True, True, [])


def test_the_user_is_given_up_before_the_namespaces(monkeypatch):
    _allowing(monkeypatch, lambda ns, drop: not drop)
    assert sandbox._layers_cuda_allows(Path("/tmp"), [], [], True, True) == (True, False, ["the unprivileged user"])


def test_the_namespaces_go_only_when_nothing_else_helps(monkeypatch):
    _allowing(monkeypatch, lambda ns, drop: not ns)
    ns, drop, given_up = sandbox._layers_cuda_allows(Path("/tmp"), [], [], True, True)
    assert (ns, drop) == (False, True) and given_up == ["the mount/pid/network namespaces"]


def test_no_layer_is_dropped_when_cuda_fails_everywhere(monkeypatch):
    _allowing(monkeypatch, lambda ns, drop: False)
    assert sandbox._layers_cuda_allows(Path("/tmp"), [], [], True, False) == (True, False, [])


def test_the_plan_warns_about_a_layer_given_up(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "namespaces_available", lambda: True)
    _allowing(monkeypatch, lambda ns, drop: not ns)
    _, _, meta = sandbox.plan(tmp_path, [], [], "cuda", {})
    assert meta["layers"]["mount_namespace"] is False
    assert any("CUDA does not initialise under the mount/pid/network namespaces" in w for w in meta["warnings"])


def test_the_checkout_d2k_runs_from_is_hidden_too_when_the_content_is_elsewhere(tmp_path):
    """An editable install of one checkout running another checkout's content: the candidate must
    not read (or write) the experts of the checkout its d2k is imported from either."""
    import shutil

    import d2k
    from d2k.content import Benchmark
    from d2k.job_payload import sandbox_settings

    other = tmp_path / "other"
    for name in ("tasks/rmsnorm", "design_rubrics", "workloads"):
        (other / name).mkdir(parents=True)
    here = Path(d2k.__file__).resolve().parents[1]
    shutil.copytree(here / "tasks" / "rmsnorm", other / "tasks" / "rmsnorm", dirs_exist_ok=True)
    shutil.copy(here / "design_rubrics" / "rmsnorm.toml", other / "design_rubrics")
    shutil.copy(here / "workloads" / "rmsnorm.jsonl", other / "workloads")
    settings = sandbox_settings(Benchmark.load(other.resolve(), only=["rmsnorm"]))
    for root in (other.resolve(), here):
        assert str(root / "tasks") in settings["hide"] and str(root / "judges") in settings["hide"]
        assert str(root) in settings["read_only"]


def test_every_checkout_on_the_path_is_hidden(tmp_path, monkeypatch):
    """A candidate that cannot see the parent's copy of d2k (one under the /tmp its sandbox
    replaces) imports it from the next checkout on the path: that checkout's content is hidden too."""
    import sys

    from d2k.content import Benchmark
    from d2k.job_payload import sandbox_settings

    elsewhere = tmp_path / "elsewhere"
    for name in ("d2k", "tasks"):
        (elsewhere / name).mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(elsewhere)])
    settings = sandbox_settings(Benchmark.load(only=["rmsnorm"]))
    assert str(elsewhere.resolve() / "tasks") in settings["hide"] and str(elsewhere.resolve()) in settings["read_only"]


def test_a_checkout_an_editable_finder_maps_d2k_to_is_hidden(tmp_path, monkeypatch):
    """A PEP 660 editable install resolves d2k through a finder on sys.meta_path, not through
    sys.path: a candidate that cannot see the parent's copy imports that checkout's d2k, so its
    content is hidden too (the gap left open in session 7)."""
    import importlib.machinery
    import sys

    from d2k.content import Benchmark
    from d2k.job_payload import sandbox_settings

    editable = tmp_path / "editable"
    for name in ("d2k", "tasks"):
        (editable / name).mkdir(parents=True)
    (editable / "d2k" / "__init__.py").write_text("")

    class EditableFinder:  # what setuptools' __editable___*_finder does, reduced
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name != "d2k":
                return None
            spec = importlib.machinery.ModuleSpec("d2k", None, origin=str(editable / "d2k" / "__init__.py"),
                                                  is_package=True)
            spec.submodule_search_locations = [str(editable / "d2k")]
            return spec

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, EditableFinder])
    settings = sandbox_settings(Benchmark.load(only=["rmsnorm"]))
    assert str(editable.resolve() / "tasks") in settings["hide"]
    assert str(editable.resolve()) in settings["read_only"]


def test_a_python_under_a_closed_home_is_reachable_once_the_home_is_hidden_and_it_is_bound_back():
    # before: Python under a 0700 /root (pyenv) kept the candidate at uid 0; inside the sandbox that
    # home is an empty 0755 folder with the Python bound back, so the unprivileged user reaches it
    import shutil
    import uuid

    import d2k
    from d2k.execution.sandbox import searchable_by_others

    tmp_path = Path(d2k.__file__).resolve().parents[1] / f".d2k-home-{uuid.uuid4().hex[:12]}"  # (pytest's tmp is 0700)
    tmp_path.mkdir()
    try:
        _closed_home_case(tmp_path, searchable_by_others)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _closed_home_case(tmp_path, searchable_by_others):
    home = tmp_path / "root"
    python = home / ".pyenv" / "versions" / "3.11" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    python.write_text("")
    home.chmod(0o700)
    for folder in [tmp_path, *tmp_path.parents]:
        if not folder.stat().st_mode & 0o001:
            pytest.skip(f"{folder} is not searchable by others here")
    prefix = home / ".pyenv" / "versions" / "3.11"
    assert not searchable_by_others([python])
    assert searchable_by_others([python], hidden=[home], kept=[prefix])
    assert not searchable_by_others([python], hidden=[home], kept=[])  # hidden, nothing bound back
    prefix.chmod(0o700)  # the bound-back Python keeps its own modes
    assert not searchable_by_others([python], hidden=[home], kept=[prefix])
    prefix.chmod(0o755)
    home.chmod(0o755)


def test_every_top_level_folder_but_the_systems_is_hidden_and_checkouts_keep_only_d2k():
    # before: another checkout on the machine (/work/main, seen from a clone in /tmp) kept its runs'
    # folders readable, and read_other_workdir.py put an expert's source in its reason (CI rehearsal)
    import os

    from d2k.content import Benchmark
    from d2k.job_payload import SYSTEM_FOLDERS, sandbox_settings

    settings = sandbox_settings(Benchmark.load(only=["rmsnorm"]))
    hidden = set(settings["hide"])
    for name in os.listdir("/"):
        path = os.path.join("/", name)
        if name in SYSTEM_FOLDERS or os.path.islink(path):
            assert path not in hidden
        else:
            assert path in hidden, path
    root = str(Benchmark.load(only=["rmsnorm"]).root.resolve())
    assert root in hidden and os.path.join(root, "d2k") in settings["read_only"]
