"""Dagster surface: one asset per stage, all partitioned by the recording id (sha256[:16]).

Thin by design: one subsettable multi-asset calls :func:`talkthrough_assets.pipeline.execute.run_stages`
and turns each stage's result into a ``MaterializeResult`` with its partitioned asset checks.
A stage failure on bad input ends the step with its one-line reason and no Python stack
(:func:`_stop`); an internal error keeps its stack (a ``dagster.Failure``).

The models the stages run on (Whisper, RapidOCR, the sherpa-onnx diarizer) and the data store are
Dagster resources (:data:`RESOURCES`), injected into the stages asset, which hands them to the
pipeline as plain objects.
"""


import os
import socket
import warnings
from typing import Optional

from dagster import (
    AssetCheckEvaluation,
    AssetExecutionContext,
    AssetObservation,
    AssetSpec,
    AssetCheckResult,
    AssetKey,
    AssetCheckSeverity,
    AssetCheckSpec,
    Config,
    DataVersion,
    Definitions,
    GraphDefinition,
    OpExecutionContext,
    ResourceParam,
    Failure,
    MaterializeResult,
    MetadataValue,
    multi_asset,
    in_process_executor,
    op,
)

from talkthrough_assets.pipeline import engines
from talkthrough_assets.pipeline import execute as pipeline
from talkthrough_assets.pipeline import registry
from talkthrough_assets.defs import sqlite_tuning
from talkthrough_assets import store
from talkthrough_assets.defs.jobs import (DURATION_TAG, FAILURE_TAG, FILENAME_TAG, PARTITIONS_NAME, process_recording, recordings_partitions)
from talkthrough_assets.defs.resources import (RESOURCES, DataStoreResource, DiarizerResource, OcrResource, WhisperResource)  # noqa: F401
from talkthrough_assets.defs.sensors import drop_dir_sensor, register_folder, registration_log  # noqa: F401
from talkthrough_assets.core.errors import InternalError, TalkthroughError
from talkthrough_assets.stages.ocr import OcrEngine
from talkthrough_assets.stages.segments.transcribe import Whisper
from talkthrough_assets.pipeline.settings import DEPS, STAGES
from talkthrough_assets.pipeline.stagespec import SETTINGS, SPECS

sqlite_tuning.install()


def _branch(stage: str) -> str:
    """The UI's branch tag, from the graph: downstream of audio only, of keyframes only, or the recording's."""
    sp = {s.name: s for s in SPECS}
    seen, todo = set(), [stage]
    while todo:
        s = todo.pop()
        if s not in seen:
            seen.add(s)
            todo.extend(sp[s].upstream)
    audio, visual = "audio" in seen, "keyframes" in seen
    return "audio" if audio and not visual else "visual" if visual and not audio else "recording"


BRANCH = {sp.name: _branch(sp.name) for sp in SPECS}


def _tables(sp) -> list[str]:
    return [t for t in sp.writes if t in store.SCHEMAS]


# what a stage is (its own kind) and where its output lives: Parquet tables read through DuckDB views
KINDS = {sp.name: set(sorted(sp.kinds)[:1]) | ({"parquet", "duckdb"} if _tables(sp) else set()) for sp in SPECS}


def _asset_metadata(sp) -> dict:
    """The stage's main table's columns (Dagster's column schema, from store.SCHEMAS) and every table it writes."""
    from dagster import TableColumn, TableSchema

    tables = _tables(sp)
    if not tables:
        return {"writes": ", ".join(sp.writes)}
    schema = store.SCHEMAS[tables[0]]
    return {"dagster/column_schema": TableSchema(columns=[TableColumn(f.name, str(f.type)) for f in schema]),
            "table": tables[0], "writes": ", ".join(sp.writes)}
DESCRIPTIONS = {sp.name: sp.description for sp in SPECS}


def _stages_config() -> type[Config]:
    """The run config of the stages asset: every setting, optional (unset = keep the persisted value or
    the default). Each stage reads only its own keys (see the README's amend table); given values are
    persisted, so a later run of any stage keeps them. Example: `recorded_at` + materialize
    `wall_clock` and `manifest`."""
    from pydantic import Field

    ns = {"__annotations__": {st.name: Optional[st.type] for st in SETTINGS},
          **{st.name: Field(default=None, description=_setting_help(st)) for st in SETTINGS},
          "__doc__": _stages_config.__doc__}
    return type("StagesConfig", (Config,), ns)


