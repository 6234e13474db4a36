"""Where the benchmark content lives; imported alone (no pydantic) by commands that only read a store."""

from __future__ import annotations

import os
from pathlib import Path

from d2k.errors import D2KError


def find_root(start: Path | None = None) -> Path:
    """The content root: ``$D2K_ROOT``, else the nearest folder up from ``start`` (default: the
    working directory) holding ``tasks/`` and ``design_rubrics/``, else the checkout d2k runs from."""
    env = os.environ.get("D2K_ROOT")
    if env:
        root = Path(env).expanduser().resolve()
        if not (root / "tasks").is_dir():
            raise D2KError(f"D2K_ROOT={env} has no tasks/ folder")
        return root
    here = (start or Path.cwd()).resolve()
    for candidate in [here, *here.parents]:
        if (candidate / "tasks").is_dir() and (candidate / "design_rubrics").is_dir():
            return candidate
    package_parent = Path(__file__).resolve().parent.parent
    if (package_parent / "tasks").is_dir():
        return package_parent
    raise D2KError("no benchmark content found: run inside a d2k checkout or set D2K_ROOT")
