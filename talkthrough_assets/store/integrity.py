"""Is a stored Parquet file whole, and of its table's schema? Readers skip a damaged file (one warning line
naming it and the fix) instead of failing for every recording; ``talkthrough doctor`` and ``process`` use the
same checks to find what to re-make (``talkthrough_assets/pipeline/datacheck.py``).

A file's verdict is cached by its stamp (inode, size, mtime): a reader that opens many connections (the MCP
server) reads each footer once, and a file rewritten by a run is checked again.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path

from talkthrough_assets.store.paths import SCHEMA_PARTITION, is_remote, single_part, tables_dir
from talkthrough_assets.store.schemas import SCHEMAS, legacy_type

log = logging.getLogger("talkthrough.store")

REPAIR_HINT = "run `talkthrough repair` (or `talkthrough process FILE` again) to re-make it"

_verdicts: dict[tuple, str | None] = {}  # (path, stamp, deep) -> problem or None
_guard = threading.Lock()
_seen: dict[str, str] = {}  # damaged file -> its one-line warning, in the order readers met them


def _stamp(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def schema_problem(table: str, file_schema) -> str | None:
    """Why a file's columns do not fit ``table``'s schema (a column the schema lacks, or of another type); an
    older file lacking a newer column fits (it reads as NULL)."""
    want = SCHEMAS.get(table)
    if want is None:
        return f"no table {table!r} in store.SCHEMAS"
    for f in file_schema:
        if f.name == "recording":
            continue
        i = want.get_field_index(f.name)
        if i < 0:
            return f"column {f.name!r} is not in table {table!r}'s schema"
        if not want.field(i).type.equals(f.type) and not legacy_type(table, f.name, f.type):
            return f"column {f.name!r} is {f.type}, the schema says {want.field(i).type}"
    return None


def file_problem(path: str | os.PathLike, table: str | None = None, *, deep: bool = False) -> str | None:
    """None when the Parquet file at ``path`` is readable (its footer; every page too when ``deep``) and its
    columns fit ``table``'s schema (default: the table named by its folder); else the problem in a few words.
    A file that vanished meanwhile (replaced by a run) is no problem."""
    import pyarrow.parquet as pq

    path = Path(path)
    table = table or path.parent.parent.name
    stamp = _stamp(path)
    if stamp is None:
        return None
    key = (str(path), stamp, deep)
    with _guard:
        if key in _verdicts:
            return _verdicts[key]
    try:
        if stamp[1] < 12:
            problem = f"truncated ({stamp[1]} bytes)"
        else:
            # deep: every page decoded, what a query of any column meets (ParquetFile: no dataset layer, 2x faster)
            schema = pq.ParquetFile(path).read().schema if deep else pq.read_schema(path)
            problem = schema_problem(table, schema)
    except FileNotFoundError:
        return None
    except Exception as e:  # ArrowInvalid ("No magic bytes", a torn footer), OSError ...: the file is damaged
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        problem = "torn or truncated: no Parquet footer" if "magic bytes" in text else text[:160]
    with _guard:
        if len(_verdicts) > 200_000:
            _verdicts.clear()
        _verdicts[key] = problem
    return problem


def warning_line(path: str | os.PathLike, problem: str) -> str:
    """The one line a reader shows for a damaged file it skipped."""
    return f"skipped damaged table file {path} ({problem}); {REPAIR_HINT}"


def note_damaged(path: str | os.PathLike, problem: str) -> str:
    """Remember (and log once) that a reader skipped ``path``; returns the warning line."""
    line = warning_line(path, problem)
    with _guard:
        new = str(path) not in _seen
        _seen[str(path)] = line
    if new:  # straight to stderr (never stdout: the MCP server speaks there), whatever logging is set up
        try:
            sys.stderr.write(f"warning: {line}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            log.warning(line)
    return line


def skipped() -> list[str]:
    """The warning lines of the damaged files readers of this process skipped so far (surfaces print them)."""
    with _guard:
        return list(_seen.values())


def forget_skipped() -> None:
    with _guard:
        _seen.clear()


def damaged_files(table: str, *, deep: bool = False) -> dict[str, str]:
    """Every damaged ``*.parquet`` file of ``table`` (local data root): path -> problem. An object-store root
    is not scanned here (each object is written whole by one PUT)."""
    if is_remote():
        return {}
    out = {}
    root = tables_dir() / table
    try:
        parts = os.scandir(root)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    with parts:
        for part in parts:
            if not part.name.startswith("recording=") or not part.is_dir():
                continue
            try:
                names = os.listdir(part.path)
            except OSError:
                continue
            for n in names:
                if served(table, n):
                    p = os.path.join(part.path, n)
                    problem = file_problem(p, table, deep=deep)
                    if problem:
                        out[p] = problem
    return out


def served(table: str, name: str) -> bool:
    """Whether a file of that name in one of ``table``'s partitions is read by its view: part-0 of a single-part
    table (a stray file beside it is not: `talkthrough repair` moves it aside), any Parquet file of the others."""
    if name.startswith("."):
        return False
    return name == "part-0.parquet" if single_part(table) else name.endswith(".parquet")


def readable_files(table: str, damaged: dict[str, str]) -> list[str]:
    """The table's Parquet files minus ``damaged`` (the list a view reads when some file is damaged)."""
    root = tables_dir() / table
    out = []
    for part in sorted(root.glob("recording=*")):
        for p in sorted(part.glob("*.parquet")):
            if str(p) not in damaged and served(table, p.name):
                out.append(str(p))
    return out


__all__ = ["REPAIR_HINT", "SCHEMA_PARTITION", "damaged_files", "file_problem", "forget_skipped", "note_damaged",
           "readable_files", "schema_problem", "served", "skipped", "warning_line"]
