"""The shared-memory arena of the worker–candidate channel: large frames cross through it, small
ones through the pipe, the receiver gets a private copy, and bad offsets are refused."""

from __future__ import annotations

import os

import pytest
import torch

from d2k.execution import wire


@pytest.fixture
def channel():
    r, w = os.pipe()
    arena = wire.Arena.create(8 << 20)
    yield r, w, arena
    arena.close()
    os.close(r)
    os.close(w)


def test_a_large_frame_goes_through_the_arena_and_arrives_intact(channel):
    r, w, arena = channel
    x = torch.randn(512, 1024)  # 2 MiB: over ARENA_MIN_BYTES
    y = torch.arange(10, dtype=torch.int32)
    metas, blobs = wire.pack({"x": x, "y": y, "eps": 1e-6})
    wire.send(w, {"op": "call", "inputs": metas}, blobs, arena=arena)
    header, got = wire.recv(r, 1 << 30, arena=arena)
    assert len(header["arena"]) == 3 - 1  # two tensors; the scalar travels in the header
    out = wire.unpack(header["inputs"], got, "cpu")
    assert torch.equal(out["x"], x) and torch.equal(out["y"], y) and out["eps"] == 1e-6
    # what was received is a copy: later writes to the shared pages do not reach it
    arena.map[0:4096] = b"\xff" * 4096
    assert torch.equal(out["x"], x)


def test_a_fresh_draw_is_refilled_straight_from_the_arena(channel):
    """recv(arena_views=True) hands back views of the shared pages (no private copy), and refill
    copies them into the set's own tensors: once refilled, later writes to the arena change
    nothing the candidate holds."""
    r, w, arena = channel
    old = {"x": torch.zeros(512, 1024), "y": torch.zeros(10, dtype=torch.int32), "eps": 1e-6}
    held = old["x"]
    draw = {"x": torch.randn(512, 1024), "y": torch.arange(10, dtype=torch.int32), "eps": 1e-6}
    metas, blobs = wire.pack(draw)
    wire.send(w, {"seed": 7, "fresh": metas}, blobs, arena=arena)
    header, got = wire.recv(r, 1 << 30, arena=arena, arena_views=True)
    assert len(got) == 2 and all(isinstance(b, torch.Tensor) for b in got)
    # views: what the other side writes to the arena shows through them
    first = bytes(arena.map[header["arena"][1]:header["arena"][1] + 4])
    arena.map[header["arena"][1]:header["arena"][1] + 4] = b"\x2a\x00\x00\x00"
    assert int(got[1].view(torch.int32)[0]) == 42
    arena.map[header["arena"][1]:header["arena"][1] + 4] = first
    wire.refill(old, header["fresh"], got)
    del got
    assert old["x"] is held and torch.equal(old["x"], draw["x"]) and torch.equal(old["y"], draw["y"])
    arena.map[0:4096] = b"\xff" * 4096
    assert torch.equal(old["x"], draw["x"])


def test_arena_views_outside_the_arena_are_refused(channel):
    import json
    import struct

    r, w, arena = channel
    raw = json.dumps({"blobs": [4096], "arena": [(8 << 20) - 100]}).encode()
    os.write(w, struct.pack(">I", len(raw)) + raw)
    with pytest.raises(wire.WireError, match="outside"):
        wire.recv(r, 1 << 30, arena=arena, arena_views=True)


def test_a_view_is_bounded_and_keeps_its_pages_mapped(channel):
    _, _, arena = channel
    for offset, n in ((10, -1), (0, True), (True, 16), (0, (8 << 20) + 1), (4096.0, 16)):
        with pytest.raises(wire.WireError, match="outside"):
            arena.view(offset, n)
    arena.map[0:4] = b"\x01\x02\x03\x04"
    view = arena.view(0, 4)
    arena.close()   # a live view keeps the mapping (its pages go with the process)
    assert view.tolist() == [1, 2, 3, 4]


def test_a_frame_whose_sizes_are_not_integers_is_refused(channel):
    import json
    import struct

    r, w, arena = channel
    raw = json.dumps({"blobs": [True], "arena": [0]}).encode()   # JSON true is no size
    os.write(w, struct.pack(">I", len(raw)) + raw)
    with pytest.raises(wire.WireError, match="sizes"):
        wire.recv(r, 1 << 30, arena=arena)


def test_a_small_frame_uses_the_pipe(channel):
    r, w, arena = channel
    metas, blobs = wire.pack({"y": torch.ones(4)})
    wire.send(w, {"inputs": metas}, blobs, arena=arena)
    raw_len = int.from_bytes(os.read(r, 4), "big")
    header = os.read(r, raw_len)
    assert b'"arena"' not in header
    assert len(os.read(r, 64)) == 16  # the tensor's bytes followed the header


