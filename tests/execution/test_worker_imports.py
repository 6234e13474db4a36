"""The GPU worker imports only the standard library, torch, triton and numpy (and d2k.execution)."""

import json
import subprocess
import sys

FORBIDDEN = ["pydantic", "duckdb", "typer", "rich", "networkx", "click"]


def test_worker_modules_import_nothing_else():
    code = (
        "import sys, json\n"
        "import d2k.execution.worker, d2k.execution.timing, d2k.execution.inputs, "
        "d2k.execution.compare, d2k.execution.envinfo, d2k.execution.calibrate\n"
        f"print(json.dumps([m for m in {FORBIDDEN!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
