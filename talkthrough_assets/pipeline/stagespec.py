"""The one description of every stage and setting. Everything else is derived from it:

* ``settings``: the defaults (with their environment overrides), which settings each stage's config
  hash covers, the asset graph, and so what ``plan()`` re-runs after a change;
* ``pipeline``: the code version recorded per stage;
* ``definitions``: the Dagster asset specs (deps, code versions, descriptions, kinds), the asset
  checks, and the run-config class of the stages asset;
* ``cli``: `talkthrough process`'s setting options (a setting's ``flag`` and ``help``);
* the amend table of docs/architecture.md (:func:`amend_table`; ``python -m talkthrough_assets.pipeline.stagespec
  docs/architecture.md`` rewrites it, and a unit test fails while that file and this module disagree).

Adding a stage: a module under ``stages/`` with its function, its ``CODE_VERSION`` and ``run(rid, opts)``
(reads its inputs from the store, calls the function, writes its tables, returns a
``stages.runner.StageResult``; ``run(rid, opts, engines)`` and ``engines=True`` here when it needs
Whisper/OCR/the diarizer; a keyword ``ctx`` and ``context=True`` when it reports progress or cares what runs
beside it), and one ``StageSpec`` here holding that ``run``. ``opts`` is the stage's own
frozen ``Options`` (``options=`` here; None for a stage without one), built once per run by
``pipeline.options.build`` from the settings (a field named as a setting) and the environment (a field whose
metadata names its ``env`` variable): a stage module never reads the environment itself. The Dagster asset, its config,
code version, checks, the CLI options, ``plan()`` and the amend table all follow. What the runner does differently for a stage
(its branch, engine prewarm, staleness beyond settings and code, partial results, the disk estimate) is a field
or hook on its ``StageSpec``: the pipeline's runner and scheduler name no stage. No Dagster import here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from talkthrough_assets.core import config, doctables
from talkthrough_assets.pipeline import partial
from talkthrough_assets.pipeline import setting_values as values
from talkthrough_assets.stages import audio
from talkthrough_assets.stages.segments import stage as segments
from talkthrough_assets.stages import dedup
from talkthrough_assets.stages import turns as diarize
from talkthrough_assets.stages.turns.labels import parse_num_speakers
from talkthrough_assets.stages import keyframes
from talkthrough_assets.stages import manifest
from talkthrough_assets.stages import ocr
from talkthrough_assets.stages.ocr import prewarm as ocr_prewarm
from talkthrough_assets.stages import probe
from talkthrough_assets.model import search_index
from talkthrough_assets.model import terms
from talkthrough_assets.stages.segments import options as segments_options
from talkthrough_assets.stages.segments import transcribe
from talkthrough_assets.stages import wall_clock as wallclock


@dataclass(frozen=True)
class Setting:
    """A per-recording setting: kept once a run given it succeeded, part of the config hash of the stages that read it."""

    name: str
    type: type
    default: Any
    env: str | None = None  # environment variable that replaces the default
    help: str = ""  # one line; the --help of its `talkthrough process` option
    flag: str | None = None  # its `talkthrough process` option ("--max-frames"; a bool: "--diarize/--no-diarize")
    set_by: str | None = None  # the command that sets it, where that is not a `process` option
    # normalises a given or persisted value (raises ValueError with a message for the user); None: the type
    parse: Callable[[Any], Any] | None = None
    metavar: str | None = None  # its option's value in `--help`, where the type's label does not say it

    def normalize(self, value: Any) -> Any:
        return self.parse(value) if self.parse and value is not None else value


@dataclass(frozen=True)
class Check:
    name: str
    severity: str  # "WARN" or "ERROR"
    description: str
    verify: Callable[[str], Any] | None = None  # (recording id) -> CheckResult from what is stored now


@dataclass(frozen=True)
class StageSpec:
    name: str
    run: Callable[..., Any]  # the stage module's run(rid, opts) -> StageResult (+ engines when ``engines``)
    upstream: tuple[str, ...]
    settings: tuple[str, ...]  # the settings it reads: exactly what its config hash covers
    code_version: str
    writes: tuple[str, ...]  # store tables (and files) it replaces
    description: str
    kinds: frozenset[str] = field(default_factory=lambda: frozenset({"python"}))
    checks: tuple[Check, ...] = ()
    amend: str = ""  # amend table (docs/architecture.md): what changing this stage's options is called ("re-anchor")
    amend_note: str = ""  # ... and what such a change leaves alone
    engines: bool = False  # run() takes the loaded engines (Whisper, OCR, the diarizer) as a third argument
    # engine settings (the environment) that change the output, beyond ``settings``: (options) -> dict, in the
    # config hash
    engine: Callable[[Any], dict] | None = None
    options: type | None = None  # the stage's frozen Options dataclass, what its run() takes (pipeline.options)

    # once its output is stored (the Dagster asset, after each materialization): (recording id, its
    # StageResult, the recording's file names, first registered first) -> metadata added to that
    # materialization; what it raises is logged as a warning
    after: Callable[[str, Any, list[str]], dict] | None = None
    # forgetting a recording (pipeline/forget.py): (recording id) -> what removes, once the recording's tables
    # are gone, what the stage keeps beyond them (read before they go); that returns the removed locations
    forget: Callable[[str], Callable[[], list[str]]] | None = None
    # a check of the file in milliseconds, before any run starts (pipeline/preflight.py): raises
    # BadMediaError for a file this stage would reject
    reject: Callable[[Any], Any] | None = None

    # how the runner treats it (pipeline.scheduler, .prewarm, .freshness, .disk); none of them names a stage
    context: bool = False  # run() takes the stages.runner.RunContext as keyword ``ctx`` (progress, ``beside``)
    # the CPU-bound branch it belongs to: stages of different branches overlap when the run has 2+ workers, and
    # a stage's RunContext.beside names the other branches of its run ("" for none)
    branch: str = ""
    # (rid, its Options, engines, ctx) -> None: loads the engine the stage will need before the run starts
    prewarm: Callable[..., None] | None = None
    # the hook loads native code and runs first, in the caller's thread, beside Dagster's import; False: Python
    # (it starts its own thread) once Dagster's instance is open (both: bench/bench_cold_start.py)
    prewarm_native: bool = True
    # (rid, its settings, stage_runs row, its Options) -> bool: re-run although its settings and code are current
    stale: Callable[[str, dict, dict | None, Any], bool] | None = None
    # (rid, settings thunk, selected stages, done stages) -> None, or an object whose progressed() is called on
    # each of the stage's progress reports while it runs and ended(done, first failure) once the run ends
    previews: Callable[..., Any] | None = None
    # (rid, settings thunk) -> bytes the recording's run writes, or None: the "<m> MB needed" of a disk fault
    disk_need: Callable[[str, Callable[[], dict]], int | None] | None = None


def _env_default(var: str) -> Any:
    """The default of a setting that an environment variable replaces: that variable's (core.config, one place)."""
    return config.BY_NAME[var].default


