"""The shared-memory file behind ``wire.Arena`` (standard library only: the worker creates it
before it imports torch, so that its candidate starts at once)."""

from __future__ import annotations

import fcntl
import os


def memfd(size: int) -> int:
    """A sealed shared-memory file of ``size`` bytes. Its size can never change, so the candidate,
    which inherits it, cannot shrink it under the worker's mapping (a SIGBUS on the trusted side)."""
    fd = os.memfd_create("d2k-arena", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    except OSError:
        os.close(fd)
        raise
    return fd
