import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch, request):
    """Every test writes its runs and store under its own tmp dir, never the checkout; only tests
    marked ``gpu`` see the GPU."""
    monkeypatch.setenv("D2K_WORKDIR", str(tmp_path / "work"))
    monkeypatch.setenv("D2K_DB", str(tmp_path / "d2k.duckdb"))
    monkeypatch.setenv("D2K_ROOT", str(ROOT))
    if request.node.get_closest_marker("gpu") is None:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("D2K_JUDGE_CACHE", str(tmp_path / "dspy-cache"))
    for var in ("D2K_JUDGE_MODEL", "D2K_JUDGE_API_BASE", "D2K_JUDGE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    yield


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def content_copy(tmp_path, monkeypatch):
    """A writable copy of the shipped content, selected as the content root."""
    dest = tmp_path / "content"
    for name in ("tasks", "workloads", "design_rubrics", "analysis"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("D2K_ROOT", str(dest))
    return dest


def d2k_command(*args):
    return [sys.executable, "-m", "d2k", *args]


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Under xdist (`-n auto`, `--dist loadgroup`), keep the tests that share a module-scoped fixture
    (a sweep, a demo store) on one worker, so the fixture runs once instead of once per worker."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        defs = getattr(info, "name2fixturedefs", {}) if info else {}
        if any(d.scope == "module" for fixturedefs in defs.values() for d in fixturedefs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


class _XdistGroupTags:
    @pytest.hookimpl(trylast=True)  # after xdist's own hook
    def pytest_collection_modifyitems(self, config, items):
        _tag_groups(config, items)


def pytest_configure(config):
    config.pluginmanager.register(_XdistGroupTags(), "d2k-xdist-group-tags")


def _tag_groups(config, items):
    """xdist 3.8 tags a grouped test by assigning ``item._nodeid``, which pytest >= 9 no longer
    reads (the id lives in ``item._id``), so every group was spread over the workers and each
    module-scoped sweep ran once per worker. Apply the tag where pytest reads it."""
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import coerce_node_id  # pytest >= 9
    except ImportError:
        return  # older pytest reads _nodeid: xdist's tag already took effect
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names and "@" not in item.nodeid:
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(names)}")
