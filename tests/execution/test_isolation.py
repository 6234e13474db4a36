"""Misbehaving solutions fail with the right reason, in isolation, and the next solution still runs."""

import textwrap

import pytest

from d2k.content import Benchmark
from d2k.solutions import resolve
from d2k.store import Store
from d2k.supervisor import Limits
from d2k.sweep import Plan, run_sweep

# one worker runs this module: its tests share one module-scoped run
pytestmark = pytest.mark.xdist_group("test_isolation")

GOOD_BODY = '''
import torch

def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
'''

SOLUTIONS = {
    "raises": GOOD_BODY + "\ndef run(x, w, eps):\n    raise RuntimeError('kernel launch failed on purpose')\n",
    "hangs": GOOD_BODY + "\nimport time\ndef run(x, w, eps):\n    time.sleep(10_000)\n",
    "exits": GOOD_BODY + "\nimport os\ndef run(x, w, eps):\n    os._exit(0)\n",
    "segfaults": GOOD_BODY + "\nimport ctypes\ndef run(x, w, eps):\n    ctypes.string_at(0)\n",
    "nan": GOOD_BODY + "\ndef run(x, w, eps):\n    return torch.full_like(x, float('nan'))\n",
    "zeros": GOOD_BODY + "\ndef run(x, w, eps):\n    return torch.zeros_like(x)\n",
    "wrong": GOOD_BODY + ("\ndef run(x, w, eps):\n    xf = x.float()\n"
                          "    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)\n"),
    "wrong_dtype": GOOD_BODY + "\ndef run(x, w, eps):\n    return _rms(x, w, eps).float()\n",
    "damages_input": GOOD_BODY + "\ndef run(x, w, eps):\n    y = _rms(x, w, eps)\n    x.zero_()\n    return y\n",
    "caches_by_pointer": GOOD_BODY + textwrap.dedent('''
        _cache = {}
        def run(x, w, eps):
            key = (x.data_ptr(), w.data_ptr())
            if key not in _cache:
                _cache[key] = _rms(x, w, eps)
            return _cache[key]
        '''),
    "tampers_timer": GOOD_BODY + textwrap.dedent('''
        import time
        def run(x, w, eps):
            time.perf_counter = lambda: 0.0
            return _rms(x, w, eps)
        '''),
    # 32 MiB back for a 8 KiB output: refused from its header, before the trusted side allocates it
    "oversized": GOOD_BODY + "\ndef run(x, w, eps):\n    return torch.zeros(4096, 4096, dtype=x.dtype)\n",
    "syntax_error": "def run(x, w, eps)\n    return x\n",
    "no_run": GOOD_BODY,
    # text DuckDB refuses (a lone surrogate): once it cancelled every other solution's evaluations
    "surrogate": GOOD_BODY + "\ndef run(x, w, eps):\n    raise ValueError('bad text \\udcff here')\n",
    "meta_output": GOOD_BODY + "\ndef run(x, w, eps):\n    return torch.empty_like(x, device='meta')\n",
    # rewritten with the zeros body once d2k has read it: the text read (and hashed) is what runs
    "swapped": GOOD_BODY + "\n# swapped\ndef run(x, w, eps):\n    return _rms(x, w, eps)\n",
    "good": GOOD_BODY + "\ndef run(x, w, eps):\n    return _rms(x, w, eps)\n",
}

EXPECTED = {
    "raises": ("error", "kernel launch failed on purpose"),
    "hangs": ("timeout", "per-workload limit"),
    "exits": ("crashed", "exited with code 0"),
    "segfaults": ("crashed", "SIGSEGV"),
    "nan": ("failed", "NaN/Inf"),
    "zeros": ("failed", "all 4096 elements are zero"),
    "wrong": ("failed", "outside tolerance"),
    "wrong_dtype": ("failed", "dtype torch.float32 != expected torch.float16"),
    "damages_input": ("failed", "modified input x"),
    "caches_by_pointer": ("failed", "outside tolerance"),
    "tampers_timer": ("failed", "replaced time.perf_counter"),
    "oversized": ("failed", "bytes of tensors announced, more than the"),
    "syntax_error": ("error", "SyntaxError"),
    "no_run": ("error", "defines no function run()"),
    "surrogate": ("error", "bad text \\udcff here"),
    "meta_output": ("failed", "output y is a meta tensor"),
    "swapped": ("passed", None),
    "good": ("passed", None),
}


@pytest.fixture(scope="module")
def sweep_records(tmp_path_factory):
    import os

    tmp = tmp_path_factory.mktemp("isolation")
    os.environ["D2K_WORKDIR"] = str(tmp / "work")
    bench = Benchmark.load(only=["rmsnorm"])
    workload = [w for w in bench.select_workloads("rmsnorm", "smoke") if w.axes["H"] == 256][0]
    plans = []
    for name, source in SOLUTIONS.items():
        path = tmp / f"{name}.py"
        path.write_text(source)
        plans.append(Plan(resolve(bench, "rmsnorm", str(path)), [workload]))
    (tmp / "swapped.py").write_text(SOLUTIONS["zeros"])
    store = Store(tmp / "iso.duckdb")
    result = run_sweep(bench, store, plans, "interpreter", "test", {}, limits=Limits(per_workload_s=8))
    by_name = {}
    for record in result.records:
        name = record["solution"].rsplit("/", 1)[-1].removesuffix(".py")
        by_name[name] = record
    store.close()
    return by_name


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_misbehaviour_has_its_reason(sweep_records, name):
    status, fragment = EXPECTED[name]
    record = sweep_records[name]
    assert record["status"] == status, record["reason"]
    if fragment:
        assert fragment in record["reason"]


def test_every_solution_was_evaluated_once(sweep_records):
    assert set(sweep_records) == set(SOLUTIONS)


def test_good_solution_after_the_bad_ones_is_timed(sweep_records):
    good = sweep_records["good"]
    assert good["timing_method"] == "interpreter_wall"
    assert good["n_samples"] >= 1 and good["median_ms"] > 0
