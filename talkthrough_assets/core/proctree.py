"""Processes on this machine, read from Linux's /proc (no psutil): who is alive, a process's descendants,
who listens on a TCP port, which processes carry an environment marker; and the two prctl settings that
keep a process tree from outliving its owner (a parent-death signal, a child subreaper). No Dagster.
Elsewhere than Linux every question answers "nothing known" and the prctl calls do nothing."""

from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")
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


def _stat(pid: int) -> list[str] | None:
    try:
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Running (a zombie, killed but not reaped yet, is dead)."""
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir(PROC) if n.isdigit()]
    except OSError:
        return []


def descendants(pid: int) -> set[int]:
    """Every living process below ``pid`` in the parent chain (children, grandchildren ...)."""
    children: dict[int, list[int]] = {}
    for p in pids():
        st = _stat(p)
        if st and st[0] not in ("Z", "X"):
            children.setdefault(int(st[1]), []).append(p)
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
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
        argv = [a.decode(errors="replace") for a in (PROC / str(pid) / "cmdline").read_bytes().split(b"\0") if a]
    except OSError:
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
    want = f"{key}={value}".encode()
    out = set()
    me = os.getpid()
    for p in pids():
        if p == me:
            continue
        try:
            env = (PROC / str(p) / "environ").read_bytes()
        except OSError:  # another user's process, or gone
            continue
        if want in env.split(b"\0") and alive(p):
            out.add(p)
    return out


def listeners(port: int) -> set[int]:
    """Processes (of this user: others' sockets cannot be matched) with a TCP socket listening on ``port``."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{f[9]}]")
    if not inodes:
        return set()
    out = set()
    for p in pids():
        try:
            fds = os.listdir(PROC / str(p) / "fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(PROC / str(p) / "fd" / fd) in inodes:
                    out.add(p)
                    break
            except OSError:
                continue
    return out
