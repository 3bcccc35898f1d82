"""A file `talkthrough process` rejects before any run (the probe fails in milliseconds: text renamed .mp4, an
empty file) still reaches the Dagster UI, off the command's critical path: its id is queued under
``state/rejections/`` and a detached process (:mod:`talkthrough_assets.app.rejections_run`) runs the
``process_recording`` job for it there, which fails at probe with the same reason, as a run from the UI
would (a failed run with its ``talkthrough/failure`` tag, a failed partition, the reason on each stage).
The command prints its line and exits at once; the run appears a few seconds later."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from talkthrough_assets import store

LOG_NAME = "last-run.log"  # what the detached process printed last (its errors, if any)


def record_later(rid: str) -> None:
    """Queue ``rid`` and start the detached process that records its failed run."""
    folder = store.rejections_dir()
    folder.mkdir(parents=True, exist_ok=True)
    store.atomic_write_bytes(folder / f"{store.check_id(rid)}.json",
                             json.dumps({"recording": rid, "queued_at": time.time()}).encode())
    with open(folder / LOG_NAME, "wb") as log:
        subprocess.Popen([sys.executable, "-P", "-m", "talkthrough_assets.app.rejections_run"], stdin=subprocess.DEVNULL,
                         stdout=log, stderr=log, start_new_session=True, close_fds=True)


def pending() -> list[str]:
    folder = store.rejections_dir()
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def done(rid: str) -> None:
    (store.rejections_dir() / f"{rid}.json").unlink(missing_ok=True)
