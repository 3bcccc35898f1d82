"""What a run tells whoever watches it and leaves behind: its :class:`Observer` (stage states and progress, the CLI
shows them live), the stage_runs rows (:func:`record`), the events :func:`scheduler.run_stages` yields
(:data:`STARTED`, :class:`Progress`, :class:`Skipped`), and a recording's failure."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from talkthrough_assets.model.runs import StageRun
from talkthrough_assets import store
from talkthrough_assets.core.errors import TalkthroughError
from talkthrough_assets.pipeline.sources import now
from talkthrough_assets.stages.runner import stage_state


@dataclass(frozen=True)
class Observer:
    """Who watches one run from outside Dagster (the CLI's live lines, a test's hook): told each stage's state
    (``on_stage(stage, recording_id, "started"|"ok"|"failed", info)``) and the progress a long stage reports
    (``on_progress(stage, recording_id, info)``). It travels with the run (the stages asset's ``observer``
    resource, :func:`scheduler.run_stages`'s argument), never through process state; a watcher that raises
    never breaks a stage."""

    on_stage: Callable[[str, str, str, dict], None] | None = None
    on_progress: Callable[[str, str, dict], None] | None = None

    def stage(self, stage: str, rid: str, state: str, info: dict) -> None:
        if self.on_stage is not None:
            self.on_stage(stage, rid, state, info)

    def progress(self, stage: str, rid: str, info: dict) -> None:
        if self.on_progress is not None:
            try:
                self.on_progress(stage, rid, info)
            except Exception:  # noqa: BLE001 - a display never breaks a stage
                pass

    def joined(self, other: "Observer | None") -> "Observer":
        """This observer and ``other`` both told, this one first."""
        if other is None or other == NOBODY:
            return self

        def on_stage(*a):
            self.stage(*a)
            other.stage(*a)

        def on_progress(*a):
            self.progress(*a)
            other.progress(*a)

        return Observer(on_stage, on_progress)


NOBODY = Observer()  # a run nobody watches (the UI's, the drop folder's): Dagster's event log says it all

STARTED = "started"  # yielded by run_stages when a stage is handed to a worker


class Skipped(TalkthroughError):
    """A stage not run because a stage it depends on failed in the same run."""

    def __init__(self, stage: str, upstream: str):
        super().__init__(f"{stage}: skipped ({upstream} failed)")
        self.stage, self.upstream = stage, upstream


class Progress(dict):
    """A progress report of a running stage, as :func:`run_stages` yields it (share, text, eta_s)."""


def record(rid: str, run: StageRun) -> None:
    """Write a stage's stage_runs row (``finished_at`` added). A failure whose row a full disk kept from being
    written still reaches the run's observer (its "failed" state carries the reason)."""
    try:
        store.write_table("stage_runs", rid, [replace(run, finished_at=now())], part=run.stage)
    except OSError as e:
        # a full disk that keeps the failure from being recorded must not hide its reason behind a second error
        if run.ok or store.diskfault.kind(e) is None:
            raise


def failed_stage(recording_id: str) -> StageRun | None:
    """The stage_runs row of a failed stage (its ``internal`` flag: a bug or a broken install), or None."""
    return next((r for r in stage_state(recording_id).values() if r.status == "failed"), None)


def failure_reason(recording_id: str) -> str | None:
    """The failed stage's "stage: reason" from its stage_runs row, or None."""
    failed = failed_stage(recording_id)
    return f"{failed.stage}: {failed.reason}" if failed else None
