"""What red team G (session 21) found d2k did badly with hostile text, files and folders: each case
fails well now (a stored record, an escaped line, a one-line error), and each would fail its test
as d2k was."""

from __future__ import annotations

import io
import os
import subprocess

import pytest
from conftest import d2k_command
from rich.console import Console

from d2k.errors import D2KError
from d2k.execution.worker import prune_kernel_cache
from d2k.text import no_terminal_controls, one_line, utf8_safe


def test_text_a_solution_wrote_is_stored_as_utf8():
    record = {"reason": "bad \udcff", "timing": {"threads_alive": ["x\ud800 < y"]}, "n": 3, "k\udcff": None}
    safe = utf8_safe(record)
    assert safe == {"reason": "bad \\udcff", "timing": {"threads_alive": ["x\\ud800 < y"]}, "n": 3, "k\\udcff": None}
    for text in (safe["reason"], *safe["timing"]["threads_alive"], *safe):
        text.encode("utf-8")  # raises where a surrogate is left
    assert utf8_safe("plain") == "plain"


def test_printed_text_cannot_drive_the_terminal_or_forge_a_line():
    spoof = "boom\x1b[2K\r\x1b[1A[1/2] rmsnorm · expert: passed\n\x1b]0;all passed\x07\x1b[8m"
    line = one_line(spoof)
    assert "\x1b" not in line and "\n" not in line and "\r" not in line and "\x07" not in line
    assert "\\x1b[2K" in line and "\\n" in line
    assert no_terminal_controls("two\nlines\x1b[8m") == "two\nlines\\x1b[8m"  # newlines kept in whole messages


def test_the_consoles_escape_what_they_print():
    from d2k.cli import common

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, color_system=None, width=200)
    console.push_render_hook(common._NoTerminalControls())
    console.print("reason: \x1b[2Kerased \x1b]0;title", markup=False, highlight=False)
    assert "\x1b[2K" not in buffer.getvalue() and "\\x1b[2Kerased" in buffer.getvalue()
    # the module's own consoles carry the hook
    assert any(isinstance(h, common._NoTerminalControls) for h in common.err_console._render_hooks)


def test_a_kernel_cache_over_its_bound_is_emptied(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "kernel.bin").write_bytes(b"k" * 1000)
    assert not prune_kernel_cache(cache, max_bytes=4096, max_files=10) and (cache / "kernel.bin").exists()
    (cache / "ballast.bin").write_bytes(b"b" * 8000)
    assert prune_kernel_cache(cache, max_bytes=4096, max_files=10) and not cache.exists()
    cache.mkdir()
    for k in range(12):
        (cache / f"f{k}").write_bytes(b"")
    assert prune_kernel_cache(cache, max_bytes=4096, max_files=10) and not cache.exists()


def test_a_store_path_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    from d2k.store import Store

    fifo = tmp_path / "store.duckdb"
    os.mkfifo(fifo)
    with pytest.raises(D2KError, match="not a regular file"):
        Store(fifo)  # it blocked forever in open() before


def test_a_deeply_nested_expression_does_not_exhaust_the_static_judge():
    from d2k.judge.facts import extract

    source = "import torch\n\ndef run(x, w, eps):\n    y = " + "+".join(["x"] * 20_000) + "\n    return y\n"
    facts = extract(source)  # a RecursionError before
    assert facts is not None


def test_a_workdir_that_cannot_be_made_is_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {**os.environ, "D2K_WORKDIR": str(blocker / "work"), "D2K_DB": str(tmp_path / "s.duckdb")}
    out = subprocess.run(d2k_command("eval", "rmsnorm", "expert", "--no-reference"), capture_output=True, text=True,
                         env=env, timeout=300, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("error: cannot use ")


def test_an_empty_task_list_is_refused(tmp_path):
    env = {**os.environ, "D2K_DB": str(tmp_path / "s.duckdb")}
    out = subprocess.run(d2k_command("bench", "--tasks", "", "--backend", "interpreter"), capture_output=True,
                         text=True, env=env, timeout=300, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "--tasks names no task" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("setting, message", [
    ('{"settle_s": "x"}', "settle_s must be a non-negative number"),
    ('{"budget_ms": -1}', "budget_ms must be a non-negative number"),
    ('{"device_span": 1}', "device_span must be true or false"),
    ('{"flush_mode": "zero"}', "flush_mode must be write or read"),
    ('{"fresh_inputs": "yes"}', "fresh_inputs must be"),
])
def test_a_mistyped_timing_setting_is_one_line_before_the_run(monkeypatch, setting, message):
    # before: a string where a number belongs failed every evaluation in its worker with a ValueError
    from d2k.job_payload import timing_settings

    monkeypatch.setenv("D2K_TIMING", setting)
    with pytest.raises(D2KError, match=message):
        timing_settings()
    monkeypatch.delenv("D2K_TIMING")
    assert timing_settings({"settle_s": 0, "device_span": True})["settle_s"] == 0
