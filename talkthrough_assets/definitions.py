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
    asset,
    define_asset_job,
    in_process_executor,
    op,
    sensor,
)

from . import dropdir, pipeline, sqlite_tuning
from .errors import StageError
from .settings import DEPS, STAGE_KEYS, STAGES, save_overrides

sqlite_tuning.install()

PARTITIONS_NAME = "recordings"
recordings_partitions = DynamicPartitionsDefinition(name=PARTITIONS_NAME)

# Dagster-config types of the per-recording settings (all optional: unset = keep persisted/default).
FIELD_TYPES = {
    "max_seconds": int, "recorded_at": str, "whisper_model": str, "language": str, "vocabulary": str,
    "beam_size": int, "diarize": bool, "num_speakers": int, "diarize_threshold": float, "max_frames": int,
    "scene_threshold": float, "ocr": bool, "speaker_names": dict,
}

KINDS = {"probe": {"python"}, "wall_clock": {"python"}, "audio": {"python"}, "segments": {"python"},
         "turns": {"python"}, "keyframes": {"python"}, "dedup": {"python"}, "ocr": {"python"},
         "manifest": {"json"}}

DESCRIPTIONS = {
    "probe": "Streams, duration, container tags; caps and disk-space preflight.",
    "wall_clock": "Wall-clock anchor: recorded_at > QuickTime creationdate > creation_time > mtime-duration.",
    "audio": "16 kHz mono WAV cache of the first audio stream.",
    "segments": "faster-whisper transcript segments + word timestamps (CPU int8, VAD).",
    "turns": "Speaker turns (sherpa-onnx), roster and per-word attribution; opt-in via `diarize`.",
    "keyframes": "One-pass scene/interval keyframes, <=1568 px JPEGs.",
    "dedup": "dHash 9x8 on consecutive keyframes; Hamming <= 4 marks duplicates.",
    "ocr": "RapidOCR over unique keyframes.",
    "manifest": "talkthrough-manifest/v1 JSON + the recordings row.",
}


def _config_class(stage: str) -> type[Config]:
    fields = STAGE_KEYS[stage]
    ns = {"__annotations__": {k: Optional[FIELD_TYPES[k]] for k in fields}, **{k: None for k in fields}}
    return type(f"{stage.title().replace('_', '')}Config", (Config,), ns)


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


def _make_asset(stage: str):
    cfg_cls = _config_class(stage)

    def compute(context: AssetExecutionContext, config) -> MaterializeResult:
        overrides = {k: v for k, v in config.model_dump().items() if v is not None}
        try:
            res = pipeline.run_stage(stage, context.partition_key, overrides)
        except StageError as e:
            raise Failure(description=f"{stage}: {e.reason}", metadata={"reason": e.reason},
                          allow_retries=False) from None
        checks = [AssetCheckResult(check_name=c["name"], passed=c["passed"],
                                   severity=AssetCheckSeverity.WARN, metadata={"detail": c["description"]})
                  for c in res.get("checks", [])]
        return MaterializeResult(metadata=_metadata(res["metadata"]), data_version=DataVersion(res["data_version"]),
                                 check_results=checks)

    compute.__annotations__["config"] = cfg_cls
    compute.__name__ = stage
    return asset(
        name=stage,
        deps=list(DEPS[stage]),
        partitions_def=recordings_partitions,
        code_version=pipeline.CODE_VERSIONS[stage],
        group_name="talkthrough",
        description=DESCRIPTIONS[stage],
        kinds=KINDS[stage],
        check_specs=[AssetCheckSpec(name, asset=stage) for name in CHECKS.get(stage, [])],
    )(compute)


ASSETS = [_make_asset(s) for s in STAGES]

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
