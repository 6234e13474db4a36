"""``d2k export``: the store's tables and metric views as Parquet or CSV files, one per name.

The store is attached read-only to an in-memory DuckDB session (so it is never changed and
another reader may hold it); the views of ``d2k/sql/views.sql`` (shipped with the package) are
created there as temporary views, so the files hold the metric definitions in force, and ``meta``
says which version (``views_version``). Every file is written to a temporary name and renamed when
complete.
"""

from __future__ import annotations

import re
from pathlib import Path

from d2k.errors import D2KError

FORMATS = ("parquet", "csv")


def _views_file(views: Path | None) -> Path:
    """The metric definitions to apply: ``views`` if given, else the package's d2k/sql/views.sql.
    A missing file is an error, never an export without the metric views."""
    from d2k.store import VIEWS_FILE

    views = views or VIEWS_FILE
    if not views.is_file():
        raise D2KError(f"the metric views file {views} is missing (a broken d2k installation? reinstall d2k)")
    return views


def _connect(store_path: str, views: Path | None = None):
    import duckdb

    from d2k.store import NO_EXTENSIONS, check_store_file, views_version

    path = Path(store_path).expanduser()
    if not path.is_file():
        raise D2KError(f"no store at {path}: run `d2k bench` or `d2k ingest` first, or pass --db (or set D2K_DB)")
    check_store_file(path)
    views = _views_file(views)
    con = duckdb.connect(":memory:", config=dict(NO_EXTENSIONS))
    try:
        con.execute(f"ATTACH '{str(path)}' AS store (READ_ONLY)".replace("\\", "\\\\"))
        con.execute("USE store")
    except duckdb.Error as exc:
        con.close()
        raise D2KError(f"cannot open the store {path}: {str(exc).splitlines()[0]}") from None
    text = views.read_text(encoding="utf-8")
    temp = re.sub(r"(?i)\bCREATE\s+(OR\s+REPLACE\s+)?(VIEW|MACRO|FUNCTION)\b", r"CREATE \1TEMP \2", text)
    try:
        con.execute(temp)
    except duckdb.Error as exc:
        con.close()
        raise D2KError(f"{views}: {str(exc).splitlines()[0]}") from None
    return con, views_version(text)


def names(con) -> tuple[list[str], list[str]]:
    """The store's base tables and the metric views (v_*)."""
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'store' AND table_schema = 'main' "
        "AND table_type = 'BASE TABLE' ORDER BY table_name").fetchall()]
    views = [r[0] for r in con.execute(
        "SELECT DISTINCT view_name FROM duckdb_views() WHERE NOT internal AND view_name LIKE 'v\\_%' ESCAPE '\\' "
        "ORDER BY view_name").fetchall()]
    return tables, views


def export(store_path: str, out: Path, fmt: str = "parquet", only: list[str] | None = None,
           views: Path | None = None, progress=None) -> tuple[list[tuple[str, Path, int]], str | None]:
    """Write every table and view (or those in ``only``) to ``out/<name>.<fmt>``; returns
    (name, path, rows) per file and the views' version."""
    import duckdb

    if fmt not in FORMATS:
        raise D2KError(f"--format must be parquet or csv, not {fmt!r}")
    con, version = _connect(store_path, views)
    try:
        tables, view_names = names(con)
        available = tables + view_names
        chosen = available if not only else only
        unknown = [n for n in chosen if n not in available]
        if unknown:
            raise D2KError(f"no table or view named {', '.join(unknown)} (see `d2k export --list`)")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise D2KError(f"cannot write to {out}: {exc.strerror or exc}") from None
        written = []
        options = "FORMAT parquet, COMPRESSION zstd" if fmt == "parquet" else "FORMAT csv, HEADER true"
        for name in chosen:
            target = out / f"{name}.{fmt}"
            tmp = out / f".{name}.{fmt}.tmp"
            literal = str(tmp).replace("'", "''")
            try:
                con.execute(f'COPY (SELECT * FROM "{name}") TO \'{literal}\' ({options})')
                rows = con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
            except duckdb.Error as exc:
                tmp.unlink(missing_ok=True)
                raise D2KError(f"cannot export {name}: {str(exc).splitlines()[0]}") from None
            tmp.replace(target)
            written.append((name, target, rows))
            if progress:
                progress(name)
        return written, version
    finally:
        con.close()


def list_names(store_path: str, views: Path | None = None) -> tuple[list[str], list[str]]:
    con, _ = _connect(store_path, views)
    try:
        return names(con)
    finally:
        con.close()
