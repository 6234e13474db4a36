"""Which sandbox layer, or which part of d2k's sandbox configuration, stops CUDA on this machine?
One JSON line per variant with what the candidate sees (libcuda and cuInit, the driver's mounts,
torch): first a CUDA check under each layer alone (bare unshare / setpriv), then under the
configuration a real bench run builds (job_payload.sandbox_settings, the default limits, a kernel
cache folder) and under variants of it with one part removed or one init step patched out. A
diagnostic for GPU hosts:

    source benchmarks/gpu_env.sh; python3 benchmarks/sandbox_cuda_probe.py > probe.jsonl
    OLD_SANDBOX=/path/to/older/sandbox.py python3 benchmarks/sandbox_cuda_probe.py   # and that one too

Session 15 found with it that a non-recursive bind of /usr hid the driver's /usr/local/nvidia
(benchmarks/studies/2026-12-04-session15-figures). Before that (sessions 6-14) its last part ran
d2k's sandbox on a hand-made configuration (read-only: sys.prefix only), which is how it missed that.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from d2k.content import Benchmark  # noqa: E402
from d2k.execution import sandbox  # noqa: E402
from d2k.job_payload import sandbox_settings  # noqa: E402

CHECK = r"""
import ctypes, json, os, subprocess
out = {"uid": os.getuid()}
try:
    lib = ctypes.CDLL("libcuda.so.1")
    out["cuInit"] = lib.cuInit(0)
    n = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(n))
    out["count"] = n.value
except OSError as exc:
    out["libcuda"] = str(exc)
out["mounts"] = [l.split()[4] + " " + l.split()[5] for l in open("/proc/self/mountinfo")
                 if any(k in l for k in ("nvidia", "cuda", "/usr", "/opt", "/dev "))][:40]
try:
    import torch
    out["torch"] = torch.cuda.is_available()
except Exception as exc:
    out["torch"] = repr(exc)
try:
    listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines()
    out["ldconfig"] = [l.strip() for l in listing if "libcuda.so" in l][:4]
except OSError as exc:
    out["ldconfig"] = str(exc)
print(json.dumps(out))
"""

unshare = shutil.which("unshare")
base_env = {k: v for k, v in os.environ.items() if k in sandbox.KEEP_ENV}
layers_alone = {
    "plain": ([], dict(os.environ)),
    "scrubbed_env": ([], {**base_env, "HOME": "/tmp"}),
    "pid": ([unshare, "--pid", "--fork", "--kill-child"], dict(os.environ)),
    "pid_mountproc": ([unshare, "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"], dict(os.environ)),
    "mount": ([unshare, "--mount", "--propagation", "private"], dict(os.environ)),
    "net": ([unshare, "--net"], dict(os.environ)),
    "nobody": (["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"], dict(os.environ)),
    "no_caps": (["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"], dict(os.environ)),
}
for name, (prefix, env) in layers_alone.items():
    r = subprocess.run([*prefix, sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, timeout=120)
    print(json.dumps({"variant": name, "rc": r.returncode, "out": r.stdout.strip()[-400:], "err": r.stderr.strip()[-300:]}),
          flush=True)

bench = Benchmark.load(only=["mla_decode"])
settings = sandbox_settings(bench)
print(json.dumps({"variant": "context", "prefix": sys.prefix, "base_prefix": sys.base_prefix, "cwd": os.getcwd(),
                  "executable": sys.executable, "settings": settings}), flush=True)
workdir = Path(os.environ.get("D2K_WORKDIR", ".d2k"))
workdir.mkdir(parents=True, exist_ok=True)
with tempfile.TemporaryDirectory(dir=workdir) as tmp:
    private, cache = Path(tmp) / "private", Path(tmp) / "cache"
    private.mkdir()
    cache.mkdir()
    prefix, env, meta = sandbox.plan(private, [Path(p) for p in settings["hide"]], [Path(p) for p in settings["read_only"]],
                                     "cuda", settings["limits"], cache_dir=cache)
    print(json.dumps({"variant": "meta", **meta}), flush=True)
    base = json.loads(prefix[-2])
    variants = {
        "real": {},
        "no_base_prefix": {"read_only": [p for p in base["read_only"] if p != str(Path(sys.base_prefix).resolve())]},
        "no_read_only": {"read_only": []},
        "no_hide": {"hide": []},
        "no_limits": {"limits": {}},
        "no_cache": {"cache_dir": None},
        "root_user": {"drop_user": False},
        "bare": {"read_only": [], "hide": [], "limits": {}, "cache_dir": None},
    }
    # the init step with one of its steps patched out (the config cannot switch these)
    patches = {
        "no_read_only_everywhere": "s._read_only_everywhere = lambda: None",
        "read_only_but_dev": ("f = s._read_only_everywhere\n"
                              "def g():\n f(); s._mount_setattr('/dev', attr_clr=s.MOUNT_ATTR_RDONLY)\n"
                              "s._read_only_everywhere = g"),
        "read_only_but_proc_sys": ("f = s._read_only_everywhere\n"
                                   "def g():\n f()\n for p in ('/dev', '/sys', '/run'):\n"
                                   "  try: s._mount_setattr(p, attr_clr=s.MOUNT_ATTR_RDONLY)\n  except OSError: pass\n"
                                   "s._read_only_everywhere = g"),
    }
    old = os.environ.get("OLD_SANDBOX")  # an older sandbox.py to compare with, run on the same config
    if old:
        patches["old_sandbox"] = (f"import importlib.util\nspec = importlib.util.spec_from_file_location('old', {old!r})\n"
                                  "s = importlib.util.module_from_spec(spec); spec.loader.exec_module(s)")
    for name, patch in patches.items():
        variants[name] = {"patch": patch}
    for name, change in variants.items():
        change = dict(change)
        patch = change.pop("patch", None)
        cfg = {**base, **change}
        init = ["-m", "d2k.execution.sandbox"] if patch is None else \
            ["-c", f"import os, sys\nimport d2k.execution.sandbox as s\n{patch}\nsys.exit(s.init(sys.argv[1:]))"]
        cut = prefix.index("-m")
        cmd = [*prefix[:cut], *init, json.dumps(cfg), "--", sys.executable, "-c", CHECK]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=str(private))
        print(json.dumps({"variant": name, "rc": r.returncode, "out": r.stdout.strip()[-3000:],
                          "err": r.stderr.strip()[-600:]}), flush=True)