def _aliases(_rid: str, _result, names: list[str]) -> dict:
    """The other names the recording's bytes were registered under, on its probe's materialization."""
    return {"aliases": ", ".join(names[1:])} if len(names) > 1 else {}


def _publish_report(rid: str, _result, _names: list[str]) -> dict:
    """Write the recording's HTML report (``talkthrough report``'s page) and its contact sheet beside the manifest
    just published, so the manifest's materialization names them; neither one, unwritten, fails the run."""
    from talkthrough_assets.read import contact_sheet, report

    try:
        out = {"report": report.publish(rid).path}
    except Exception as e:  # a view of what is already published: say so and go on
        raise RuntimeError(f"report not written: {type(e).__name__}: {e}") from e
    try:
        sheet = contact_sheet.publish(rid)
    except Exception as e:  # the report is written: keep its path, and say why the sheet is not
        return {**out, "contact_sheet_error": f"{type(e).__name__}: {e}"}
    return {**out, "contact_sheet": sheet} if sheet else out


def _release_results(rid: str) -> Callable[[], list[str]]:
    """Its stored Whisper/OCR results no other recording uses (their keys read before its tables go)."""
    from talkthrough_assets.store import cache_gc

    keys = cache_gc.keys_of(rid)
    return lambda: cache_gc.release(rid, keys)


