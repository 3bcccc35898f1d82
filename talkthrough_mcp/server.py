"""Serving the MCP tools: stdio (default) or streamable HTTP on loopback, and the index warm-up beside them.

A non-loopback bind is refused unless a bearer token is configured, and a configured token is always
required (:mod:`talkthrough_mcp.http_guard`). The tools themselves are registered in
:mod:`talkthrough_mcp.tools`. Entry points: ``talkthrough-mcp`` / ``python -m talkthrough_mcp`` (:func:`main`)
and ``talkthrough mcp``, which execs the latter.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

from talkthrough_assets.core import config
from talkthrough_assets.read.reader import Reader, default_reader

from talkthrough_mcp.http_guard import TOKEN_ENV, BearerAuth, BindRefused, check_bind, normalize_host
from talkthrough_mcp.tools import build_server

log = logging.getLogger("talkthrough_mcp")

DEFAULT_PORT = 8765
WARMUP_JOIN_S = 1.0


class Warmup:
    """Builds the index on a background thread so the first search is fast; never blocks the
    transport. ``stop()`` asks it to end between batches and waits briefly for it."""

    def __init__(self, reader: Reader):
        self.reader = reader
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="talkthrough-index-warmup", daemon=True)

    def _run(self) -> None:
        try:
            self.reader.warm(stop=self.stopping)
        except Exception:  # the first tool call retries and reports properly
            if not self.stopping.is_set():
                log.warning("index warm-up failed", exc_info=True)

    def start(self) -> "Warmup":
        self.thread.start()
        return self

    def stop(self, timeout: float = WARMUP_JOIN_S) -> bool:
        """True when the thread has ended."""
        if self.thread.is_alive():
            print("talkthrough mcp: shutting down during the index warm-up; stopping it", file=sys.stderr, flush=True)
        self.stopping.set()
        self.thread.join(timeout)
        return not self.thread.is_alive()


def _exit_now(rc: int) -> None:
    """Leave without interpreter finalization: a daemon thread still inside DuckDB/Arrow native code
    would be force-unwound there ("FATAL: exception not rethrown", SIGABRT). Nothing to persist: the
    server is read-only."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(rc)


def _finish(warmup: Warmup, rc: int) -> int:
    if not warmup.stop():
        _exit_now(rc)
    return rc


def serve(*, http: bool = False, host: str = "127.0.0.1", port: int = DEFAULT_PORT, token: str | None = None) -> int:
    """Run the server until the client disconnects (stdio: EOF on stdin) or the process is stopped
    (HTTP). Exits 0 in both cases, also while the index is still warming up."""
    token = token if token is not None else config.get(TOKEN_ENV)
    if http:
        try:
            host = normalize_host(host)
            check_bind(host, token)
        except BindRefused as e:
            print(f"talkthrough mcp: {e}", file=sys.stderr)
            return 2
    reader = default_reader()
    server = build_server(reader)
    warmup = Warmup(reader).start()
    if not http:
        try:
            server.run("stdio")
        except KeyboardInterrupt:
            pass
        return _finish(warmup, 0)
    import uvicorn

    app = server.streamable_http_app(host=host)
    if token:
        app = BearerAuth(app, token)
    shown = f"[{host}]" if ":" in host else host
    try:  # bound here, before saying where: a port in use is one line, not uvicorn's traceback
        sock = bind(host, port)
    except OSError as e:
        print(f"talkthrough mcp: cannot listen on {shown}:{port}: {e.strerror or e} "
              f"(another server there? pick another with --port)", file=sys.stderr)
        return _finish(warmup, 2)
    print(f"talkthrough mcp: streamable HTTP on http://{shown}:{port}/mcp"
          + (" (bearer token required)" if token else ""), file=sys.stderr, flush=True)
    try:
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    return _finish(warmup, 0)


def bind(host: str, port: int):
    """A listening TCP socket on ``host:port`` (as uvicorn would make it)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def port_number(text: str) -> int:
    """A TCP port, 1..65535 (the system would take 99999 modulo 65536 and listen elsewhere)."""
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be a number from 1 to 65535, not {text!r}") from None
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"port must be from 1 to 65535, not {n}")
    return n


def main(argv: list[str] | None = None) -> int:
    """``python -m talkthrough_mcp [--http] [--host H] [--port P]`` (same as ``talkthrough mcp``)."""
    import argparse

    ap = argparse.ArgumentParser(prog="talkthrough-mcp", description="Read-only MCP server over Talkthrough data.")
    ap.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    ap.add_argument("--host", default="127.0.0.1", help="HTTP bind address (non-loopback needs a token)")
    ap.add_argument("--port", type=port_number, default=DEFAULT_PORT, help="HTTP port, 1..65535")
    a = ap.parse_args(argv)
    return serve(http=a.http, host=a.host, port=a.port)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
