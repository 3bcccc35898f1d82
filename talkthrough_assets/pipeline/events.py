"""What a run tells the rest of the process and leaves behind: the stage listeners (started/ok/failed, the CLI
shows them live), the stage_runs rows (:func:`record`), the events :func:`scheduler.run_stages` yields
(:data:`STARTED`, :class:`Progress`, :class:`Skipped`), and a recording's last failure."""

from __future__ import annotations

from talkthrough_assets.core.errors import TalkthroughError

from typing import Callable

from talkthrough_assets import store
from talkthrough_assets.pipeline.sources import now
from talkthrough_assets.stages.runner import stage_state

# Progress hooks (stage, recording_id, "started"|"ok"|"failed", info); the CLI shows them live. Observers of every
# run in this process (a run's own listener of progress inside a stage comes with its RunContext).
listeners: list[Callable[[str, str, str, dict], None]] = []

STARTED = "started"  # yielded by run_stages when a stage is handed to a worker


class Skipped(TalkthroughError):
    """A stage not run because a stage it depends on failed in the same run."""

    def __init__(self, stage: str, upstream: str):
        super().__init__(f"{stage}: skipped ({upstream} failed)")
        self.stage, self.upstream = stage, upstream


class Progress(dict):
    """A progress report of a running stage, as :func:`run_stages` yields it (share, text, eta_s)."""


def notify(stage: str, rid: str, state: str, info: dict) -> None:
    for fn in list(listeners):
        fn(stage, rid, state, info)


_last_failure: dict[str, str] = {}  # recording -> its last failure's "stage: reason" in this process


def forget_failure(rid: str) -> None:
    """A new run of ``rid`` begins: what failed before is no longer its last failure."""
    _last_failure.pop(rid, None)


def record(rid: str, row: dict) -> None:
    """Write a stage's stage_runs row (``finished_at`` added); a failure is also kept in this process."""
    row["finished_at"] = now()
    if row["status"] == "failed":
        _last_failure[rid] = f"{row['stage']}: {row['reason']}"
    try:
        store.write_table("stage_runs", rid, [row], part=row["stage"])
    except OSError as e:
        # a full disk that keeps the failure from being recorded must not hide its reason behind a second error
        if row["status"] != "failed" or store.diskfault.kind(e) is None:
            raise


def failed_stage(recording_id: str) -> dict | None:
    """The stage_runs row of a failed stage (its ``internal`` flag: a bug or a broken install), or None."""
    return next((r for r in stage_state(recording_id).values() if r["status"] == "failed"), None)


def failure_reason(recording_id: str) -> str | None:
    failed = failed_stage(recording_id)
    # the stage_runs row, else (a full disk kept it from being written) what this process saw
    return f"{failed['stage']}: {failed['reason']}" if failed else _last_failure.get(recording_id)
