"""Which sandbox layer stops CUDA on this machine? Runs a tiny CUDA check under each layer alone
and then under d2k's full sandbox, printing one JSON line per variant (a diagnostic for GPU hosts)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from d2k.execution import sandbox  # noqa: E402

CHECK = r"""
import ctypes, json, os
out = {"uid": os.getuid()}
try:
    lib = ctypes.CDLL("libcuda.so.1")
    out["cuInit"] = lib.cuInit(0)
    n = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(n))
    out["count"] = n.value
except OSError as exc:
    out["libcuda"] = str(exc)
out["dev"] = sorted(p for p in os.listdir("/dev") if p.startswith("nvidia"))
out["proc_driver"] = os.path.exists("/proc/driver/nvidia")
import torch
out["torch"] = torch.cuda.is_available()
print(json.dumps(out))
"""

unshare = shutil.which("unshare")
base_env = {k: v for k, v in os.environ.items() if k in sandbox.KEEP_ENV}
variants = {
    "plain": ([], dict(os.environ)),
    "scrubbed_env": ([], {**base_env, "HOME": "/tmp"}),
    "pid": ([unshare, "--pid", "--fork", "--kill-child"], dict(os.environ)),
    "pid_mountproc": ([unshare, "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"], dict(os.environ)),
    "mount": ([unshare, "--mount", "--propagation", "private"], dict(os.environ)),
    "net": ([unshare, "--net"], dict(os.environ)),
    "nobody": (["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"], dict(os.environ)),
    "no_caps": (["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"], dict(os.environ)),
}
for name, (prefix, env) in variants.items():
    r = subprocess.run([*prefix, sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, timeout=120)
    print(json.dumps({"variant": name, "rc": r.returncode, "out": r.stdout.strip()[-400:], "err": r.stderr.strip()[-300:]}),
          flush=True)

for drop in (False, True):
    with tempfile.TemporaryDirectory() as tmp:
        private = Path(tmp) / "private"
        private.mkdir()
        prefix, env, meta = sandbox.plan(private, [], [Path(sys.prefix)], "cuda", {})
        if not drop:
            cfg = json.loads(prefix[-2])
            cfg["drop_user"] = False
            prefix[-2] = json.dumps(cfg)
        r = subprocess.run([*prefix, sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, timeout=120)
        print(json.dumps({"variant": f"d2k_sandbox(drop_user={drop and meta['layers']['unprivileged_user']})",
                          "rc": r.returncode, "out": r.stdout.strip()[-400:], "err": r.stderr.strip()[-300:]}), flush=True)

with tempfile.TemporaryDirectory() as tmp:
    private = Path(tmp) / "private"
    private.mkdir()
    _, _, meta = sandbox.plan(private, [], [Path(sys.prefix)], "cuda", {})
    print(json.dumps({"variant": "d2k_adaptive", "layers": meta["layers"], "warnings": meta["warnings"]}), flush=True)
