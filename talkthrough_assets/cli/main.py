"""`talkthrough` command line: builds the typer app and registers the commands, grouped by area in their own
modules (processing, recordings, maintenance, serve, people). Each command is a thin surface: it parses its
options, calls one function of ``app/`` (processing goes through Dagster) and prints what it returns."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading

import typer

from talkthrough_assets.cli import maintenance, processing, recordings, serve
from talkthrough_assets.cli.command import Command
from talkthrough_assets.cli.people import app as people_app

# rich_markup_mode=None: help texts are plain text (a "[...]" in them is never read as markup)
app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Turn screen and meeting recordings into agent-readable data, locally.")


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"talkthrough {version('talkthrough')}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", metavar="", is_eager=True, callback=_version,
                                       help="Print the version and exit.")) -> None:
    """Turn screen and meeting recordings into agent-readable data, locally."""
    from talkthrough_assets import store

    try:  # a run a killed command left STARTED: marked by the command that follows, whichever it is
        dead = store.tempfiles.dead_run_marks()
    except Exception:  # a data root the command itself will name the trouble with
        dead = []
    if dead:
        from talkthrough_assets.app.runs import mark_killed_runs

        mark_killed_runs()


# in the order `talkthrough --help` lists them
for command in (processing.process, maintenance.doctor, processing.repair,
                recordings.recordings, recordings.at, recordings.sql, recordings.name,
                recordings.export, recordings.report,
                maintenance.forget, maintenance.gc,
                serve.mcp, serve.ui, serve.worker):
    app.command(cls=Command)(command)

app.add_typer(people_app, name="people")  # `talkthrough people`


def main() -> None:  # pragma: no cover
    """The ``talkthrough`` command: the command runs, then the process ends without the interpreter's teardown
    (~0.45 s after `process`: the loaded models and Dagster's modules freed one by one, nothing left to save;
    bench/bench_cold_start.py). What was printed is flushed, the threads that are not daemons are waited for and
    the exit handlers run first."""
    try:
        app()
        code = 0
    except SystemExit as e:
        code = e.code
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # the reader went away: nothing more to deliver
        code = code or 1
    # what the interpreter's own exit would do first: wait for the threads that are not daemons, run the exit
    # handlers (which close the logs); then end without freeing every object one by one
    threading._shutdown()
    atexit._run_exitfuncs()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
