"""Dagster surface: one asset per stage, all partitioned by the recording id (sha256[:16]).

Thin by design: each asset calls :func:`talkthrough_assets.pipeline.run_stage` and turns
its result into a ``MaterializeResult``; a stage failure becomes a ``dagster.Failure`` whose
description is the one-line human reason.
"""


import os
from pathlib import Path
from typing import Optional

from dagster import (
    AssetExecutionContext,
    AssetSpec,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetSelection,
    Config,
    DataVersion,
    DefaultSensorStatus,
    Definitions,
    GraphDefinition,
    OpExecutionContext,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    DynamicPartitionsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    multi_asset,
    define_asset_job,
    in_process_executor,
    op,
    sensor,
)

from . import dropdir, pipeline, sqlite_tuning, store
from .errors import StageError
from .settings import DEFAULTS, DEPS, STAGES, save_overrides

sqlite_tuning.install()

PARTITIONS_NAME = "recordings"
recordings_partitions = DynamicPartitionsDefinition(name=PARTITIONS_NAME)

KINDS = {"probe": {"python"}, "wall_clock": {"python"}, "audio": {"python"}, "segments": {"python"},
         "turns": {"python"}, "keyframes": {"python"}, "dedup": {"python"}, "ocr": {"python"},
         "manifest": {"json"}}

DESCRIPTIONS = {
    "probe": "Streams, duration, container tags; caps and disk-space preflight.",
    "wall_clock": "Wall-clock anchor: recorded_at > QuickTime creationdate > creation_time > mtime-duration.",
    "audio": "16 kHz mono WAV cache of the first audio stream.",
    "segments": "faster-whisper transcript segments + word timestamps (CPU int8, VAD).",
    "turns": "Speaker turns (sherpa-onnx), roster and per-word attribution; opt-in via `diarize`.",
    "keyframes": "Scene-cut + interval keyframes from I-frames, GOPs decoded only where the picture changed; upright, <=1568 px JPEGs.",
    "dedup": "A keyframe is a duplicate only if no pixel or colour changed since its run's head; new frames record which bands changed.",
    "ocr": "RapidOCR over unique keyframes (only the changed bands when little changed).",
    "manifest": "talkthrough-manifest/v1 JSON + the recordings row.",
}


class StagesConfig(Config):
    """Per-recording settings given for this run (unset = keep the persisted value or the default).

    Each stage reads only its own keys (see the README's amend table); they are persisted, so a later
    run of any stage keeps them. Example: `recorded_at` + materialize `wall_clock` and `manifest`."""

    max_seconds: Optional[int] = None
    recorded_at: Optional[str] = None
    whisper_model: Optional[str] = None
    language: Optional[str] = None
    vocabulary: Optional[str] = None
    beam_size: Optional[int] = None
    diarize: Optional[bool] = None
    num_speakers: Optional[int] = None
    diarize_threshold: Optional[float] = None
    max_frames: Optional[int] = None
    scene_threshold: Optional[float] = None
    ocr: Optional[bool] = None
    speaker_names: Optional[dict] = None


assert set(StagesConfig.model_fields) == set(DEFAULTS), "StagesConfig must list every setting"

CHECKS = {
    "segments": ["transcript_present_when_audible"],
    "keyframes": ["frame_index_matches_disk"],
    "manifest": ["manifest_schema_valid"],
}


def _metadata(md: dict) -> dict:
    out = {}
    for k, v in md.items():
        if k == "contact_sheet":
            out[k] = MetadataValue.path(v)
            out["contact_sheet_preview"] = MetadataValue.md(_inline_image(v))
        elif k.endswith("_head") and isinstance(v, str):
            out[k] = MetadataValue.md(v or "_(empty)_")
        elif v is None:
            out[k] = MetadataValue.text("null")
        else:
            out[k] = v
    return out


def _inline_image(path: str) -> str:
    import base64

    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"![contact sheet](data:image/jpeg;base64,{data})"


