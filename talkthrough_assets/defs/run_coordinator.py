"""The run queue of the shipped instance settings: Dagster's ``QueuedRunCoordinator``, which also names the
recording(s) a run is for (its ``talkthrough/filename`` tag) as it queues the run.

A backfill's runs are created by the daemon with Dagster's partition tags only: a partitions definition cannot
give a per-partition tag there (the daemon holds a copy of it rebuilt from a snapshot, not this package's
code), nor can a job's tags (the same for every run), and the backfill's own tags are the same for all of its
runs. So the runs list showed a queued backfill run as a bare id until its step started and tagged it. Every
run a webserver or daemon queues (backfills, Launchpad, the drop-folder sensor) passes through
:meth:`submit_run`; a run that already has the tag (the sensor's) keeps it, and the stages asset still tags a
run at its start (an operator's own dagster.yaml may use Dagster's coordinator)."""

from __future__ import annotations

import logging

from dagster import QueuedRunCoordinator, SubmitRunContext

# Dagster's partition tags, as its runs carry them (a backfill's batch: a range of the partitions' order)
PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"

_log = logging.getLogger(__name__)


def partition_keys(tags: dict, partitions: list[str]) -> list[str]:
    """The recordings a run is for, from its tags: its partition, or each partition of its range in the order
    ``partitions`` (the dynamic partitions as stored, the order a backfill's range is cut from)."""
    if tags.get(PARTITION_TAG):
        return [tags[PARTITION_TAG]]
    start, end = tags.get(RANGE_START_TAG), tags.get(RANGE_END_TAG)
    if not start or not end:
        return []
    if start in partitions and end in partitions and partitions.index(start) <= partitions.index(end):
        return partitions[partitions.index(start):partitions.index(end) + 1]
    return list(dict.fromkeys([start, end]))  # a range the partitions no longer hold: its ends


class NamingRunCoordinator(QueuedRunCoordinator):
    """Dagster's queued run coordinator (same settings: ``concurrency``, ``run_queue``) that tags each run it
    queues with the file name(s) of its recording(s)."""

    def submit_run(self, context: SubmitRunContext):
        run = context.dagster_run
        try:
            tags = label_tags(self._instance, run.tags)
        except Exception as e:  # a name is a courtesy: never keep a run from its queue (its step names it)
            _log.warning("run %s queued without its file name: %s: %s", run.run_id, type(e).__name__, e)
            tags = {}
        if tags:
            self._instance.add_run_tags(run.run_id, tags)
        return super().submit_run(context)


def label_tags(instance, tags: dict) -> dict:
    """The ``talkthrough/filename`` tag a run lacks, from the recordings its partition tags name; {} when it has
    one or names no recording."""
    from talkthrough_assets.defs.partitions import FILENAME_TAG, PARTITIONS_NAME
    from talkthrough_assets.pipeline import registry

    if tags.get(FILENAME_TAG):
        return {}
    partitions = instance.get_dynamic_partitions(PARTITIONS_NAME) if not tags.get(PARTITION_TAG) else []
    label = registry.run_label(partition_keys(tags, partitions))
    return {FILENAME_TAG: label} if label else {}