def _forget_postings(rid: str) -> Callable[[], list[str]]:
    """Its search index part and its postings in the merged bucket (once its manifest is gone)."""
    return lambda: search_index.forget(rid)


SETTINGS: tuple[Setting, ...] = (
    Setting("max_seconds", int, _env_default("TALKTHROUGH_MAX_SECONDS"), "TALKTHROUGH_MAX_SECONDS",
            "Process at most this many seconds.", parse=values.whole("max_seconds", 1, 10 ** 7)),
    Setting("recorded_at", str, None, None, 'ISO-8601 start time; re-anchors wall_clock only ("" clears it).',
            "--recorded-at", parse=values.recorded_at, metavar="ISO"),
    Setting("whisper_model", str, None, "TALKTHROUGH_WHISPER_MODEL",  # unset: the embedded tiny.en
            "Whisper model name or CTranslate2 folder.", "--model", parse=values.whisper_model, metavar="DIR|NAME"),
    Setting("language", str, None, "TALKTHROUGH_LANGUAGE", "Force a language code (e.g. en).", "--language",
            parse=values.language, metavar="CODE"),
    Setting("vocabulary", str, None, None, "Names/terms to bias Whisper.", "--vocabulary"),
    # 5, faster-whisper's default: greedy (1) lost words on real speech (bench/bench_asr.py)
    Setting("beam_size", int, segments_options.BEAM_SIZE, None,
            "Whisper beam width (5; 1 = greedy: faster, loses words).", "--beam-size", parse=values.whole("beam_size", 1, 20), metavar="N"),
    Setting("diarize", bool, False, None, "Speaker diarization (turns).", "--diarize/--no-diarize"),
    # "auto" (the default) or a count; persisted like every setting, so `--num-speakers auto` is how a
    # recording given a count goes back to finding it from the audio
    Setting("num_speakers", str, "auto", None,
            "Speaker count: N, or auto (the default) to find it from the audio. Kept for later runs until "
            "changed.", "--num-speakers", parse=parse_num_speakers, metavar="N|auto"),
    Setting("diarize_threshold", float, 0.45, None,
            "Clustering threshold: the middle of the range that finds every speaker (bench/bench_der.py).",
            parse=values.fraction("diarize_threshold")),
    Setting("max_frames", int, _env_default("TALKTHROUGH_MAX_FRAMES"), "TALKTHROUGH_MAX_FRAMES",
            "Keyframe budget per recording.", "--max-frames", parse=values.whole("max_frames", 1, 100_000), metavar="N"),
    Setting("scene_threshold", float, keyframes.SCENE_THRESHOLD, None, "Share of the screen changed at once that is a cut.",
            parse=values.fraction("scene_threshold")),
    Setting("ocr", bool, None, "TALKTHROUGH_OCR", "OCR on unique keyframes (unset: TALKTHROUGH_OCR, on unless 'off')."),
    Setting("speaker_names", dict, {}, None, "Speaker label -> name.", set_by="talkthrough name ID S1=Alice"),
    Setting("apply_voice_names", bool, False, None,
            "Name a speaker whose voice clearly matches an enrolled person (recorded as applied by voice).",
            "--apply-voice-names/--no-apply-voice-names"),
)

