"""What the read-side commands of `talkthrough` ask of the library of processed recordings: the listing (by wall
time), what was on at an instant, SQL over the tables, transcripts and reports written out, speakers named.
Plain functions returning data; the CLI prints it. Our own failures raise :class:`TalkthroughError` (bad input: its
``UsageError``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from talkthrough_assets.core.errors import TalkthroughError, UsageError

if TYPE_CHECKING:
    from talkthrough_assets.read.report import Written


class QueryFailed(TalkthroughError):
    """`talkthrough sql` was given a query DuckDB refused; ``reason`` is DuckDB's message."""


def recordings(since: str | None = None, until: str | None = None, tz: str | None = None
               ) -> tuple[list[dict], dict | None]:
    """Processed recordings, and with ``since``/``until`` only those whose wall-clock span meets that window;
    the window as stated back (since, until, tz), or None without one. ``bytime.ReadError``: a bad time."""
    from talkthrough_assets.app import runs
    from talkthrough_assets.app.summary import list_recordings
    from talkthrough_assets.read import bytime

    win = bytime.window_arg(since, until, tz) if since is not None or until is not None else None
    runs.mark_killed_runs()  # a run a killed `process` left STARTED is failed, not shown running
    rows = list_recordings()
    if win is None:
        return rows, None
    return bytime.filter_rows(rows, win), win.stated().dump()


def display_zone(tz: str | None = None):
    """The zone times are shown in: ``tz``, else ``$TZ`` or this machine's (the one `at` reads a time in).
    ``bytime.ReadError`` for an unknown zone."""
    from talkthrough_assets.read import bytime

    return bytime.zone_arg(tz)[0]


def moment_at(when: str, tz: str | None = None, window_ms: int = 10000) -> dict:
    """The MCP server's get_moment_at answer for a wall-clock instant (``covering``: the recordings that do)."""
    from talkthrough_assets.read.reader import Reader

    reader = Reader(refresh_interval=0)
    try:
        return reader.get_moment_at(when, tz=tz, window_ms=window_ms).meta.dump()
    finally:
        reader.index.close()


def query(sql: str) -> tuple[list[str], list[tuple]]:
    """(column names, rows) of a DuckDB query over the stored tables; :class:`QueryFailed` when DuckDB refuses it."""
    import duckdb

    from talkthrough_assets import store

    if not sql.strip().strip(";").strip():
        raise QueryFailed('no SQL statement given, e.g. "SELECT filename, segment_count FROM recordings"')
    con = store.connect()
    try:
        cur = con.execute(sql)
        if cur is None or cur.description is None:  # a statement that returns no rows
            return [], []
        cols = [d[0] for d in cur.description]
        return cols, cur.fetchall()
    except duckdb.Error as e:
        raise QueryFailed(str(e)) from e
    finally:
        con.close()


def name_speakers(rid: str, assignments: list[str]) -> dict:
    """Apply ``S1=Alice``-style names (``service.set_speaker_names``): the names in force, the roster, where the
    rebuilt manifest is and the labels whose voices are now enrolled (recognised in other recordings)."""
    from talkthrough_assets import store
    from talkthrough_assets.app import service
    from talkthrough_assets.model.turns import Enrolment

    merged, roster = service.set_speaker_names(rid, assignments)
    return {"recording_id": rid, "speaker_names": merged, "roster": roster,
            "manifest": store.data_location(store.manifest_key(rid)),
            "enrolled": [r.label for r in store.read_rows("people", rid, record=Enrolment)]}


def export(ref: str, fmt: str, *, wall_clock: bool = False, output: Path | None = None) -> tuple[str, Path | None]:
    """A recording's transcript (id or file) in ``fmt``, speaker names applied, and the file it was written to
    when ``output`` is given (:func:`output_file`)."""
    from talkthrough_assets import store
    from talkthrough_assets.app import service
    from talkthrough_assets.read import formats

    rid = service.resolve_recording(ref)
    text = formats.export(rid, fmt, wall_clock=wall_clock)
    if output is None:
        return text, None
    return text, store.atomic_write_bytes(output_file(output, f"talkthrough-{rid}.{fmt}"), text.encode())


def output_file(output: Path, default_name: str) -> Path:
    """Where a user's ``-o`` puts a file: into it when it is a folder (under ``default_name``), else that path, whose
    folder must exist (a typo is not silently made into new folders)."""
    output = output.expanduser()
    if output.is_dir():
        return output / default_name
    if not output.parent.is_dir():
        raise UsageError(f"folder {output.parent} does not exist (make it first, or give another -o)")
    return output


def write_report(ref: str, output: Path | None = None) -> Written:
    """The offline HTML page of a recording (id or file), at ``output`` or talkthrough-report-ID.html here:
    where it went and its size."""
    from talkthrough_assets.app import service
    from talkthrough_assets.read import report

    rid = service.resolve_recording(ref)
    name = f"talkthrough-report-{rid}.html"
    return report.write(rid, output_file(output, name) if output is not None else Path(name))
