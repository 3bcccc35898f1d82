"""Processes the code under test leaves running in the background (tests wait for them to end)."""

from __future__ import annotations

import time


def background_rejection_runs() -> list[int]:
    """PIDs of the detached processes that record the files `talkthrough process` rejected as failed runs."""
    from talkthrough_assets.core import proctree

    return [p for p in proctree.pids() if proctree.name(p) == "talkthrough_assets.app.rejections_run"
            and proctree.alive(p)]


def wait_background_rejection_runs(timeout: float = 240) -> None:
    deadline = time.time() + timeout
    while background_rejection_runs():
        assert time.time() < deadline, "a background rejection run did not end"
        time.sleep(0.2)


def wait_rejections_recorded(timeout: float = 240) -> None:
    """Until this data root's queue of rejected files is empty (each file leaves it once its failed run is
    recorded) and no background process is left."""
    from talkthrough_assets import store

    deadline = time.time() + timeout
    while any(store.rejections_dir().glob("*.json")) if store.rejections_dir().is_dir() else False:
        assert time.time() < deadline, f"rejected files not recorded: {sorted(store.rejections_dir().iterdir())}"
        time.sleep(0.2)
    wait_background_rejection_runs(max(1.0, deadline - time.time()))
