"""A throwaway Postgres cluster for tests and benchmarks (Debian's `postgresql` package, which
.ci/run installs): initdb + pg_ctl under a temp dir, listening on a free loopback port only, run as
the `postgres` user when we are root (postgres refuses to run as root). Plain module, no pytest."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


class PgUnavailable(RuntimeError):
    """Postgres cannot be installed or started here; the message says why."""


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl:
        return Path(pg_ctl).resolve().parent
    raise PgUnavailable("Postgres server binaries not found (/usr/lib/postgresql/*/bin): "
                        "install Debian's `postgresql` package (`apt-get install -y postgresql`, as .ci/run does)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _parent_for(as_postgres: bool) -> str | None:
    """Where the cluster's temp dir goes. As root, the `postgres` user must be able to walk down to it: a private
    TMPDIR (.ci/run's `mktemp -d` is mode 700) would make initdb fail with "Permission denied", so then the
    world-writable sticky /tmp (or /var/tmp) is used instead."""
    if not as_postgres:
        return None
    import stat

    for cand in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        d = Path(cand).resolve()
        if d.is_dir() and all(p.stat().st_mode & stat.S_IXOTH for p in (d, *d.parents)):
            return str(d)
    return None


class Cluster:
    user = "talkthrough"
    password = "talkthrough-test"

    def __init__(self) -> None:
        self.bindir = _bindir()
        self._as_postgres = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="talkthrough-pg-", dir=_parent_for(self._as_postgres)))
        self.data = self.root / "data"
        self.port = _free_port()
        self.started = False

    def _run(self, *args: str, timeout: float = 120) -> str:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        except OSError as e:  # e.g. no `runuser` here
            raise PgUnavailable(f"cannot run {cmd[0]}: {e}") from None
        if p.returncode != 0:
            raise PgUnavailable(f"{args[0]} failed (rc {p.returncode}): {(p.stderr or p.stdout).strip()[-600:]}")
        return p.stdout

    def start(self) -> "Cluster":
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if self._as_postgres:
            try:
                shutil.chown(self.root, "postgres")
                shutil.chown(pwfile, "postgres")
            except (LookupError, PermissionError) as e:
                raise PgUnavailable(f"running as root and there is no usable `postgres` user: {e}") from None
        self._run("initdb", "-D", str(self.data), "-U", self.user, f"--pwfile={pwfile}", "-E", "UTF8",
                  "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync")
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.root} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-o", opts, "-w", "-t", "60", "start")
        self.started = True
        self.create_db(self.user)
        return self

    def url(self, db: str | None = None) -> str:
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{db or self.user}"

    def create_db(self, name: str) -> str:
        import psycopg2

        con = psycopg2.connect(self.url("postgres"))
        con.autocommit = True
        try:
            with con.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            con.close()
        return self.url(name)

    def query(self, sql: str, params=(), db: str | None = None) -> list[tuple]:
        import psycopg2

        con = psycopg2.connect(self.url(db))
        try:
            with con.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall()
        finally:
            con.close()

    def stop(self) -> None:
        try:
            if self.started:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
        except (PgUnavailable, subprocess.TimeoutExpired):
            pass
        finally:
            self.started = False
            for _ in range(3):
                shutil.rmtree(self.root, ignore_errors=True)
                if not self.root.exists():
                    break
                time.sleep(0.5)


def start_cluster() -> Cluster:
    """Start one, or raise PgUnavailable with the reason (never a silent fallback)."""
    c = Cluster()
    try:
        return c.start()
    except subprocess.TimeoutExpired as e:
        c.stop()
        raise PgUnavailable(f"Postgres did not start in time: {e}") from None
    except BaseException:
        c.stop()
        raise
