"""On a GPU run the sandbox keeps the strongest layers under which the CUDA driver initialises,
and says which it gave up (the probe itself is replaced here: this machine has no GPU)."""

from __future__ import annotations

from pathlib import Path

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
