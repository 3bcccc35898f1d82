"""A file `talkthrough process` rejects before any run (the probe fails in milliseconds: text renamed .mp4, an
empty file) still reaches the Dagster UI, off the command's critical path: its id is queued under
``state/rejections/`` and a detached process (:mod:`talkthrough_assets.app.rejections_run`) runs the
``process_recording`` job for it there, which fails at probe with the same reason, as a run from the UI
would (a failed run with its ``talkthrough/failure`` tag, a failed partition, the reason on each stage).
The command prints its line and exits at once; the run appears a few seconds later.

One such process at a time per data root, however many files are rejected: ``state/rejections/drainer.pid`` names
it while it runs, and a rejection queued meanwhile is left to it. It removes that file before it looks at the
queue a last time, so a rejection queued after that look finds no file and starts the next one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from talkthrough_assets import store

LOG_NAME = "last-run.log"  # what the detached process printed last (its errors, if any)


DRAINER = "drainer.pid"
STARTING_S = 60.0  # a drainer file without a pid yet: the process starting it writes it within this


def record_later(rid: str) -> None:
    """Queue ``rid`` and, unless one is running, start the detached process that records the queued failed runs."""
    folder = store.rejections_dir()
    folder.mkdir(parents=True, exist_ok=True)
    store.atomic_write_bytes(folder / f"{store.check_id(rid)}.json",
                             json.dumps({"recording": rid, "queued_at": time.time()}).encode())
    if not claim():
        return  # the running one drains this too
    with open(folder / LOG_NAME, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-P", "-m", "talkthrough_assets.app.rejections_run"],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                close_fds=True)
    (folder / DRAINER).write_text(str(proc.pid))


def _holder_alive(path) -> bool:
    try:
        text, mtime = path.read_text().strip(), path.stat().st_mtime
    except FileNotFoundError:
        return False
    if not text.isdigit():
        return time.time() - mtime < STARTING_S
    started = store.tempfiles.started_at(int(text))
    return started is not None and mtime >= started - 1.0


def claim(pid: int | None = None) -> bool:
    """Make the drainer file this data root's (with ``pid``, or empty until the caller writes the pid of the
    process it starts); False when a live drainer holds it."""
    path = store.rejections_dir() / DRAINER
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _holder_alive(path):
                return False
            path.unlink(missing_ok=True)  # its drainer died (killed): taken over
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(pid) if pid else "")
        return True
    return False


def release() -> None:
    """The drainer is done: remove its file (only this process's)."""
    path = store.rejections_dir() / DRAINER
    try:
        if path.read_text().strip() == str(os.getpid()):
            path.unlink()
    except FileNotFoundError:
        pass


def pending() -> list[str]:
    folder = store.rejections_dir()
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def done(rid: str) -> None:
    (store.rejections_dir() / f"{rid}.json").unlink(missing_ok=True)
