"""Which backend a run uses, and the environment a worker of that backend reads (GPU, versions, clocks)."""

from __future__ import annotations

from pathlib import Path

from d2k import supervisor
from d2k.errors import D2KError


def detect_backend(requested: str) -> str:
    if requested not in ("auto", "cuda", "interpreter"):
        raise D2KError(f"--backend must be auto, cuda or interpreter, not {requested!r}")
    if requested != "auto":
        return requested
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "interpreter"
    except ImportError:
        raise D2KError("torch is not installed: pip install torch") from None


_interpreter_env: dict | None = None


def probe_environment(backend: str, directory: Path) -> dict:
    """The environment, read by a worker process of that backend. The interpreter's does not change
    within a process, so it is read once; a GPU's is read every time (its clocks move)."""
    global _interpreter_env
    if backend == "interpreter" and _interpreter_env is not None:
        return dict(_interpreter_env)
    import tempfile

    job = {"kind": "environment", "backend": backend}
    try:
        (directory / "environment").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise D2KError(f"cannot use {directory} as d2k's work folder (D2K_WORKDIR): {exc.strerror or exc}") from None
    # a fresh folder per probe: nothing a previous probe wrote can stand in for this one's answer
    with tempfile.TemporaryDirectory(dir=directory / "environment") as fresh:
        env = supervisor.run_single(job, Path(fresh), "env", timeout_s=300)
    env.pop("event", None)
    if backend == "interpreter":
        _interpreter_env = dict(env)
    return env
