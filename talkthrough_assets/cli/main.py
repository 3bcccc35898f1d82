"""`talkthrough` command line: a thin surface over `service` (processing goes through Dagster)."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperArgument, TyperCommand, TyperOption

from talkthrough_assets.cli.output import console as _console
from talkthrough_assets.cli.output import console_on as _console_on
from talkthrough_assets.cli.output import esc as _e
from talkthrough_assets.cli.output import print_summary as _print_summary
from talkthrough_assets.cli.output import progress_stream as _progress_stream
from talkthrough_assets.cli.progress import FileProgress
from talkthrough_assets.pipeline.stagespec import SETTINGS


# rich_markup_mode=None: help texts are plain text (a "[...]" in them is never read as markup)
app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Turn screen and meeting recordings into agent-readable data, locally.")


def _annotation(param):
    """The Python type behind a typer parameter (``Optional[int]`` -> ``int``), or None."""
    from typing import get_args

    ann = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    args = [a for a in get_args(ann) if a is not type(None)]
    return args[0] if len(args) == 1 else ann


class _Command(TyperCommand):
    """A command whose `--help` names arguments the classic way (``PATH...``), not by typer's Python
    type labels (``{paths}...``, ``<list[Path]>``), which read as syntax to type."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for p in self.params:
            if isinstance(p, TyperOption) and p.metavar is None:  # `--port N`, `--host TEXT`, a flag alone
                p.metavar = "" if p.is_flag else _METAVARS.get(_annotation(p), "TEXT")
            if isinstance(p, TyperArgument):
                shown = p.metavar or p.name.upper() + ("..." if p.nargs != 1 else "")
                p.display_type_rich = lambda ctx: None
                p._rich_display_name = p._usage_display_name = lambda shown=shown: shown


