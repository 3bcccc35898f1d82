"""The read-side commands: `recordings` (list, find, by wall time), `at`, `sql`, `name`, `export`, `report`.
Thin: each parses its options, asks :mod:`talkthrough_assets.app.library` (or the service) and prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from talkthrough_assets.cli.command import OURS
from talkthrough_assets.cli.output import console, esc


def recordings(as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
               find: Optional[str] = typer.Option(None, "--find", help="Registered recordings (any state) with a "
                                                  "file whose name or path contains this text: id = partition."),
               since: Optional[str] = typer.Option(None, "--since", help="Only recordings from this wall time on "
                                                   "(yesterday, 9:00, 2h ago, 2026-03-14 14:30, ...)."),
               until: Optional[str] = typer.Option(None, "--until", help="Only recordings up to this wall time "
                                                   "(a day: to its end)."),
               tz: Optional[str] = typer.Option(None, "--tz", help="Time zone of --since/--until (default: $TZ or "
                                                "the machine's).")) -> None:
    """List processed recordings (the id column is never shortened: `talkthrough name` needs it whole);
    with --find, which recording id (Dagster partition) a file is, processed or not; --since/--until keep
    those whose wall-clock span meets that time."""
    if find is not None:
        _found(find, as_json)
        return
    from talkthrough_assets.app import library
    from talkthrough_assets.read.errors import ReadError

    try:
        rows, stated = library.recordings(since, until, tz)
    except ReadError as e:
        typer.echo(e.message, err=True)
        raise typer.Exit(2)
    if stated is not None:
        typer.echo(f"{len(rows)} recording(s) from {stated['since'] or 'the start'} to {stated['until'] or 'now'} "
                   f"({stated['tz']})", err=True)
    if as_json:
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    from talkthrough_assets.cli.layout import recordings_lines

    # ids whole (`talkthrough name` needs them), file names cut in the middle to the terminal's width; in a
    # pipe nothing is cut. recorded at: to the minute in --tz or this machine's zone, the zone named (the zone
    # `talkthrough at` reads a time in; --json: the stored UTC stamp)
    out = console(stderr=False)
    zone = library.display_zone(tz)
    for line in recordings_lines(rows, out.width if out.is_terminal else 10 ** 6, zone):
        typer.echo(line)


def _found(text: str, as_json: bool) -> None:
    """`recordings --find TEXT`: the registered files that match, in any state."""
    from talkthrough_assets.app.summary import find_recordings

    found = find_recordings(text)
    if as_json:
        typer.echo(json.dumps(found, indent=2))
    else:
        for r in found:
            typer.echo(f"{r['recording']}  {r['filename']}  {r['state']}"
                       + (f" ({r['reason']})" if r["reason"] else "")
                       + (f"  transcribed: {r['coverage']}" if r.get("coverage") else "")
                       + (f"  aliases: {', '.join(r['aliases'])}" if r["aliases"] else ""))
    if not found:
        console().print(f"no registered file matches {esc(repr(text))}", highlight=False)
        raise typer.Exit(1)


def at(
    when: str = typer.Argument(..., metavar="WHEN", help="A wall-clock instant: \"2026-03-14 14:32\", "
                               "\"yesterday 14:30\", 14:30, \"2h ago\"."),
    tz: Optional[str] = typer.Option(None, "--tz", help="Time zone of WHEN (default: $TZ or the machine's)."),
    window_ms: int = typer.Option(10000, "--window-ms", help="Transcript +- this many ms around it."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (the MCP get_moment_at answer)."),
) -> None:
    """What was on screen and said at a wall-clock instant, in every recording covering it (the MCP server's
    get_moment_at)."""
    from talkthrough_assets.app import library
    from talkthrough_assets.read import bytime

    try:
        answer = library.moment_at(when, tz=tz, window_ms=window_ms)
    except bytime.ReadError as e:
        typer.echo(e.message, err=True)
        raise typer.Exit(2)
    typer.echo(json.dumps(answer, indent=2, ensure_ascii=False, default=str) if as_json else bytime.render(answer))
    if not answer["covering"]:
        raise typer.Exit(1)


def sql(
    query: str = typer.Argument(..., metavar="QUERY", help="DuckDB SQL over the tables, e.g. "
                                "\"SELECT filename, segment_count FROM recordings\"."),
    as_json: bool = typer.Option(False, "--json", metavar="", help="Print the rows as JSON."),
) -> None:
    """Query the stored tables with DuckDB (no DuckDB CLI needed): recordings, segments, words, turns,
    keyframes, ocr, frames, ... (README "Where the data lives")."""
    from talkthrough_assets.app import library

    try:
        cols, rows = library.query(query)
    except library.QueryFailed as e:
        from rich.markup import escape  # DuckDB's message keeps its lines (the caret under the error)

        console().print(f"[red]query failed:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps([dict(zip(cols, r)) for r in rows], indent=2, default=str))
        return
    from rich.table import Column, Table
    from rich.text import Text

    t = Table(*(Column(c, overflow="fold") for c in cols))
    for r in rows:
        t.add_row(*(Text("" if v is None else str(v)) for v in r))
    console(stderr=False).print(t)


def name(
    recording_id: str = typer.Argument(..., metavar="ID", help="Recording id (16 hex characters)."),
    assignments: List[str] = typer.Argument(..., metavar="LABEL=NAME...", help="LABEL=NAME pairs, e.g. S1=Alice S2=Bob; S1= removes."),
    as_json: bool = typer.Option(False, "--json", help="Print the resulting names as JSON."),
) -> None:
    """Name diarized speakers; a named voice is enrolled under that person and recognised in other
    recordings. Persisted per recording; only manifests are rebuilt (no re-diarization)."""
    from talkthrough_assets.app import library
    from talkthrough_assets.core.errors import RebuildFailed
    from talkthrough_assets.store.locks import PartitionBusy

    err = console()
    try:
        named = library.name_speakers(recording_id, assignments)
    except (RebuildFailed, PartitionBusy) as e:  # the manifest rebuild failed, or the recording is busy
        err.print(f"[red]manifest rebuild failed:[/red] {esc(e)}")
        raise typer.Exit(1)
    except OURS as e:
        err.print(f"[red]{esc(e)}[/red]")
        raise typer.Exit(2)
    merged = named["speaker_names"]
    if as_json:
        typer.echo(json.dumps({"recording_id": recording_id, "speaker_names": merged}, indent=2))
        return
    out = console(stderr=False)
    for label in named["roster"] or sorted(merged):
        out.print(f"  {esc(label)}: {esc(merged[label]) if label in merged else '[dim](unnamed)[/dim]'}")
    out.print(f"  manifest: {esc(named['manifest'])}")
    if named["enrolled"]:  # their voices are recognised in other recordings (`talkthrough people`)
        out.print(f"  voices enrolled: "
                  f"{esc(', '.join(f'{lab} as {merged[lab]}' for lab in named['enrolled'] if lab in merged))}")


def export(
    ref: str = typer.Argument(..., metavar="ID|PATH", help="Recording id (16 hex characters) or the file."),
    fmt: str = typer.Option("srt", "--format", metavar="srt|vtt|md|json|txt", help="Output format."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE|DIR",
                                          help="Write here (into a folder: talkthrough-ID.FORMAT), not to stdout."),
    wall_clock: bool = typer.Option(False, "--wall-clock", help="Add each segment's wall-clock time "
                                    "(SRT/VTT cue times stay recording time)."),
) -> None:
    """Write a processed recording's transcript as SRT, WebVTT, Markdown, JSON or text, speaker names
    applied (the same formatting as the MCP server's get_transcript)."""
    from talkthrough_assets.app import library

    try:
        text, written = library.export(ref, fmt, wall_clock=wall_clock, output=output)
    except OURS as e:
        console().print(f"[red]{esc(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    if output is None:
        typer.echo(text, nl=False)
        return
    console().print(f"wrote {esc(written)}", highlight=False)


def report(
    ref: str = typer.Argument(..., metavar="ID|PATH", help="Recording id (16 hex characters) or the file."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE",
                                          help="Where to write it (default: talkthrough-report-ID.html here)."),
) -> None:
    """Write one self-contained offline HTML page of a processed recording: keyframe timeline, speaker
    turns, transcript with wall time, on-screen text and a search box (no network, no server)."""
    from talkthrough_assets.app import library

    try:
        done = library.write_report(ref, output)
    except OURS as e:
        console().print(f"[red]{esc(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    console(stderr=False).print(f"wrote {esc(done.path)} ({done.size_bytes / 1024:.0f} KiB)", highlight=False)