SPECS: tuple[StageSpec, ...] = (
    StageSpec("probe", probe.run, (), ("max_seconds",), probe.CODE_VERSION, ("probe",),
              "Streams, duration, container tags; caps and disk-space preflight.",
              after=_aliases, reject=probe.probe_file, disk_need=probe.disk_need,
              options=probe.Options),
    StageSpec("wall_clock", wallclock.run, ("probe",), ("recorded_at",), wallclock.CODE_VERSION, ("wall_clock",),
              "Wall-clock anchor: recorded_at > QuickTime creationdate > creation_time > date tags > "
              "mtime-duration.", amend="re-anchor", options=wallclock.Options),
    StageSpec("audio", audio.run, ("probe",), (), audio.CODE_VERSION, ("audio/<id>.wav",),
              "16 kHz mono WAV cache of the first audio stream.", branch="audio"),
    StageSpec("segments", segments.run, ("audio",), transcribe.SETTINGS,
              segments.CODE_VERSION, ("segments", "words", "transcripts", "chunks"),
              "faster-whisper transcript segments + word timestamps (CPU int8, beam 5, VAD gate), decoded in "
              "chunks of a few minutes cut at silences, each kept under a content key (chunks/whisper/).",
              engines=True, engine=segments.engine_fingerprint, forget=_release_results, context=True,
              branch="audio", prewarm=segments.prewarm, stale=segments.stale, previews=partial.previews,
              options=segments_options.Options,
              checks=(Check("transcript_present_when_audible", "WARN",
                            "Audio louder than about -30 dBFS produced at least one transcript segment. Fails "
                            "(warning) when Whisper heard nothing in audible audio: music, noise, or speech in a "
                            "language the model does not know.", transcribe.verify),)),
    StageSpec("turns", diarize.run, ("audio", "segments"), ("diarize", "num_speakers", "diarize_threshold"),
              diarize.CODE_VERSION, ("diarization", "turns", "speakers", "speaker_segments", "voiceprints"),
              "Speaker turns (sherpa-onnx), roster and per-word attribution; opt-in via `diarize`.",
              engines=True, amend="diarize amend", amend_note="whisper output untouched", branch="audio",
              stale=diarize.stale, options=diarize.Options),
    StageSpec("keyframes", keyframes.run, ("probe",), ("max_frames", "scene_threshold"), keyframes.CODE_VERSION,
              ("keyframes", "frames/<id>/<generation>/"),
              "Scene-cut + interval keyframes from I-frames, GOPs decoded only where the picture changed; "
              "upright, <=1568 px JPEGs.", context=True, branch="visual", options=keyframes.Options,
              checks=(Check("frame_index_matches_disk", "ERROR",
                            "Every keyframe listed in the keyframes table exists as a JPEG under frames/. Fails "
                            "when a frame file was deleted or never written; the check_recording job re-verifies "
                            "the disk.", keyframes.frame_index_check),)),
    StageSpec("dedup", dedup.run, ("keyframes",), (), dedup.CODE_VERSION, ("dedup",),
              "A keyframe is a duplicate only if no pixel or colour changed since its run's head; new frames "
              "record which bands changed.", branch="visual"),
    StageSpec("ocr", ocr.run, ("dedup",), ("ocr",), ocr.CODE_VERSION + ".1", ("ocr", "ocr_keys"),  # .1: it wrote terms until the manifest stage took them
              "RapidOCR over unique keyframes (only the changed bands when little changed).",
              engines=True, engine=ocr.engine_fingerprint, branch="visual", prewarm=ocr_prewarm.prewarm,
              prewarm_native=False, options=ocr.Options),
    StageSpec("manifest", manifest.run, ("probe", "wall_clock", "segments", "turns", "dedup", "ocr"),
              ("speaker_names", "apply_voice_names"),
              f"{manifest.CODE_VERSION}.{terms.CODE_VERSION}.{search_index.CODE_VERSION}",
              ("manifests/<id>.json", "recordings", "terms", "index/parts/<id>.*.parquet"),
              "talkthrough-manifest/v1 JSON, the recordings row, the search terms and index part of it.", kinds=frozenset({"json"}),
              after=_publish_report, forget=_forget_postings, stale=manifest.stale, options=manifest.Options,
              checks=(Check("manifest_schema_valid", "ERROR",
                            "The published manifests/<id>.json parses and validates against "
                            "talkthrough-manifest/v1. Fails when it is missing, unreadable or invalid; the "
                            "check_recording job re-verifies it.", manifest.verify),
                      Check("unnamed_speakers_matched", "WARN",
                            "No unnamed speaker's voice matches an enrolled person. Fails (warning) listing each "
                            "label with a likely match (`talkthrough name` confirms it; "
                            "--apply-voice-names applies clear ones).", manifest.voice_check))),
)

