"""The serving commands: `mcp` (the read-only MCP server, its own package), `ui` (the Dagster UI + daemon) and
`worker` (a Celery worker that processes the recordings the UI's runs send to the broker)."""

from __future__ import annotations

import os
import sys

import typer

from talkthrough_assets.cli.command import OURS
from talkthrough_assets.cli.output import console, esc


def mcp(
    http: bool = typer.Option(False, "--http", help="Streamable HTTP instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP bind address; non-loopback needs TALKTHROUGH_MCP_TOKEN."),
    port: int = typer.Option(8765, "--port", parser=lambda v: port_number(v), metavar="PORT",
                             help="HTTP port, 1..65535."),
) -> None:
    """Serve the read-only MCP server (stdio by default; --http for streamable HTTP on 127.0.0.1)."""
    # the MCP server is its own package above this one (it imports talkthrough_assets, never the reverse):
    # this process becomes `python -P -m talkthrough_mcp`, so stdio and signals reach the server directly (-P: the
    # current folder never shadows the installed package)
    argv = [sys.executable, "-P", "-m", "talkthrough_mcp", *(["--http", "--host", host, "--port", str(port)] if http else [])]
    sys.stdout.flush()
    os.execv(sys.executable, argv)


def port_number(text) -> int:
    """A TCP port, 1..65535 (the system would take 99999 modulo 65536 and listen elsewhere)."""
    try:
        n = int(str(text).strip())
    except ValueError:
        raise typer.BadParameter(f"port must be a number from 1 to 65535, not {text!r}") from None
    if not 1 <= n <= 65535:
        raise typer.BadParameter(f"port must be from 1 to 65535, not {n}")
    return n


def ui(port: int = typer.Option(3000, parser=lambda v: port_number(v), metavar="PORT",
                                help="Loopback port for the Dagster UI, 1..65535.")) -> None:
    """Start the Dagster UI + daemon (sensor, backfills) on 127.0.0.1. Ctrl-C or SIGTERM stops both,
    after asking the runs in progress to stop."""
    from talkthrough_assets.app import ui_supervisor

    raise typer.Exit(ui_supervisor.serve(port, console()))


def worker(name: str = typer.Option(None, "--name", help="This worker's name (default: worker-PID), "
                                    "shown with the host in the talkthrough/worker tag of the runs it processes."),
           loglevel: str = typer.Option("INFO", "--loglevel", help="Celery's log level.")) -> None:
    """Process recordings sent to the Celery broker (TALKTHROUGH_CELERY_BROKER), one at a time, for the runs the
    UI's daemon launches; needs TALKTHROUGH_PG_URL (shared Dagster storage). SIGTERM stops it after the recording
    in progress; a worker killed mid-recording leaves it to another worker."""
    from talkthrough_assets.app import worker as celery_worker

    try:
        code = celery_worker.serve(name, loglevel)
    except OURS as e:  # not configured: said in one line
        console().print(f"[red]{esc(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    raise typer.Exit(code)
