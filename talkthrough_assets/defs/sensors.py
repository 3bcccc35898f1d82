"""Dagster sensors and the folder jobs: the drop-folder sensor (one run per new, stable recording) and the
register_folder job (every media file under a folder becomes a partition)."""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
import os
from pathlib import Path

from dagster import (Config, DefaultSensorStatus, GraphDefinition, OpExecutionContext, RunRequest,
                     SensorEvaluationContext, SensorResult, SkipReason, in_process_executor, op, sensor)

from talkthrough_assets.core import config
from talkthrough_assets.pipeline import dropdir
from talkthrough_assets.pipeline import execute as pipeline
from talkthrough_assets.pipeline import registry
from talkthrough_assets.defs.jobs import FILENAME_TAG, PARTITIONS_NAME, process_recording, recordings_partitions
from talkthrough_assets.defs.resources import DataStoreResource


@sensor(job=process_recording, minimum_interval_seconds=max(1, int(config.get("TALKTHROUGH_DROP_INTERVAL_S"))),
        default_status=DefaultSensorStatus.RUNNING if config.get("TALKTHROUGH_DROP_DIR")
        else DefaultSensorStatus.STOPPED,
        description="Watches $TALKTHROUGH_DROP_DIR: one run per new, stable recording (same bytes = alias).")
def drop_dir_sensor(context: SensorEvaluationContext):
    """The folder's state (files handled, files seen once) is named by the cursor and changes only
    with it: a file is done once the run request it earned is returned with the new cursor, so a
    tick that raises, or a file gone before it was registered, leaves it to be looked at again."""
    drop = config.get("TALKTHROUGH_DROP_DIR")
    if not drop:
        return SkipReason("TALKTHROUGH_DROP_DIR is not set")
    known = set(context.instance.get_dynamic_partitions(PARTITIONS_NAME))
    res = dropdir.tick(drop, known_ids=known, state=dropdir.load(drop, context.cursor),
                       exts=dropdir.parse_exts(config.get("TALKTHROUGH_DROP_EXTS")),
                       zero_wait_s=config.get("TALKTHROUGH_DROP_ZERO_WAIT_S"))
    new = dropdir.register(drop, res, dropdir.settings_from_env())
    # The tick's message (counts + the files it waits on, and why) is its skip reason, shown in the
    # tick history. A tick writes a captured log only when something happened: quiet ticks (every
    # 15 s) would otherwise leave a log file each.
    if res.new or res.aliases or res.skipped or res.empty:
        for path, why in res.skipped:
            context.log.info(f"skip {path}: {why}")
        if res.new or res.aliases:
            context.log.info(registration_log([p for _, p in res.new + res.aliases],
                                              [r for r, _ in res.new + res.aliases], known, drop))
        context.log.info(res.message)
    cursor = dropdir.commit(drop, res.state, context.cursor)  # last: in force only once returned
    if not new:
        return SensorResult(skip_reason=f"no new stable recordings: {res.message}", cursor=cursor)
    ids = list(dict.fromkeys(rid for rid, _ in new))
    names = {rid: Path(path).name for rid, path in reversed(new)}
    return SensorResult(
        run_requests=[RunRequest(partition_key=rid, run_key=f"drop:{rid}", tags={FILENAME_TAG: names[rid]})
                      for rid in ids],
        dynamic_partitions_requests=[recordings_partitions.build_add_request(ids)],
        cursor=cursor,
    )


class RegisterFolderConfig(Config):
    folder: str
    recursive: bool = True


@op(description="Hash every media file under `folder` and add it as a `recordings` partition (no processing).")
def register_folder_op(context: OpExecutionContext, config: RegisterFolderConfig,
                       data_store: DataStoreResource) -> None:
    files, skipped = registry.collect([config.folder], recursive=config.recursive)
    for p, why in skipped:
        context.log.info(f"skip {p}: {why}")
    known = set(context.instance.get_dynamic_partitions(PARTITIONS_NAME))
    ids = registry.register_many(files, context.instance)
    context.log.info(registration_log(files, ids, known, config.folder))
    context.log.info(f"registered {len(ids)} recordings from {config.folder} in {data_store.location()}; "
                     f"process them from the UI: "
                     f"Jobs > process_recording > Materialize all > pick the partitions (all, or missing/failed)")


def registration_log(files: list, ids: list[str], known: set[str], root) -> str:
    """One line per file: its recording id (the partition to pick) and whether it is new or an alias
    (same bytes as a recording already registered, under its first name)."""
    lines, first = [], {}
    for f, rid in zip(files, ids):
        name = os.path.relpath(f, root) if root else str(f)
        if rid in known or rid in first:
            lines.append(f"{rid}  {name}  (alias of {first.get(rid) or pipeline.recording_filename(rid)})")
        else:
            first[rid] = Path(f).name
            lines.append(f"{rid}  {name}")
    return f"recording id -> file ({len(first)} new, {len(lines) - len(first)} alias(es)):\n" + "\n".join(lines)


register_folder = GraphDefinition(name="register_folder", node_defs=[register_folder_op]).to_job(
    executor_def=in_process_executor,
    description="Point at a folder: every recording appears as a partition, ready for a UI backfill.")