def build_stages_asset(code_versions: dict[str, str] | None = None):
    """One multi-asset over the nine stage assets (one step, so independent stages of a recording
    run at once in threads, see pipeline.run_stages): each stage is still its own asset, with its own
    materialization, code version, checks and lineage, and any subset can be materialized alone."""
    code_versions = code_versions or pipeline.CODE_VERSIONS
    specs = [AssetSpec(s, deps=list(DEPS[s]), code_version=code_versions[s], description=DESCRIPTIONS[s],
                       kinds=KINDS[s], group_name="talkthrough", skippable=True) for s in STAGES]
    checks = [AssetCheckSpec(name, asset=stage) for stage, names in CHECKS.items() for name in names]

    @multi_asset(name="talkthrough_stages", specs=specs, check_specs=checks, partitions_def=recordings_partitions,
                 can_subset=True, description="The nine Talkthrough stages of one recording.")
    def talkthrough_stages(context: AssetExecutionContext, config: StagesConfig):
        selected = [k.path[-1] for k in context.selected_asset_keys]
        overrides = {k: v for k, v in config.model_dump().items() if v is not None}
        failures = []
        try:
            for stage, res in pipeline.run_stages(context.partition_key, selected, overrides):
                if res is pipeline.STARTED:
                    context.log.info(f'Started stage "{stage}"')
                    continue
                if isinstance(res, Exception):
                    failures.append(str(res) if isinstance(res, pipeline.Skipped) else f"{stage}: {res.reason}")
                    continue
                yield MaterializeResult(
                    asset_key=stage, metadata=_metadata(res["metadata"]),
                    data_version=DataVersion(res["data_version"]),
                    check_results=[AssetCheckResult(asset_key=stage, check_name=c["name"], passed=c["passed"],
                                                    severity=AssetCheckSeverity.WARN,
                                                    metadata={"detail": c["description"]})
                                   for c in res.get("checks", [])])
        except store.PartitionBusy as e:
            failures.append(str(e))
        if failures:
            raise Failure(description="; ".join(failures), metadata={"reason": failures[0]}, allow_retries=False)

    return talkthrough_stages


ASSETS = [build_stages_asset()]

process_recording = define_asset_job(
    "process_recording",
    selection=AssetSelection.assets(*STAGES),
    executor_def=in_process_executor,
    description="All Talkthrough stages for one recording (in-process: no per-step subprocess cost).",
)



@sensor(job=process_recording, minimum_interval_seconds=15,
        default_status=DefaultSensorStatus.RUNNING if os.environ.get("TALKTHROUGH_DROP_DIR")
        else DefaultSensorStatus.STOPPED,
        description="Watches $TALKTHROUGH_DROP_DIR: one run per new, stable recording (same bytes = alias).")
def drop_dir_sensor(context: SensorEvaluationContext):
    drop = os.environ.get("TALKTHROUGH_DROP_DIR")
    if not drop:
        return SkipReason("TALKTHROUGH_DROP_DIR is not set")
    known = set(context.instance.get_dynamic_partitions(PARTITIONS_NAME))
    res = dropdir.tick(drop, known_ids=known, exts=dropdir.parse_exts(os.environ.get("TALKTHROUGH_DROP_EXTS")))
    for path, why in res.skipped:
        context.log.info(f"skip {path}: {why}")
    overrides = dropdir.settings_from_env()
    for rid, path in res.new + res.aliases:
        pipeline.register_source(path, rid)
    for rid, _ in res.new:
        if overrides:
            save_overrides(rid, overrides)
    context.log.info(f"seen {res.seen}, hashed {res.hashed}, new {len(res.new)}, aliases {len(res.aliases)}, "
                     f"waiting {len(res.waiting)}")
    if not res.new:
        return SkipReason(f"no new stable recordings ({len(res.waiting)} waiting)")
    ids = list(dict.fromkeys(rid for rid, _ in res.new))
    return SensorResult(
        run_requests=[RunRequest(partition_key=rid, run_key=f"drop:{rid}") for rid in ids],
        dynamic_partitions_requests=[recordings_partitions.build_add_request(ids)],
    )


class RegisterFolderConfig(Config):
    folder: str
    recursive: bool = True


@op(description="Hash every media file under `folder` and add it as a `recordings` partition (no processing).")
def register_folder_op(context: OpExecutionContext, config: RegisterFolderConfig) -> None:
    from . import service

    files, skipped = service.collect([config.folder] if config.recursive else
                                     [p for p in Path(config.folder).iterdir() if p.is_file()])
    for p, why in skipped:
        context.log.info(f"skip {p}: {why}")
    ids = service.register_many(files, context.instance)
    context.log.info(f"registered {len(ids)} recordings from {config.folder}; "
                     f"launch a backfill of `process_recording` over them from the UI")


register_folder = GraphDefinition(name="register_folder", node_defs=[register_folder_op]).to_job(
    executor_def=in_process_executor,
    description="Point at a folder: every recording appears as a partition, ready for a UI backfill.")

defs = Definitions(assets=ASSETS, jobs=[process_recording, register_folder], sensors=[drop_dir_sensor],
                   executor=in_process_executor)