def process(paths: List[Path], force: bool, as_json: bool, **settings) -> None:
    """Process recordings through the Dagster asset graph (in-process). Same bytes twice = no-op."""
    from rich.progress import Progress

    from talkthrough_assets.cli.layout import line_column

    from talkthrough_assets.pipeline import execute as pipeline
    from talkthrough_assets.app import service
    from talkthrough_assets.stages import runner

    files, skipped = service.collect(paths)
    err = _console()
    missing = [(p, why) for p, why in skipped if not p.exists()]  # a mistyped path: an error, not a skip
    for p, why in skipped:
        if (p, why) not in missing:
            err.print(f"[yellow]skip[/yellow] {_e(p)}: {_e(why)}", highlight=False)
    for p, why in missing:
        err.print(f"[red]error[/red] {_e(p)}: {_e(why)}", highlight=False)
    if not files:
        err.print("[red]no media files to process[/red]")
        raise typer.Exit(2)
    overrides = {k: v for k, v in settings.items() if v is not None}
    results = []
    stream = _progress_stream()
    shown = _console_on(stream)
    live = shown.is_terminal and not as_json  # a spinner line on a terminal; plain lines in a pipe or log
    lines = not shown.is_terminal and not as_json

    def say(text: str) -> None:
        try:
            stream.write(text.replace("\n", "\\n") + "\n")  # a file name with a line break stays on its line
            stream.flush()
        except (OSError, ValueError):
            pass

    try:
        # one line per file, drawn for 80 columns first: it moves at least once a second (issue #38, item 6)
        with Progress(line_column(shown), console=shown, transient=True, disable=not live,
                      refresh_per_second=4) as progress:
            for f in files:
                board = FileProgress()  # audio transcribed and video scanned, one bar, the later ETA
                task = progress.add_task("hashing", total=None, name=f.name, board=board)
                planned: list[str] = []
                done: list[str] = []

                def on_stage(stage, rid, state, info, _task=task, _name=f.name, _planned=planned, _done=done,
                             _board=board):
                    if state in ("ok", "failed") and stage not in _done:
                        _done.append(stage)
                        _board.finished(stage)
                    count = f"{len(_done)}/{len(_planned)} stages, " if _planned else ""
                    took = f" in {info['elapsed_s']:.1f} s" if state == "ok" and "elapsed_s" in info else ""
                    # drawn at once (not at the next tick): a fast stage still shows on the terminal
                    progress.update(_task, description=f"{count}{stage} {state}{took}", refresh=live,
                                    short=f"{len(_done)}/{len(_planned)} {stage} {state}" if _planned else None)
                    if lines and state != "started":
                        say(f"{_name}: {count}{stage} {state}{took}")

                def on_stages(rid, stages, _task=task, _name=f.name, _planned=planned):
                    _planned[:] = stages
                    what = f"running {', '.join(stages)}" if stages else "up to date"
                    progress.update(_task, description=what, short=None)
                    if lines:
                        say(f"{_name}: {what}")

                def on_progress(stage, rid, info, _task=task, _name=f.name, _planned=planned, _done=done,
                                _board=board):
                    _board.report(stage, info)
                    count = f"{len(_done)}/{len(_planned)} stages, " if _planned else ""
                    progress.update(_task, total=100, completed=_board.percent(), refresh=live,
                                    description=f"{count}{_board.text(eta=False)}",
                                    short=(f"{len(_done)}/{len(_planned)} " if _planned else "") + _board.short())

                pipeline.listeners.append(on_stage)
                if live:  # on a terminal only: with --json or in a pipe nothing changes
                    runner.progress_listeners.append(on_progress)
                try:
                    results.append(service.process(f, overrides=overrides, force=force, on_stages=on_stages))
                except Exception as e:  # hashing/registration errors: report, continue with the next file
                    results.append({"source": str(f), "status": "failed", "recording_id": None,
                                    "reason": f"{type(e).__name__}: {e}"})
                finally:
                    pipeline.listeners.remove(on_stage)
                    if on_progress in runner.progress_listeners:
                        runner.progress_listeners.remove(on_progress)
                    progress.remove_task(task)
    finally:
        if stream is not sys.stderr:
            stream.close()
    if as_json:
        typer.echo(json.dumps(results, indent=2, default=str))
    else:
        for r in results:
            _print_summary(r)
    internal = [r for r in results if r.get("internal")]  # errors.InternalError: a bug or a broken install
    if internal:
        err.print(f"[bold red]{len(internal)} of {len(results)} file(s) hit an internal error, not bad input.[/bold red] "
                  "Run `talkthrough doctor`: it checks the installed media stack on a clip it writes itself.")
        raise typer.Exit(3)
    if missing:
        err.print(f"[red]{len(missing)} path(s) not found[/red] (the others were processed)")
        raise typer.Exit(2)
    if any(r["status"] in ("failed", "refused") for r in results):
        raise typer.Exit(1)


# what `--help` shows after an option that takes a value (typer's default is the Python type, `<int>`)
_METAVARS = {int: "N", str: "TEXT", float: "X"}


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"talkthrough {version('talkthrough')}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", metavar="", is_eager=True, callback=_version,
                                       help="Print the version and exit.")) -> None:
    """Turn screen and meeting recordings into agent-readable data, locally."""


def _process_signature() -> inspect.Signature:
    """`process`'s typer options: PATHS, --force, one option per setting that has a ``flag`` in
    stagespec (its name, type and help come from there; unset = keep the persisted value), --json."""
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("paths", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=List[Path],
                          default=typer.Argument(..., metavar="PATH...",
                                                 help="Media files or folders (searched recursively).")),
        inspect.Parameter("force", kw, annotation=bool, default=typer.Option(
            False, "--force", metavar="", help="Re-run every stage even if outputs are current.")),
    ]
    params += [inspect.Parameter(st.name, kw, annotation=Optional[st.type],
                                 default=typer.Option(None, st.flag, help=st.help, parser=st.parse,
                                                      metavar=st.metavar or _METAVARS.get(st.type, "")))
               for st in SETTINGS if st.flag]
    params.append(inspect.Parameter("as_json", kw, annotation=bool, default=typer.Option(
        False, "--json", metavar="", help="Print summaries as JSON.")))
    return inspect.Signature(params, return_annotation=None)


