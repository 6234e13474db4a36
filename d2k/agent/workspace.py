"""One directory per attempt; the agent's file tools cannot leave it."""

from __future__ import annotations

from pathlib import Path

MAX_FILE_BYTES = 1_000_000
MAX_FILES = 200


class WorkspaceError(Exception):
    """A file operation the agent asked for was refused (reported to it as a tool error)."""


class Workspace:
    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def resolve(self, path: str) -> Path:
        """``path`` inside the workspace, or WorkspaceError (absolute paths, '..', symlinks out)."""
        if not isinstance(path, str) or not path.strip():
            raise WorkspaceError("path must be a non-empty string")
        if "\x00" in path:
            raise WorkspaceError("path contains a NUL byte")
        candidate = (self.root / path).resolve()
        if candidate != self.root and self.root not in candidate.parents:
            raise WorkspaceError(f"{path!r} is outside the workspace")
        return candidate

    def list_files(self) -> list[dict]:
        files = []
        for p in sorted(self.root.rglob("*")):
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(self.root).parts):
                files.append({"path": str(p.relative_to(self.root)), "bytes": p.stat().st_size})
        return files

    def read_file(self, path: str) -> str:
        target = self.resolve(path)
        if not target.is_file():
            raise WorkspaceError(f"no such file: {path}")
        if target.stat().st_size > MAX_FILE_BYTES:
            raise WorkspaceError(f"{path} is larger than {MAX_FILE_BYTES} bytes")
        try:
            return target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise WorkspaceError(f"{path} is not UTF-8 text") from None

    def write_file(self, path: str, content: str) -> int:
        target = self.resolve(path)
        if not isinstance(content, str):
            raise WorkspaceError("content must be a string")
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise WorkspaceError(f"content is larger than {MAX_FILE_BYTES} bytes")
        if not target.exists() and len(self.list_files()) >= MAX_FILES:
            raise WorkspaceError(f"the workspace already holds {MAX_FILES} files")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return len(data)
