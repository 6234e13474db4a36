"""The environment a measurement was taken in: device, driver, versions and clocks as read (never set)."""

from __future__ import annotations

import hashlib
import json
import platform
import socket
import subprocess
import sys

# Fields that identify an environment; clocks and hostnames vary run to run and are recorded apart.
IDENTITY_FIELDS = ("backend", "gpu_name", "compute_capability", "driver", "cuda", "torch", "triton")


def _nvidia_smi(index: int) -> dict:
    query = "driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--id={index}", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return {}
    keys = ["driver", "sm_clock_mhz", "mem_clock_mhz", "max_sm_clock_mhz", "max_mem_clock_mhz", "power_limit_w", "temperature_c"]
    values = [v.strip() for v in out.split(",")]
    info = {}
    for key, value in zip(keys, values):
        try:
            info[key] = value if key == "driver" else float(value)
        except ValueError:
            info[key] = None
    return info


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment_id(info: dict) -> str:
    ident = {k: info.get(k) for k in IDENTITY_FIELDS}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def collect(backend: str) -> dict:
    import numpy
    import torch
    import triton

    info = {
        "backend": backend,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "numpy": numpy.__version__,
        "cuda": torch.version.cuda,
        "cpu": _cpu_model(),
    }
    if backend == "cuda":
        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        info.update({
            "gpu_name": props.name,
            "compute_capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count,
            "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0),
            "gpu_memory_bytes": int(props.total_memory),
            "visible_gpus": torch.cuda.device_count(),
        })
        info.update(_nvidia_smi(index))
    else:
        info.update({"gpu_name": None, "compute_capability": None, "driver": None})
    info["env_id"] = environment_id(info)
    return info