process.__signature__ = _process_signature()
app.command(cls=_Command)(process)


@app.command(cls=_Command)
def doctor(as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Check the installed media stack on a clip it writes itself, the OCR engine on a line it renders and
    the diarization models (found without downloading, run on a test signal); print the resolved versions."""
    from talkthrough_assets.app import selfcheck

    vers, results = selfcheck.versions(), selfcheck.run()
    media_ok = all(r[1] for r in results)
    checks = [(c, "ok" if k else "FAIL", d) for c, k, d in results]
    if media_ok:
        checks += selfcheck.engine_checks()
    env = selfcheck.config_check()
    checks.insert(0, env)
    data = selfcheck.data_check()  # every partition, manifest, frame folder and report of the data root
    checks.append(data)
    ok = all(state != "FAIL" for _, state, _ in checks)
    if as_json:
        typer.echo(json.dumps({"ok": ok, "versions": vers,
                               "checks": [{"check": c, "ok": state != "FAIL", "status": state, "detail": d}
                                          for c, state, d in checks]}, indent=2))
    else:
        typer.echo("  ".join(f"{k} {v}" for k, v in vers.items()))
        for c, state, d in checks:
            typer.echo(f"{state:<4} {c}: {d}")
        typer.echo("all checks passed" if ok else
                   "stored outputs are missing or damaged (see FAIL above): `talkthrough repair` re-makes them"
                   if data[1] == "FAIL" and media_ok and env[1] != "FAIL" else
                   "an environment variable holds a value it cannot take (see FAIL above): fix or unset it"
                   if env[1] == "FAIL" and media_ok else
                   "the media stack is broken on this install (not your recordings): reinstall with "
                   "`pip install -c constraints.txt -e .` from the project folder" if not media_ok else
                   "an engine is broken on this install (see FAIL above): reinstall with "
                   "`pip install -c constraints.txt -e .` from the project folder")
    if not ok:
        raise typer.Exit(3)


@app.command(cls=_Command)
def repair(ref: Optional[str] = typer.Argument(None, metavar="[ID|PATH]", help="One recording (default: all)."),
           as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Re-make what is missing or damaged (a torn table file, a deleted manifest, frame folder or report):
    exactly the stages that wrote it, and the manifest. `talkthrough doctor` lists what is damaged."""
    from talkthrough_assets.app import service

    try:
        done = service.repair(service.resolve_recording(ref) if ref else None)
    except ValueError as e:
        _console().print(f"[red]{_e(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps(done, indent=2))
    else:
        for r in done:
            typer.echo(f"{r['recording_id']}  {r['status']}  stages: {', '.join(r['stages_run']) or 'none'}"
                       + (f"  ({r['reason']})" if r.get("reason") else ""))
        if not done:
            typer.echo("nothing to repair: every stored output is whole")
    if any(r["status"] != "repaired" for r in done):
        raise typer.Exit(1)


@app.command(cls=_Command)
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
    from talkthrough_assets.app import service

    if find is not None:
        found = service.find_recordings(find)
        if as_json:
            typer.echo(json.dumps(found, indent=2))
        else:
            for r in found:
                typer.echo(f"{r['recording']}  {r['filename']}  {r['state']}"
                           + (f" ({r['reason']})" if r["reason"] else "")
                           + (f"  transcribed: {r['coverage']}" if r.get("coverage") else "")
                           + (f"  aliases: {', '.join(r['aliases'])}" if r["aliases"] else ""))
        if not found:
            _console().print(f"no registered file matches {_e(repr(find))}", highlight=False)
            raise typer.Exit(1)
        return
    rows = service.list_recordings()
    if since is not None or until is not None:
        from talkthrough_assets.read import bytime

        try:
            win = bytime.window_arg(since, until, tz)
        except bytime.ReadError as e:
            typer.echo(e.message, err=True)
            raise typer.Exit(2)
        rows = bytime.filter_rows(rows, win)
        stated = win.stated()
        typer.echo(f"{len(rows)} recording(s) from {stated['since'] or 'the start'} to {stated['until'] or 'now'} "
                   f"({stated['tz']})", err=True)
    if as_json:
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    from talkthrough_assets.cli.layout import recordings_lines

    # ids whole (`talkthrough name` needs them), file names cut in the middle to the terminal's width; in a
    # pipe nothing is cut. recorded at: the recording's own local time to the minute (--json: the full stamp)
    out = _console(stderr=False)
    for line in recordings_lines(rows, out.width if out.is_terminal else 10 ** 6):
        typer.echo(line)


@app.command(cls=_Command)
def at(
    when: str = typer.Argument(..., metavar="WHEN", help="A wall-clock instant: \"2026-03-14 14:32\", "
                               "\"yesterday 14:30\", 14:30, \"2h ago\"."),
    tz: Optional[str] = typer.Option(None, "--tz", help="Time zone of WHEN (default: $TZ or the machine's)."),
    window_ms: int = typer.Option(10000, "--window-ms", help="Transcript +- this many ms around it."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (the MCP get_moment_at answer)."),
) -> None:
    """What was on screen and said at a wall-clock instant, in every recording covering it (the MCP server's
    get_moment_at)."""
    from talkthrough_assets.read import bytime
    from talkthrough_assets.read.reader import Reader

    reader = Reader(refresh_interval=0)
    try:
        answer = reader.get_moment_at(when, tz=tz, window_ms=window_ms).meta
    except bytime.ReadError as e:
        typer.echo(e.message, err=True)
        raise typer.Exit(2)
    finally:
        reader.index.close()
    typer.echo(json.dumps(answer, indent=2, ensure_ascii=False, default=str) if as_json else bytime.render(answer))
    if not answer["covering"]:
        raise typer.Exit(1)


@app.command(cls=_Command)
def sql(
    query: str = typer.Argument(..., metavar="QUERY", help="DuckDB SQL over the tables, e.g. "
                                "\"SELECT filename, segment_count FROM recordings\"."),
    as_json: bool = typer.Option(False, "--json", metavar="", help="Print the rows as JSON."),
) -> None:
    """Query the stored tables with DuckDB (no DuckDB CLI needed): recordings, segments, words, turns,
    keyframes, ocr, frames, ... (README "Where the data lives")."""
    import duckdb

    from talkthrough_assets import store

    con = store.connect()
    try:
        cur = con.execute(query)
        cols = [d[0] for d in cur.description or []]
        rows = cur.fetchall()
    except duckdb.Error as e:
        _console().print(f"[red]query failed:[/red] {_e(e)}", highlight=False)
        raise typer.Exit(2)
    finally:
        con.close()
    if as_json:
        typer.echo(json.dumps([dict(zip(cols, r)) for r in rows], indent=2, default=str))
        return
    from rich.table import Column, Table
    from rich.text import Text

    t = Table(*(Column(c, overflow="fold") for c in cols))
    for r in rows:
        t.add_row(*(Text("" if v is None else str(v)) for v in r))
    _console(stderr=False).print(t)


@app.command(cls=_Command)
def name(
    recording_id: str = typer.Argument(..., metavar="ID", help="Recording id (16 hex characters)."),
    assignments: List[str] = typer.Argument(..., metavar="LABEL=NAME...", help="LABEL=NAME pairs, e.g. S1=Alice S2=Bob; S1= removes."),
    as_json: bool = typer.Option(False, "--json", help="Print the resulting names as JSON."),
) -> None:
    """Name diarized speakers; a named voice is enrolled under that person and recognised in other
    recordings. Persisted per recording; only manifests are rebuilt (no re-diarization)."""
    from talkthrough_assets.app import service

    err = _console()
    try:
        merged, roster = service.set_speaker_names(recording_id, assignments)
    except ValueError as e:
        err.print(f"[red]{_e(e)}[/red]")
        raise typer.Exit(2)
    except RuntimeError as e:
        err.print(f"[red]manifest rebuild failed:[/red] {_e(e)}")
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps({"recording_id": recording_id, "speaker_names": merged}, indent=2))
    else:
        out = _console(stderr=False)
        for label in roster or sorted(merged):
            out.print(f"  {_e(label)}: {_e(merged[label]) if label in merged else '[dim](unnamed)[/dim]'}")
        out.print(f"  manifest: {_e(service.store.data_location(service.store.manifest_key(recording_id)))}")
        enrolled = [r["label"] for r in service.store.read_rows("people", recording_id)]
        if enrolled:  # issue #35: their voices are recognised in other recordings (`talkthrough people`)
            out.print(f"  voices enrolled: {_e(', '.join(f'{lab} as {merged[lab]}' for lab in enrolled if lab in merged))}")


from talkthrough_assets.cli.people import app as _people_app  # noqa: E402  (`talkthrough people`: issue #35)

app.add_typer(_people_app, name="people")


@app.command(cls=_Command)
def export(
    ref: str = typer.Argument(..., metavar="ID|PATH", help="Recording id (16 hex characters) or the file."),
    fmt: str = typer.Option("srt", "--format", metavar="srt|vtt|md|json|txt", help="Output format."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE", help="Write here, not to stdout."),
    wall_clock: bool = typer.Option(False, "--wall-clock", help="Add each segment's wall-clock time "
                                    "(SRT/VTT cue times stay recording time)."),
) -> None:
    """Write a processed recording's transcript as SRT, WebVTT, Markdown, JSON or text, speaker names
    applied (the same formatting as the MCP server's get_transcript)."""
    from talkthrough_assets.read import formats

    from talkthrough_assets.app import service

    try:
        text = formats.export(service.resolve_recording(ref), fmt, wall_clock=wall_clock)
    except ValueError as e:
        _console().print(f"[red]{_e(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    if output is None:
        typer.echo(text, nl=False)
        return
    service.store.atomic_write_bytes(output, text.encode())
    _console().print(f"wrote {_e(output)}", highlight=False)


@app.command(cls=_Command)
def report(
    ref: str = typer.Argument(..., metavar="ID|PATH", help="Recording id (16 hex characters) or the file."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE",
                                          help="Where to write it (default: talkthrough-report-ID.html here)."),
) -> None:
    """Write one self-contained offline HTML page of a processed recording: keyframe timeline, speaker
    turns, transcript with wall time, on-screen text and a search box (no network, no server)."""
    from talkthrough_assets.read import report as report_mod

    from talkthrough_assets.app import service

    try:
        rid = service.resolve_recording(ref)
        done = report_mod.write(rid, output or Path(f"talkthrough-report-{rid}.html"))
    except ValueError as e:
        _console().print(f"[red]{_e(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    _console(stderr=False).print(f"wrote {_e(done['path'])} ({done['size_bytes'] / 1024:.0f} KiB)", highlight=False)


@app.command(cls=_Command)
def forget(
    ref: str = typer.Argument(..., metavar="ID|PATH", help="Recording id (16 hex characters) or the file."),
    yes: bool = typer.Option(False, "--yes", help="Really remove it (without it, only say what would go)."),
    as_json: bool = typer.Option(False, "--json", help="Print what was removed as JSON."),
) -> None:
    """Remove a recording everywhere: its rows in every table (search terms, aliases), frames, WAV, manifest,
    settings and its Dagster partition. Refused while a run of it is queued or in progress."""
    from talkthrough_assets.app import service

    err = _console()
    try:
        rid = service.resolve_recording(ref)
        if not yes:  # a short list of what exists (issue #38, item 8)
            from talkthrough_assets.cli.layout import forget_plan_lines

            if not service.store.is_known(rid):
                raise ValueError(f"unknown recording {rid}: nothing stored of it (`talkthrough recordings` lists them)")
            for line in forget_plan_lines(rid, service.pipeline.recording_names(rid), service.store.present_keys(rid),
                                          service.store.data_location(""), err.width if err.is_terminal else 200):
                err.print(_e(line), highlight=False, soft_wrap=True)
            raise typer.Exit(1)
        result = service.forget(rid)
    except service.store.PartitionBusy as e:
        err.print(f"[yellow]refused:[/yellow] {_e(e)}", highlight=False)
        raise typer.Exit(1)
    except ValueError as e:
        err.print(f"[red]{_e(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    out = _console(stderr=False)
    out.print(f"forgot {rid}: removed {len(result['removed'])} location(s)"
              + ("; Dagster partition deleted" if result["dagster_partition_removed"] else ""), highlight=False)
    for loc in result["removed"]:
        out.print(f"  {_e(loc)}", highlight=False)


@app.command(cls=_Command)
def gc(
    dry_run: bool = typer.Option(False, "--dry-run", help="Only say what would be removed."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Remove stored Whisper chunk results and OCR results that no recording uses any more (after a setting
    change or a forget); refused while a run is in progress. Says how much disk chunk results take per hour
    of audio."""
    from talkthrough_assets import store
    from talkthrough_assets.store import cache_gc

    try:
        r = cache_gc.gc(dry_run=dry_run)
    except store.PartitionBusy as e:
        _console().print(f"[yellow]refused:[/yellow] {_e(e)}; nothing removed", highlight=False)
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps(r, indent=2))
        return
    per_h = f"{r['bytes_per_audio_hour'] / 1024:.0f} KiB per hour of audio" if r["bytes_per_audio_hour"] else "no audio"
    o = r["ocr"]
    _console(stderr=False).print(
        f"{'would remove' if dry_run else 'removed'} {r['removed']} unused Whisper chunk result(s) "
        f"({r['removed_bytes'] / 1024:.0f} KiB) and {o['removed']} OCR result(s) ({o['removed_bytes'] / 1024:.0f} KiB); "
        f"kept {r['kept']} chunk results ({r['kept_bytes'] / 1024:.0f} KiB, {r['audio_hours']:.2f} h of audio: "
        f"{per_h}) and {o['kept']} OCR results ({o['kept_bytes'] / 1024:.0f} KiB)", highlight=False)


@app.command(cls=_Command)
def mcp(
    http: bool = typer.Option(False, "--http", help="Streamable HTTP instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP bind address; non-loopback needs TALKTHROUGH_MCP_TOKEN."),
    port: int = typer.Option(8765, "--port", help="HTTP port."),
) -> None:
    """Serve the read-only MCP server (stdio by default; --http for streamable HTTP on 127.0.0.1)."""
    import os
    import sys

    # the MCP server is its own package above this one (it imports talkthrough_assets, never the reverse):
    # this process becomes `python -m talkthrough_mcp`, so stdio and signals reach the server directly
    argv = [sys.executable, "-m", "talkthrough_mcp", *(["--http", "--host", host, "--port", str(port)] if http else [])]
    sys.stdout.flush()
    os.execv(sys.executable, argv)


@app.command(cls=_Command)
def ui(port: int = typer.Option(3000, help="Loopback port for the Dagster UI.")) -> None:
    """Start the Dagster UI + daemon (sensor, backfills) on 127.0.0.1. Ctrl-C or SIGTERM stops both,
    after asking the runs in progress to stop."""
    from talkthrough_assets.app import ui_supervisor

    raise typer.Exit(ui_supervisor.serve(port, _console()))


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