def _setting_help(st) -> str:
    """A Launchpad field's description, from stagespec (the CLI's --help says the same)."""
    readers = ", ".join(sp.name for sp in SPECS if st.name in sp.settings)
    default = f"default {st.default!r}" + (f" or ${st.env}" if st.env else "") if st.default is not None else (
        f"default from ${st.env}" if st.env else "no default")
    return (f"{st.help} Read by {readers}; {default}. Unset keeps the value persisted for this recording"
            + (f"; also `talkthrough process {st.flag.split('/')[0]}`." if st.flag else "."))


StagesConfig = _stages_config()

# Partitioned asset checks, one result per recording. (name, severity, description)
CHECKS = {sp.name: [(c.name, getattr(AssetCheckSeverity, c.severity), c.description) for c in sp.checks]
          for sp in SPECS if sp.checks}
CHECK_SEVERITY = {name: sev for checks in CHECKS.values() for name, sev, _ in checks}
CHECK_STAGE = {name: stage for stage, checks in CHECKS.items() for name, _, _ in checks}

OWNER = "team:talkthrough"
PREVIEW_MAX_PX = 480  # the contact-sheet thumbnail stored in each keyframes event (a few KB, not the sheet)


def _metadata(md: dict) -> dict:
    out = {}
    for k, v in md.items():
        if k == "report":
            out[k] = MetadataValue.path(v)
        elif k == "contact_sheet":
            out[k] = MetadataValue.path(v)
            thumb = _thumbnail_md(v)
            if thumb:
                out["contact_sheet_preview"] = MetadataValue.md(thumb)
        elif k.endswith("_head") and isinstance(v, str):
            out[k] = MetadataValue.md(v or "_(empty)_")
        elif v is None:
            out[k] = MetadataValue.text("null")
        else:
            out[k] = v
    return out


def _publish_report(context, rid: str) -> str | None:
    """Write the recording's HTML report (``talkthrough report``'s page) beside the manifest just published,
    so the manifest's materialization names it; a report that cannot be written never fails the run."""
    from talkthrough_assets.read import report

    try:
        return report.publish(rid)["path"]
    except Exception as e:  # a view of what is already published: say so and go on
        context.log.warning(f"report not written: {type(e).__name__}: {e}")
        return None


def _thumbnail_md(path: str) -> str | None:
    """A small JPEG thumbnail of the contact sheet as markdown (the full sheet stays on disk, by path)."""
    import base64
    import io

    from PIL import Image

    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            im.thumbnail((PREVIEW_MAX_PX, PREVIEW_MAX_PX))
            buf = io.BytesIO()
            im.save(buf, "JPEG", quality=60, optimize=True)
    except OSError:
        return None
    return f"![contact sheet]({'data:image/jpeg;base64,' + base64.b64encode(buf.getvalue()).decode()})"


NO_PARTITION = ("no recording picked: Talkthrough's assets are materialized per recording (partition); pick "
                "the partition(s) before launching (checks alone: Jobs > check_recording)")


def _stop(reason: str) -> Exception:
    """What ends the step of a recording that cannot be processed as it is (bad input, a busy recording),
    with ``reason`` as the step's whole error. Dagster wraps any other exception a step raises in its
    DagsterExecutionStepExecutionError (a stack of its own frames, the reason only as the cause), and the
    RUN_FAILURE row, the last row of the run page and the one it opens scrolled to, repeats that error
    with the stack. An error already serialized (as a code server sends one) is recorded as it is: both
    rows then show the reason alone, with no stack and no wrapper."""
    from dagster._core.errors import DagsterUserCodeProcessError
    from dagster._utils.error import SerializableErrorInfo

    info = SerializableErrorInfo(message=reason, stack=[], cls_name="RecordingFailed")
    return DagsterUserCodeProcessError(reason, user_code_process_error_infos=[info])


def _check_result(stage: str, c: pipeline.CheckResult) -> AssetCheckResult:
    return AssetCheckResult(asset_key=stage, check_name=c.name, passed=c.passed,
                            severity=CHECK_SEVERITY.get(c.name, AssetCheckSeverity.WARN),
                            description=c.description, metadata={"detail": c.description})


def _not_materialized(stage: str, rid: str, reason: str) -> AssetObservation:
    """Why this stage's partition did not materialize, as an observation of that asset partition: the
    partition view lists it beside the failed run (Dagster's own "failed to materialize" events are
    not stored by its SQLite storage)."""
    return AssetObservation(asset_key=stage, partition=rid, description=reason,
                            metadata={"failure_reason": MetadataValue.text(reason)})


