"""Dagster sensors: the drop-folder sensor (one run per new, stable recording in ``$TALKTHROUGH_DROP_DIR``)."""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
from pathlib import Path

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SensorResult, SkipReason, sensor

from talkthrough_assets.core import config
from talkthrough_assets.defs.assets import settings_run_config
from talkthrough_assets.defs.jobs import process_recording
from talkthrough_assets.defs.partitions import (FILENAME_TAG, PARTITIONS_NAME, REFUSED_TAG, SOURCE_TAG,
                                                recordings_partitions)
from talkthrough_assets.pipeline import dropdir
from talkthrough_assets.pipeline.registry import registration_log


@sensor(job=process_recording, minimum_interval_seconds=max(1, int(config.get("TALKTHROUGH_DROP_INTERVAL_S"))),
        default_status=DefaultSensorStatus.RUNNING if config.get("TALKTHROUGH_DROP_DIR")
        else DefaultSensorStatus.STOPPED,
        description="Watches $TALKTHROUGH_DROP_DIR: one run per new, stable recording (same bytes = alias); "
                    "a file that is no recording (empty, not media) gets a failed run of its own, with the reason.")
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
    run_config = settings_run_config(dropdir.settings_from_env()) or None  # the drop folder's, on each of its runs
    new = dropdir.register(drop, res)
    # The tick's message (counts + the files it waits on, and why) is its skip reason, shown in the
    # tick history. A tick writes a captured log only when something happened: quiet ticks (every
    # 15 s) would otherwise leave a log file each.
    if res.new or res.aliases or res.skipped or res.refused:
        for path, why in res.skipped:
            context.log.info(f"skip {path}: {why}")
        for r in res.refused:
            context.log.info(f"refuse {r.path}: {r.stage}: {r.reason}")
        if res.new or res.aliases:
            context.log.info(registration_log([p for _, p in res.new + res.aliases],
                                              [r for r, _ in res.new + res.aliases], known, drop))
        context.log.info(res.message)
    cursor = dropdir.commit(drop, res.state, context.cursor)  # last: in force only once returned
    if not new and not res.refused:
        return SensorResult(skip_reason=f"no new stable recordings: {res.message}", cursor=cursor)
    ids = list(dict.fromkeys(rid for rid, _ in new))
    names = {rid: Path(path).name for rid, path in reversed(new)}
    # a refused file's run is keyed by the file (this version of it), not by its bytes: two empty files, two runs
    refused = [RunRequest(partition_key=r.rid, run_key=f"refused:{r.key}",
                          tags={FILENAME_TAG: Path(r.path).name, SOURCE_TAG: r.path, REFUSED_TAG: f"{r.stage}: {r.reason}"})
               for r in res.refused]
    add = [rid for rid in dict.fromkeys(ids + [r.rid for r in res.refused]) if rid not in known]
    return SensorResult(
        run_requests=[RunRequest(partition_key=rid, run_key=f"drop:{rid}", tags={FILENAME_TAG: names[rid]},
                                 run_config=run_config)
                      for rid in ids] + refused,
        dynamic_partitions_requests=[recordings_partitions.build_add_request(add)] if add else [],
        cursor=cursor,
    )


SENSORS = [drop_dir_sensor]
