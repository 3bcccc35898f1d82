"""What every Talkthrough op and asset does with its run: find the recording it is for (its partition key),
tag the run, and end it at its start with a one-line reason when it cannot run."""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
import dagster as dg

from talkthrough_assets import store
from talkthrough_assets.core.errors import TalkthroughError
from talkthrough_assets.defs.partitions import FAILURE_TAG, PARTITIONS_NAME, REFUSED_TAG
from talkthrough_assets.pipeline import preflight

__all__ = ["NO_PARTITION", "RunRefused", "duration", "recording_of_run", "refused_failures", "tag_run"]

NO_PARTITION = ("no recording picked: Talkthrough's assets are materialized per recording (partition); pick "
                "the partition(s) before launching (checks alone: Jobs > check_recording)")


class RunRefused(TalkthroughError):
    """A run that cannot start: no partition picked, or a key that is no recording id."""


def tag_run(context: dg.OpExecutionContext, tags: dict) -> None:
    """Add ``tags`` (those with a value, and changed) to the context's run."""
    new = {k: v for k, v in tags.items() if v and context.run.tags.get(k) != v}
    if new:
        context.instance.add_run_tags(context.run.run_id, new)


def duration(ms) -> str | None:
    """The duration run tag's text."""
    return f"{ms / 1000:.1f} s" if ms is not None else None


def _fail_run(context, reason: str):
    """End the run at its start with a one-line reason (ERROR event, failure tag, no stack)."""
    context.log.error(reason)
    tag_run(context, {FAILURE_TAG: reason[:200]})
    raise RunRefused(reason)


def recording_of_run(context) -> str:
    """The run's recording id (its partition key); a run without one, or with a key that is no recording
    id (Dagster's "Add a partition" accepts any text), fails here with its reason."""
    if not context.has_partition_key:  # e.g. the global asset graph's "Execute all" on the checks
        _fail_run(context, NO_PARTITION)
    rid = context.partition_key
    if store.ID_RE.fullmatch(rid):
        return rid
    if context.instance.has_dynamic_partition(PARTITIONS_NAME, rid):
        context.instance.delete_dynamic_partition(PARTITIONS_NAME, rid)
    _fail_run(context, f"partition {rid!r} is not a recording id (16 hex characters) and was removed; "
                       "add recordings as files: Jobs > register_folder, the drop folder or `talkthrough process`")


def refused_failures(context, selected: list[str]) -> list[tuple[str, str, Exception]]:
    """A drop-folder run of a file the stages' fast checks refused (its tags say which file and why): that
    refusal as the run's stage failures, the other selected stages not run; no stage runs on it, since the file
    is no recording (its bytes' partition only records the failure). [] for any other run."""
    text = context.run.tags.get(REFUSED_TAG)
    if not text:
        return []
    stage, _, reason = text.partition(": ")
    return preflight.refused_run(stage, reason, selected)