def _not_checked(stage: str, name: str, reason: str) -> AssetCheckResult:
    """A check whose stage did not materialize in this run could not run: recorded for this partition as a
    warning that says why. Left unevaluated, Dagster records it as "Execution failed", and an asset whose
    latest check execution failed is marked failed as a whole, by one bad recording."""
    text = f"not checked: {stage} did not materialize for this recording ({reason})"
    return AssetCheckResult(asset_key=stage, check_name=name, passed=False, severity=AssetCheckSeverity.WARN,
                            description=text, metadata={"not_checked": MetadataValue.text(reason)})


def _tag_run(context: AssetExecutionContext, tags: dict) -> None:
    new = {k: v for k, v in tags.items() if v and context.run.tags.get(k) != v}
    if new:
        context.instance.add_run_tags(context.run.run_id, new)


def _duration(ms) -> str | None:
    return f"{ms / 1000:.1f} s" if ms is not None else None


class RunRefused(TalkthroughError):
    """A run that cannot start: no partition picked, or a key that is no recording id."""


def _fail_run(context, reason: str):
    """End the run at its start with a one-line reason (ERROR event, failure tag, no stack)."""
    context.log.error(reason)
    _tag_run(context, {FAILURE_TAG: reason[:200]})
    raise RunRefused(reason)


def _recording_of_run(context) -> str:
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


def build_stages_asset(code_versions: dict[str, str] | None = None):
    """One multi-asset over the nine stage assets (one step, so independent stages of a recording
    run at once in threads, see pipeline.run_stages): each stage is still its own asset, with its own
    materialization, code version, checks and lineage, and any subset can be materialized alone."""
    code_versions = code_versions or pipeline.CODE_VERSIONS
    by_name = {sp.name: sp for sp in SPECS}
    specs = [AssetSpec(s, deps=list(DEPS[s]), code_version=code_versions[s], description=DESCRIPTIONS[s],
                       kinds=KINDS[s], group_name="talkthrough", skippable=True, owners=[OWNER],
                       tags={"talkthrough/branch": BRANCH[s]}, metadata=_asset_metadata(by_name[s]))
             for s in STAGES]
    with warnings.catch_warnings():  # partitioned checks are a "preview" feature in Dagster 1.13
        warnings.simplefilter("ignore")
        checks = [AssetCheckSpec(name, asset=stage, description=desc, partitions_def=recordings_partitions)
                  for stage, items in CHECKS.items() for name, _, desc in items]

    @multi_asset(name="talkthrough_stages", specs=specs, check_specs=checks, partitions_def=recordings_partitions,
                 can_subset=True, description="The nine Talkthrough stages of one recording.")
    def talkthrough_stages(context: AssetExecutionContext, config: StagesConfig, whisper: ResourceParam[Whisper],
                           ocr_engine: ResourceParam[OcrEngine], diarizer: ResourceParam[engines.Diarizer]):
        selected = [k.path[-1] for k in context.selected_asset_keys]
        selected_checks = {k.name for k in context.selected_asset_check_keys}
        if not context.has_partition_key and not selected:
            # the asset graph's "Execute all" on the checks (no partition): every recording's checks, each
            # result recorded for its own partition; the run succeeds (its unpartitioned plan shows as skipped)
            _check_every_recording(context, sorted(selected_checks))
            return
        try:
            rid = _recording_of_run(context)
        except RunRefused as refused:  # no check of it can run either (see _not_checked)
            for name in sorted(selected_checks) if context.has_partition_key else ():
                yield _not_checked(CHECK_STAGE[name], name, refused.reason)
            raise _stop(refused.reason) from None
        loaded = engines.Engines(whisper=whisper, ocr=ocr_engine, diarizer=diarizer)
        # which file this is, and which process runs it (a run whose process is gone is marked, not left running)
        names = pipeline.recording_names(rid)
        probed = store.read_one("probe", rid) if "probe" not in selected else None  # an amend: already probed
        _tag_run(context, {FILENAME_TAG: names[0] if names else None,
                           DURATION_TAG: _duration(probed.get("duration_ms")) if probed else None,
                           registry.RUNNER_TAG: f"{socket.gethostname()}:{os.getpid()}"})
        named = {"filename": names[0]} if names else {}
        overrides = {k: v for k, v in config.model_dump().items() if v is not None}
        failures: list[tuple[str, str, Exception]] = []  # (stage, one-line reason, error)
        materialized: set[str] = set()
        try:
            for stage, res in pipeline.run_stages(rid, selected, overrides, engines=loaded):
                if res is pipeline.STARTED:
                    context.log.info(f'Started stage "{stage}"')
                    continue
                if isinstance(res, pipeline.Progress):  # one line per chunk / per step of the keyframe scan
                    eta = f", ETA {res['eta_s']:.0f} s" if res.get("eta_s") else ""
                    what = res.get("what") or "the audio"
                    context.log.info(f'Stage "{stage}": {100 * res["share"]:.0f} % of {what} ({res["text"]}){eta}')
                    continue
                if isinstance(res, Exception):
                    reason = str(res) if isinstance(res, pipeline.Skipped) else f"{stage}: {res.reason}"
                    failures.append((stage, reason, res))
                    continue
                md = {**res.metadata, **named}
                if stage == "manifest" and (report := _publish_report(context, rid)):
                    md["report"] = report
                if stage == "probe":
                    _tag_run(context, {DURATION_TAG: _duration(res.metadata.get("duration_ms"))})
                    if len(names) > 1:
                        md["aliases"] = ", ".join(names[1:])
                materialized.add(stage)
                yield MaterializeResult(
                    asset_key=stage, metadata=_metadata(md),
                    data_version=DataVersion(res.data_version),
                    check_results=[_check_result(stage, c) for c in res.checks if c.name in selected_checks])
        except store.PartitionBusy as e:
            failures.append(("", str(e), e))
        # checks selected without their stage (UI: "Execute check"): re-verify what is on disk
        for name in sorted(selected_checks):
            if CHECK_STAGE[name] not in selected:
                yield _check_result(CHECK_STAGE[name], pipeline.verify_check(name, rid))
        if failures:
            first = next((f for f in failures if not isinstance(f[2], pipeline.Skipped)), failures[0])
            summary = first[1] + (f" ({len(failures) - 1} downstream stage(s) skipped)" if len(failures) > 1 else "")
            context.log.error(summary)
            _tag_run(context, {FAILURE_TAG: first[1][:200]})
            for stage, reason, _err in failures:
                if stage:
                    yield _not_materialized(stage, rid, reason if stage == first[0] else
                                            f"{stage}: not run because {first[1]}")
            for name in sorted(selected_checks):
                if CHECK_STAGE[name] in selected and CHECK_STAGE[name] not in materialized:
                    yield _not_checked(CHECK_STAGE[name], name, first[1])
            if isinstance(first[2], InternalError):
                # a bug or a broken install, not the input: keep the stack (and its cause) for whoever debugs
                raise Failure(description=summary, metadata={"reason": first[1]}, allow_retries=False) from first[2]
            raise _stop(summary) from None

    return talkthrough_stages


