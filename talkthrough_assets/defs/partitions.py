"""What a Talkthrough run is keyed and tagged by: the ``recordings`` partitions (one per recording id) and the
run tags the runs list and the partition view show."""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
import dagster as dg

from talkthrough_assets.pipeline import registry

PARTITIONS_NAME = registry.PARTITIONS_NAME
recordings_partitions = dg.DynamicPartitionsDefinition(name=PARTITIONS_NAME)

FILENAME_TAG = "talkthrough/filename"  # on every run: which recording (runs list, partition view)
DURATION_TAG = "talkthrough/duration"  # added once the recording's duration is known (probed)
FAILURE_TAG = "talkthrough/failure"  # a failed run's one-line reason (runs list)
# a drop-folder run of a file the stages' fast checks refused (empty, not media): the file, and "<stage>: <reason>";
# the run fails with that reason at its start (no stage runs) and is the file's record: it is no recording
SOURCE_TAG = "talkthrough/source"
REFUSED_TAG = "talkthrough/refused"