def test_a_frame_larger_than_the_arena_falls_back_to_the_pipe():
    arena = wire.Arena.create(1 << 20)
    r, w = os.pipe()
    try:
        x = torch.randn(300_000)  # 1.2 MB: too big for a 1 MiB arena, so it is streamed
        metas, blobs = wire.pack({"x": x})
        import threading

        t = threading.Thread(target=wire.send, args=(w, {"inputs": metas}, blobs), kwargs={"arena": arena})
        t.start()
        header, got = wire.recv(r, 1 << 30, arena=arena)
        t.join()
        assert torch.equal(wire.unpack(header["inputs"], got, "cpu")["x"], x)
    finally:
        arena.close()
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("offsets", [[(8 << 20) - 100], [-4096], ["0"]])
def test_offsets_outside_the_arena_are_refused(channel, offsets):
    import json
    import struct

    r, w, arena = channel
    # a forged frame: one 4096-byte blob said to lie at a bad offset
    raw = json.dumps({"blobs": [4096], "arena": offsets}).encode()
    os.write(w, struct.pack(">I", len(raw)) + raw)
    with pytest.raises(wire.WireError):
        wire.recv(r, 1 << 30, arena=arena)


def test_arena_offsets_without_an_arena_are_refused(channel):
    r, w, arena = channel
    metas, blobs = wire.pack({"x": torch.randn(512, 1024)})
    wire.send(w, {"inputs": metas}, blobs, arena=arena)
    with pytest.raises(wire.WireError, match="without an arena"):
        wire.recv(r, 1 << 30)


def test_a_bool_and_an_fp8_tensor_cross_bit_for_bit(channel):
    r, w, arena = channel
    b = torch.rand(2048, 1024) > 0.5
    f8 = torch.randn(1024, 1024).to(torch.float8_e4m3fn)
    metas, blobs = wire.pack({"b": b, "f8": f8})
    wire.send(w, {"inputs": metas}, blobs, arena=arena)
    header, got = wire.recv(r, 1 << 30, arena=arena)
    out = wire.unpack(header["inputs"], got, "cpu")
    assert torch.equal(out["b"], b)
    assert torch.equal(out["f8"].view(torch.uint8), f8.view(torch.uint8))


def _evaluate_one(tmp_path, workload, source: str) -> dict:
    """One interpreter evaluation of a file solution ``source`` on ``workload``, which must pass:
    its record."""
    from d2k.content import Benchmark
    from d2k.solutions import resolve
    from d2k.store import Store
    from d2k.supervisor import Limits
    from d2k.sweep import Plan, run_sweep

    bench = Benchmark.load(only=[workload.task])
    solution = tmp_path / "solution.py"
    solution.write_text(source)
    store = Store(tmp_path / "arena.duckdb")
    result = run_sweep(bench, store, [Plan(resolve(bench, workload.task, str(solution)), [workload])], "interpreter",
                       "test", {}, limits=Limits(per_workload_s=120))
    store.close()
    (record,) = result.records
    assert record["status"] == "passed", record["reason"]
    return record


def test_an_evaluation_with_large_tensors_crosses_through_the_arena(tmp_path):
    """End to end under the interpreter: a 2 MiB input and output go through the shared memory,
    and the record says so (``timing.wire_bytes``)."""
    from d2k.schema import Workload

    big = Workload(id="rmsnorm_arena_t1024_h1024", task="rmsnorm", tag="smoke", axes={"T": 1024, "H": 1024},
                   dtypes={"dtype": "bfloat16"}, params={"eps": 1e-6}, seed=5)
    record = _evaluate_one(tmp_path, big, "import torch\n\ndef run(x, w, eps):\n    xf = x.float()\n"
                           "    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w\n")
    sent = record["timing"]["wire_bytes"]
    # inputs (2 MiB of x) out, outputs (2 MiB of y per checked call) back: all through the arena
    assert sent["arena"] >= 2 * (2 << 20), sent
    assert sent["pipe"] < (1 << 20), sent


def test_fresh_draws_cross_through_the_arena_and_are_refilled_from_it(tmp_path):
    """End to end under the interpreter: softmax_vocab draws fresh inputs for every timed call; a set
    of 1.3 MB (over ARENA_MIN_BYTES) goes through the shared memory each time and the candidate
    refills its tensors straight from it (recv with arena_views). The check replays the calls' draws
    from their seeds, so a refill that got the bytes wrong would fail the evaluation."""
    from d2k.schema import Workload

    big = Workload(id="softmax_vocab_arena_m32_n20011", task="softmax_vocab", tag="smoke", axes={"M": 32, "N": 20011},
                   dtypes={"dtype": "bfloat16"}, seed=7)
    set_bytes = 32 * 20011 * 2
    assert set_bytes > wire.ARENA_MIN_BYTES
    record = _evaluate_one(tmp_path, big, "import torch\n\ndef run(x):\n    return torch.softmax(x.float(), -1)\n")
    timing = record["timing"]
    assert timing["fresh_inputs"] is True
    # at least one fresh draw per timed call went through the arena
    assert timing["wire_bytes"]["arena"] >= len(record["samples_ms"]) * set_bytes, (timing["wire_bytes"],
                                                                                   len(record["samples_ms"]))


def test_the_arena_cannot_be_shrunk_or_grown_by_whoever_holds_it():
    """The candidate inherits the arena's file: shrinking it under the worker's mapping would
    crash the trusted side on its next access (SIGBUS). The file is sealed."""
    arena = wire.Arena.create(1 << 20)
    try:
        for size in (0, 4096, 2 << 20):
            with pytest.raises(PermissionError):
                os.ftruncate(arena.fd, size)
        assert os.fstat(arena.fd).st_size == 1 << 20
    finally:
        arena.close()
