"""The detached process :func:`talkthrough_assets.store.rejections.record_later` starts: one at a time per data root
(the others leave the queue to it), it runs the ``process_recording`` job for each queued recording, which
fails at probe with the reason the command printed. A recording whose newest run already failed with that
reason, or that is no longer failed (processed or forgotten meanwhile), gets no new run."""

from __future__ import annotations

import os
import sys

from talkthrough_assets.core.errors import TalkthroughError

ORIGIN_TAG = "talkthrough/origin"
ORIGIN = "talkthrough process: rejected before a run"


class _Busy(TalkthroughError):
    """Another process holds the rejections lock (it drains the queue)."""


def main() -> int:
    os.nice(10)  # in the background: the command that started it, and anything in the foreground, go first
    from talkthrough_assets.store import rejections
    from talkthrough_assets import store  # (after that: even these imports wait for the foreground)

    while rejections.pending():
        try:
            with store.named_lock("rejections", 0.0, _Busy("another process drains the rejections queue")):
                _drain()
        except _Busy:  # another process drains the queue; it looks again after letting go of the lock
            return 0
    return 0


def _drain() -> None:
    from talkthrough_assets.store import rejections
    from talkthrough_assets.app import service

    inst = service.instance()
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

    from talkthrough_assets.pipeline import execute as pipeline
    from talkthrough_assets.pipeline import registry
    from talkthrough_assets.app import service
    from talkthrough_assets.defs.partitions import FAILURE_TAG

    reason = pipeline.failure_reason(rid)
    if not reason:
        return None
    newest = inst.get_runs(RunsFilter(tags={"dagster/partition": rid}), limit=1)
    if newest and newest[0].status == DagsterRunStatus.FAILURE and newest[0].tags.get(FAILURE_TAG) == reason[:200]:
        return None
    registry.ensure_partition(inst, rid)
    result = service.run_stages(rid, pipeline.plan(rid), inst, tags={ORIGIN_TAG: ORIGIN})
    return result.run_id


if __name__ == "__main__":
    sys.exit(main())
