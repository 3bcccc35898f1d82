"""Dagster jobs: ``process_recording`` (the sensor, the CLI, backfills and amends all launch it),
``check_recording`` (re-verify a recording's checks) and ``register_folder`` (every media file under a folder
becomes a partition)."""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
import dagster as dg

from talkthrough_assets.defs import celery_route
from talkthrough_assets.defs.checks import check_recording_op
from talkthrough_assets.defs.partitions import PARTITIONS_NAME, recordings_partitions
from talkthrough_assets.defs.resources import DataStoreResource
from talkthrough_assets.pipeline import registry
from talkthrough_assets.pipeline.settings import STAGES

process_recording = dg.define_asset_job(
    "process_recording",
    selection=dg.AssetSelection.assets(*STAGES),
    executor_def=celery_route.executor(),
    description="All Talkthrough stages for one recording (in-process: no per-step subprocess cost; a Celery "
                "task for `talkthrough worker` processes when TALKTHROUGH_CELERY_BROKER is set). "
                "The sensor, the CLI, and backfills and amends launched from this job's page all run it, "
                "so a recording's runs are in one history.",
)

check_recording = dg.GraphDefinition(name="check_recording", node_defs=[check_recording_op]).to_job(
    partitions_def=recordings_partitions, executor_def=dg.in_process_executor,
    description="Re-verify the checks of one recording (pick its partition in the Launchpad; a backfill from "
                "this job's page checks many) against what is on disk now. Dagster's Checks tab cannot "
                "execute partitioned checks itself.")


class RegisterFolderConfig(dg.Config):
    folder: str
    recursive: bool = True


@dg.op(description="Hash every media file under `folder` and add it as a `recordings` partition (no processing).")
def register_folder_op(context: dg.OpExecutionContext, config: RegisterFolderConfig,
                       data_store: DataStoreResource) -> None:
    files, skipped = registry.collect([config.folder], recursive=config.recursive)
    for p, why in skipped:
        context.log.info(f"skip {p}: {why}")
    known = set(context.instance.get_dynamic_partitions(PARTITIONS_NAME))
    ids = registry.register_many(files, context.instance)
    context.log.info(registry.registration_log(files, ids, known, config.folder))
    context.log.info(f"registered {len(ids)} recordings from {config.folder} in {data_store.location()}; "
                     f"process them from the UI: "
                     f"Jobs > process_recording > Materialize all > pick the partitions (all, or missing/failed)")


register_folder = dg.GraphDefinition(name="register_folder", node_defs=[register_folder_op]).to_job(
    executor_def=dg.in_process_executor,
    description="Point at a folder: every recording appears as a partition, ready for a UI backfill.")

JOBS = [process_recording, check_recording, register_folder]