BY_NAME: dict[str, StageSpec] = {s.name: s for s in SPECS}
SETTING_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


def _validate() -> None:
    from dataclasses import fields

    seen: set[str] = set()
    for s in SPECS:  # topological order: upstream first
        assert set(s.upstream) <= seen, f"{s.name}: upstream {set(s.upstream) - seen} must come first"
        assert set(s.settings) <= set(SETTING_BY_NAME), f"{s.name}: unknown setting(s)"
        names = {f.name for f in fields(s.options)} if s.options else set()
        assert set(s.settings) <= names, f"{s.name}: settings its Options lacks: {set(s.settings) - names}"
        envs = {f.metadata["env"] for f in fields(s.options) if "env" in f.metadata} if s.options else set()
        assert envs <= set(config.BY_NAME), f"{s.name}: Options read undeclared variables {envs - set(config.BY_NAME)}"
        seen.add(s.name)
    undeclared = [st.env for st in SETTINGS if st.env and st.env not in config.BY_NAME]
    assert not undeclared, f"settings' environment variables not declared in config.VARS: {undeclared}"
    read = {k for s in SPECS for k in s.settings}
    assert read == set(SETTING_BY_NAME), f"settings no stage reads: {set(SETTING_BY_NAME) - read}"


_validate()


def downstream(stages: set[str]) -> set[str]:
    """``stages`` and every stage that depends on one of them (what re-runs when they change)."""
    out = set(stages)
    for s in SPECS:  # topological order: a stage's upstream is decided before it
        if out.intersection(s.upstream):
            out.add(s.name)
    return out


# --------------------------------------------------------------------------- the amend table (docs/architecture.md)

AMEND_TABLE_HEADER = "| change | re-materializes |"


def amend_table() -> str:
    """The README's "| change | re-materializes |" table: per stage, the options that change its
    settings and the stages that then re-run (its downstream), in graph order."""

    def stages(names: set[str]) -> str:
        return ", ".join(f"`{s.name}`" for s in SPECS if s.name in names)

    rows = [AMEND_TABLE_HEADER, "|---|---|"]
    for sp in SPECS:
        flags = [SETTING_BY_NAME[k].flag.split("/")[0] for k in sp.settings if SETTING_BY_NAME[k].flag]
        if flags:
            change = ", ".join(f"`{f}`" for f in flags) + (f" ({sp.amend})" if sp.amend else "")
            redo = stages(downstream({sp.name})) + (f" ({sp.amend_note})" if sp.amend_note else "")
            rows.append(f"| {change} | {redo} |")
    rows.append("| a stage's `CODE_VERSION` | that stage and its downstream |")
    for st in SETTINGS:
        if st.set_by:
            rows.append(f"| `{st.set_by}` | {stages(downstream({s.name for s in SPECS if st.name in s.settings}))} |")
    return "\n".join(rows) + "\n"


def readme_with_amend_table(readme: str) -> str:
    """``readme`` with its amend table (header line up to the first blank line) replaced by :func:`amend_table`."""
    return doctables.with_table(readme, AMEND_TABLE_HEADER, amend_table())


if __name__ == "__main__":  # python -m talkthrough_assets.pipeline.stagespec docs/architecture.md: rewrite the table in place
    doctables.rewrite(readme_with_amend_table, "docs/architecture.md")


__all__ = ["Setting", "Check", "StageSpec", "SETTINGS", "SPECS", "BY_NAME", "SETTING_BY_NAME", "downstream",
           "amend_table"]
