"""Processes on this machine (psutil, on every platform it supports): who is alive, a process's descendants,
who listens on a TCP port, which processes carry an environment marker; and the two prctl settings that keep a
process tree from outliving its owner (a parent-death signal, a child subreaper: Linux only, elsewhere they do
nothing). No Dagster."""

from __future__ import annotations

import ctypes
import os
import signal
import time

import psutil

_GONE = (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess)
_DEAD = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """For a ``preexec_fn``: the kernel sends ``sig`` to this process when the thread that started it exits
    (killed with -9 included). If the parent is already gone by now, exit at once."""
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, int(sig))
    if os.getppid() != parent:
        os._exit(1)


def become_subreaper() -> bool:
    """Orphaned descendants (a grandchild whose parent died, a daemon that double-forked or called setsid)
    are re-parented to this process instead of init, so :func:`descendants` still finds them."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def alive(pid: int) -> bool:
    """Running (a zombie, killed but not reaped yet, is dead); another user's process whose state cannot be read
    counts as running."""
    try:
        return psutil.Process(pid).status() not in _DEAD
    except psutil.AccessDenied:
        return True
    except _GONE:
        return False


def pids() -> list[int]:
    return psutil.pids()


def descendants(pid: int) -> set[int]:
    """Every living process below ``pid`` in the parent chain (children, grandchildren ...)."""
    try:
        below = psutil.Process(pid).children(recursive=True)
    except _GONE:
        return set()
    out = set()
    for c in below:
        try:
            if c.status() not in _DEAD:
                out.add(c.pid)
        except _GONE:
            continue
    return out


def kill_descendants(pid: int, sig: int = signal.SIGKILL, rounds: int = 50, reap: bool = False) -> set[int]:
    """Send ``sig`` to every descendant of ``pid``, again until none is left (one may start another while
    it dies); returns the pids signalled. With ``pid`` a subreaper, the orphans of a killed child stay
    below it and are found on the next round; ``reap``: this process is ``pid`` and collects its exited
    children (not while it still waits on a ``subprocess.Popen``, whose status that would take)."""
    hit: set[int] = set()
    for _ in range(rounds):
        left = descendants(pid)
        if not left:
            break
        for p in left:
            try:
                os.kill(p, sig)
                hit.add(p)
            except (ProcessLookupError, PermissionError):
                pass
        if reap:
            reap_children()
        if sig != signal.SIGKILL:
            break
        time.sleep(0.05)
    return hit


def reap_children() -> None:
    """Collect exited children (a subreaper inherits orphans; left unreaped they stay zombies)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# modules that run the Dagster command given after them, changed (`talkthrough ui`'s `dagster dev`)
_LAUNCHERS = {"talkthrough_assets.app.dagster_dev"}


def name(pid: int) -> str:
    """A short name for messages: the module of ``python -m X`` (``dagster._daemon``), else the program."""
    try:
        argv = [a for a in psutil.Process(pid).cmdline() if a]
    except (*_GONE, OSError):
        return "?"
    if not argv:
        return "?"
    if "-m" in argv[:-1]:
        mod = argv[argv.index("-m") + 1]
        rest = argv[argv.index("-m") + 2:]
        if mod in _LAUNCHERS and rest:  # named by the command it runs (`dagster dev`, `dagster._daemon`)
            mod, rest = rest[0], rest[1:]
        return f"{mod} {rest[0]}" if mod == "dagster" and rest else mod
    prog = os.path.basename(argv[0])
    if prog.startswith("python") and len(argv) > 1:
        prog = f"{prog} {argv[1]}" if argv[1].startswith("-") else os.path.basename(argv[1])
    return prog


def describe(pids) -> str:
    return ", ".join(f"PID {p} ({name(p)})" for p in sorted(pids))


def marked(key: str, value: str) -> set[int]:
    """Living processes of this user whose environment holds ``key=value`` (as they were started)."""
    out = set()
    me = os.getpid()
    for p in psutil.process_iter():
        if p.pid == me:
            continue
        try:
            if p.environ().get(key) == value and p.status() not in _DEAD:
                out.add(p.pid)
        except (*_GONE, OSError):  # another user's process, or gone
            continue
    return out


def listeners(port: int) -> set[int]:
    """Processes (of this user: others' sockets cannot be matched) with a TCP socket listening on ``port``."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        return set()
    return {c.pid for c in conns
            if c.pid is not None and c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port}
