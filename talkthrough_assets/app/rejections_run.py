"""The detached process :func:`talkthrough_assets.store.rejections.record_later` starts when none runs: one at a
time per data root (``rejections.DRAINER`` names it; the lock keeps a second one from draining beside it), it runs the ``process_recording`` job for each queued recording, which
fails at probe with the reason the command printed. A recording whose newest run already failed with that
reason, or that is no longer failed (processed or forgotten meanwhile), gets no new run."""

from __future__ import annotations

import os
import sys
import time

from talkthrough_assets.core.errors import TalkthroughError

ORIGIN_TAG = "talkthrough/origin"
ORIGIN = "talkthrough process: rejected before a run"


class _Busy(TalkthroughError):
    """Another process holds the rejections lock (it drains the queue)."""


def main() -> int:
    os.nice(10)  # in the background: the command that started it, and anything in the foreground, go first
    from talkthrough_assets.store import rejections
    from talkthrough_assets import store  # (after that: even these imports wait for the foreground)

    while True:
        while _pending_soon(rejections):
            try:
                with store.named_lock("rejections", 0.0, _Busy("another process drains the rejections queue")):
                    _drain()
            except _Busy:  # another process drains the queue; it looks again after letting go of the lock
                return 0
        rejections.release()
        # a rejection queued before the release is in this look; one queued after it started a drainer itself
        if not rejections.pending() or not rejections.claim(os.getpid()):
            return 0


LINGER_S = 3.0  # a folder's files are rejected one after another: the next one is waited for, not a new process


def _pending_soon(rejections) -> bool:
    """Whether a rejection is queued now or within :data:`LINGER_S`."""
    deadline = time.monotonic() + LINGER_S
    while not rejections.pending():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _drain() -> None:
    from talkthrough_assets.store import rejections
    from talkthrough_assets.app import runs

    inst = runs.instance()
    for rid in rejections.pending():
        try:
            record(inst, rid)
        except Exception as e:  # one recording's trouble never keeps the others from being recorded
            print(f"{rid}: {type(e).__name__}: {e}", file=sys.stderr)
        finally:
            rejections.done(rid)


def record(inst, rid: str) -> str | None:
    """Run the job for ``rid`` if it is still failed and its newest run does not say so already; the run id."""
    from dagster import DagsterRunStatus, RunsFilter

    from talkthrough_assets.pipeline import events, freshness
    from talkthrough_assets.pipeline import registry
    from talkthrough_assets.app import runs
    from talkthrough_assets.defs.partitions import FAILURE_TAG

    reason = events.failure_reason(rid)
    if not reason:
        return None
    newest = inst.get_runs(RunsFilter(tags={"dagster/partition": rid}), limit=1)
    if newest and newest[0].status == DagsterRunStatus.FAILURE and newest[0].tags.get(FAILURE_TAG) == reason[:200]:
        return None
    registry.ensure_partition(inst, rid)
    result = runs.run_stages(rid, freshness.plan(rid), inst, tags={ORIGIN_TAG: ORIGIN})
    return result.run_id


if __name__ == "__main__":
    sys.exit(main())
