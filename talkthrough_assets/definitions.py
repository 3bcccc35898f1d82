"""Dagster surface: one asset per stage, all partitioned by the recording id (sha256[:16]).

Thin by design: each asset calls :func:`talkthrough_assets.pipeline.run_stage` and turns
its result into a ``MaterializeResult``; a stage failure becomes a ``dagster.Failure`` whose
description is the one-line human reason.
"""


from typing import Optional

from dagster import (
    AssetExecutionContext,
    AssetSelection,
    Config,
    DataVersion,
    Definitions,
    DynamicPartitionsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
    define_asset_job,
    in_process_executor,
)

from . import pipeline, sqlite_tuning
from .errors import StageError
from .settings import DEPS, STAGE_KEYS, STAGES

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


def _metadata(md: dict) -> dict:
    out = {}
    for k, v in md.items():
        if k.endswith("_head") and isinstance(v, str):
            out[k] = MetadataValue.md(v or "_(empty)_")
        elif v is None:
            out[k] = MetadataValue.text("null")
        else:
            out[k] = v
    return out


def _make_asset(stage: str):
    cfg_cls = _config_class(stage)

    def compute(context: AssetExecutionContext, config) -> MaterializeResult:
        overrides = {k: v for k, v in config.model_dump().items() if v is not None}
        try:
            res = pipeline.run_stage(stage, context.partition_key, overrides)
        except StageError as e:
            raise Failure(description=f"{stage}: {e.reason}", metadata={"reason": e.reason},
                          allow_retries=False) from None
        return MaterializeResult(metadata=_metadata(res["metadata"]), data_version=DataVersion(res["data_version"]))

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
        pool="talkthrough",
    )(compute)


ASSETS = [_make_asset(s) for s in STAGES]

process_recording = define_asset_job(
    "process_recording",
    selection=AssetSelection.assets(*STAGES),
    partitions_def=recordings_partitions,
    executor_def=in_process_executor,
    description="All Talkthrough stages for one recording (in-process: no per-step subprocess cost).",
)

defs = Definitions(assets=ASSETS, jobs=[process_recording], executor=in_process_executor)