ASSETS = [build_stages_asset()]

@op(description="Re-verify every check of the picked recording against what is on disk now (no stage re-runs).")
def check_recording_op(context: OpExecutionContext) -> None:
    try:
        rid = _recording_of_run(context)
    except RunRefused as refused:
        raise _stop(refused.reason) from None
    _tag_run(context, {FILENAME_TAG: pipeline.recording_filename(rid)})
    for name in sorted(CHECK_STAGE):
        c = _log_check(context, name, rid)
        context.log.info(f"{name}: {'passed' if c.passed else 'FAILED'}: {c.description}")


def _log_check(context, name: str, rid: str) -> pipeline.CheckResult:
    """Re-verify check ``name`` of recording ``rid`` on disk and record the result for that partition."""
    c = pipeline.verify_check(name, rid)
    context.log_event(AssetCheckEvaluation(
        asset_key=AssetKey(CHECK_STAGE[name]), check_name=name, passed=c.passed, partition=rid,
        severity=CHECK_SEVERITY[name], description=c.description, metadata={"detail": c.description}))
    return c


def _check_every_recording(context, names: list[str]) -> None:
    failed = []
    ids = context.instance.get_dynamic_partitions(PARTITIONS_NAME)
    for rid in ids:
        if not store.ID_RE.fullmatch(rid):
            continue
        failed += [f"{pipeline.recording_filename(rid) or rid}: {name}" for name in names
                   if not _log_check(context, name, rid).passed]
    context.log.info(f"no recording picked: checked {', '.join(names)} of every recording ({len(ids)}), each "
                     f"result recorded for its partition; {len(failed)} failed" + (": " + "; ".join(failed[:20]) if failed else ""))


check_recording = GraphDefinition(name="check_recording", node_defs=[check_recording_op]).to_job(
    partitions_def=recordings_partitions, executor_def=in_process_executor,
    description="Re-verify the checks of one recording (pick its partition in the Launchpad; a backfill from "
                "this job's page checks many) against what is on disk now. Dagster's Checks tab cannot "
                "execute partitioned checks itself.")

defs = Definitions(assets=ASSETS, jobs=[process_recording, check_recording, register_folder], sensors=[drop_dir_sensor],
                   resources=RESOURCES, executor=in_process_executor)
