"""The DuckDB store: every task, workload, design item, solution, environment, run and evaluation.

The schema is versioned: ``d2k/sql/NNN_*.sql`` files are migrations applied in order and recorded
in ``meta``; ``d2k/sql/views.sql`` (the metric definitions, shipped with the package) is re-applied
on every open. The store owns every write: the methods that change rows are in d2k/store_writes.py
(``StoreWrites``, which ``Store`` takes them from); callers never write SQL of their own.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from d2k.errors import D2KError
from d2k.store_writes import StoreWrites, _json, _ts  # noqa: F401  (_json, _ts: imported from here by callers)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "sql"
# the metric definitions (docs/metrics.md), versioned with the package
VIEWS_FILE = MIGRATIONS_DIR / "views.sql"
DEFAULT_DB = "d2k.duckdb"


def default_path() -> str:
    return os.environ.get("D2K_DB") or DEFAULT_DB


# d2k never reaches the network on its own: DuckDB must not fetch or load extensions behind our back
# (it would, e.g., to read an SQLite file given as the store)
NO_EXTENSIONS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
# a read-only store also cannot touch files (COPY TO, ATTACH, read_csv) nor lift these settings
READ_ONLY_CONFIG = {**NO_EXTENSIONS, "enable_external_access": False, "lock_configuration": True}
_MAIN_HEADER = 4096 * 3  # DuckDB's main header and its two database headers precede the blocks


def check_store_file(path: Path) -> None:
    """A one-line error for a file that is not a usable DuckDB database: another format (SQLite,
    text, random bytes), or a DuckDB file shorter than its own header says (truncated)."""
    if not path.is_file():
        # a FIFO or a device would block the read below (a FIFO as --db hung d2k: red team G, session 21)
        raise D2KError(f"the store {path} is not a regular file")
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(_MAIN_HEADER)
    except OSError as exc:
        raise D2KError(f"cannot open the store {path}: {exc.strerror or exc}") from None
    if head.startswith(b"SQLite format 3\x00"):
        raise D2KError(f"{path} is an SQLite database, not a d2k store (DuckDB)")
    if size == 0 or head[8:12] != b"DUCK":
        raise D2KError(f"{path} is not a d2k store: not a DuckDB database file")
    if len(head) < _MAIN_HEADER:
        raise D2KError(f"{path} is truncated: {size} bytes, shorter than a DuckDB header")
    import struct

    # each database header: checksum, iteration, meta block, free list, block count, block size, ...
    # DuckDB writes and trims its file in whole blocks after the headers: a size in between is a
    # file cut short (or padded), whose missing blocks would fail later, mid-query or mid-write
    headers = [struct.unpack_from("<QQqqQQ", head, offset) for offset in (4096, 8192)]
    block_size = max(headers, key=lambda h: h[1])[5]
    if block_size & (block_size - 1) == 0 and 4096 <= block_size <= 1 << 26:
        extra = (size - _MAIN_HEADER) % block_size
        if extra:
            raise D2KError(f"{path} is truncated or damaged: {size} bytes is not DuckDB's header plus whole "
                           f"{block_size}-byte blocks ({extra} bytes over); restore it from a copy")


def views_version(text: str) -> str:
    """The version of a views.sql: the start of the sha256 of its text."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class Store(StoreWrites):
    views_version: str | None = None

    def __init__(self, path: str | Path | None = None, views: Path | None = None, read_only: bool = False):
        self.path = str(path or default_path())
        self.read_only = read_only and self.path != ":memory:"
        if self.path != ":memory:":
            file = Path(self.path).expanduser()
            if file.exists():
                check_store_file(file)
            elif not self.read_only:
                file.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.con = duckdb.connect(self.path, read_only=self.read_only,
                                      config=dict(READ_ONLY_CONFIG if self.read_only else NO_EXTENSIONS))
        except duckdb.Error as exc:
            raise D2KError(f"cannot open the store {self.path}: {str(exc).splitlines()[0]}") from None
        try:
            if self.read_only:
                self._check_readable()
            else:
                self._check_ours()
                self.migrate()
            self.apply_views(views)
        except duckdb.Error as exc:  # a damaged file can fail at its first read, after connect
            self.con.close()
            raise D2KError(f"cannot read the store {self.path}: {str(exc).splitlines()[0]}") from None
        except D2KError:
            self.con.close()
            raise

    def _tables(self) -> set[str]:
        return {r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
            "AND table_schema = 'main' AND table_type = 'BASE TABLE'").fetchall()}

    def _check_ours(self) -> None:
        """A DuckDB file with tables but no d2k schema version is someone else's database: never
        write our tables into it."""
        tables = self._tables()
        if tables and "meta" not in tables:
            raise D2KError(f"{self.path} is a DuckDB database but not a d2k store (no meta table)")

    def _check_readable(self) -> None:
        tables = self._tables()
        if "meta" not in tables:
            raise D2KError(f"{self.path} is not a d2k store (no meta table)")
        row = self.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        current = int(row[0][0]) if row else 0
        latest = max((v for v, _ in self.migrations()), default=0)
        if current > latest:
            raise D2KError(f"{self.path} has schema version {current}, newer than this d2k ({latest}); upgrade d2k")
        if current < latest:
            raise D2KError(f"{self.path} has schema version {current}, older than this d2k ({latest}): "
                           "open it once for writing (e.g. `d2k sql --write 'SELECT 1'`) to migrate it")

    # -- schema ------------------------------------------------------------------------------
    @staticmethod
    def migrations() -> list[tuple[int, Path]]:
        return sorted((int(p.name.split("_", 1)[0]), p) for p in MIGRATIONS_DIR.glob("[0-9][0-9][0-9]_*.sql"))

    def schema_version(self) -> int:
        self.con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        row = self.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        return int(row[0][0]) if row else 0

    def migrate(self) -> None:
        current = self.schema_version()
        latest = max((v for v, _ in self.migrations()), default=0)
        if current > latest:
            raise D2KError(f"{self.path} has schema version {current}, newer than this d2k ({latest}); upgrade d2k")
        for version, path in self.migrations():
            if version <= current:
                continue
            self.con.execute("BEGIN TRANSACTION")
            try:
                self.con.execute(path.read_text())
                self.set_meta("schema_version", str(version))
                self.con.execute("COMMIT")
            except Exception:
                self.con.execute("ROLLBACK")
                raise

    def apply_views(self, views: Path | None = None) -> None:
        """Create the metric views of ``views`` (default: the package's d2k/sql/views.sql); a
        missing file is an error (a broken installation), never a store without its metrics."""
        views = views or VIEWS_FILE
        if not views.is_file():
            raise D2KError(f"the metric views file {views} is missing (a broken d2k installation? reinstall d2k)")
        raw = views.read_text()
        text = raw
        if self.read_only:  # the metric definitions still apply, as views of this session only
            text = re.sub(r"(?i)\bCREATE\s+(OR\s+REPLACE\s+)?(VIEW|MACRO|FUNCTION)\b", r"CREATE \1TEMP \2", text)
        try:
            self.con.execute(text)
        except duckdb.Error as exc:
            raise D2KError(f"{views}: {str(exc).splitlines()[0]}") from None
        # the version of the metric definitions in force (docs/metrics.md): stamped on every
        # table computed from them (d2k analyze), recorded in meta by a store that may write
        self.views_version = views_version(raw)
        if not self.read_only:
            self.set_meta("views_version", self.views_version)

    def close(self) -> None:
        self.con.close()

    # -- reads ---------------------------------------------------------------------------------
    def sol_ms(self, task_id: str, workload_id: str, env_id: str) -> float | None:
        """The workload's speed-of-light time in this environment (as ``v_evaluations`` defines it),
        or None without a calibration."""
        try:
            rows = self.con.execute(
                "SELECT 1e3 * greatest(coalesce(w.bytes / c.copy_bytes_per_s, 0), coalesce(w.flops / CASE t.peak "
                "WHEN 'fp8' THEN c.fp8_flops_per_s WHEN 'fp32' THEN c.fp32_flops_per_s ELSE c.bf16_flops_per_s END, 0)) "
                "FROM workloads w JOIN tasks t ON t.task_id = w.task_id JOIN v_calibration c ON c.env_id = ? "
                "WHERE w.workload_id = ? AND w.task_id = ?", [env_id, workload_id, task_id]).fetchall()
        except duckdb.Error:
            return None
        return float(rows[0][0]) if rows and rows[0][0] else None

    def stored_workloads(self, solution_id: str, env_id: str, timing_mode: str | None = None) -> set[str]:
        """Workloads this solution already has an evaluation for in this environment. With
        ``timing_mode`` (GPU runs: 'events/write', 'span/read', ...; the views' ``timing_mode``
        macro), a timed evaluation counts only if it was timed that way, so figures of two modes or
        two L2 flushes never stand side by side as one run's."""
        # a skipped evaluation (a baseline's library was absent) is not done: it runs once the library is there
        sql = "SELECT DISTINCT workload_id FROM evaluations WHERE solution_id = ? AND env_id = ? AND status <> 'skipped'"
        params: list = [solution_id, env_id]
        if timing_mode is not None:
            sql += " AND (median_ms IS NULL OR timing_mode(backend, timing) = ?)"
            params.append(timing_mode)
        return {r[0] for r in self.con.execute(sql, params).fetchall()}

    # -- queries -----------------------------------------------------------------------------
    def query(self, sql: str, params: list | None = None) -> tuple[list[str], list[tuple]]:
        try:
            cursor = self.con.execute(sql, params or [])
            rows = cursor.fetchall()
            columns = [d[0] for d in cursor.description] if cursor.description else []
        except duckdb.Error as exc:
            message = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
            if self.read_only and ("read-only mode" in message or "disabled by configuration" in message):
                message += " (the store is open read-only: `d2k sql --write` may change it)"
            raise D2KError(f"SQL error: {message}") from None
        return columns, rows
