"""Dagster partitions, run tags and the job that processes a recording (the sensor, the CLI, backfills and
amends all launch it)."""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
from dagster import AssetSelection, DynamicPartitionsDefinition, define_asset_job, in_process_executor

from talkthrough_assets.pipeline import registry
from talkthrough_assets.pipeline.settings import STAGES

PARTITIONS_NAME = registry.PARTITIONS_NAME
recordings_partitions = DynamicPartitionsDefinition(name=PARTITIONS_NAME)

FILENAME_TAG = "talkthrough/filename"  # on every run: which recording (runs list, partition view)
DURATION_TAG = "talkthrough/duration"  # added once probe has run
FAILURE_TAG = "talkthrough/failure"  # a failed run's one-line reason (runs list)


process_recording = define_asset_job(
    "process_recording",
    selection=AssetSelection.assets(*STAGES),
    executor_def=in_process_executor,
    description="All Talkthrough stages for one recording (in-process: no per-step subprocess cost). "
                "The sensor, the CLI, and backfills and amends launched from this job's page all run it, "
                "so a recording's runs are in one history.",
)
