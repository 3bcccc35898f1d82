"""Every table's Arrow schema: the one place a stored column is declared."""

from __future__ import annotations

import dataclasses
from typing import Iterable

import pyarrow as pa

from talkthrough_assets.core.errors import TalkthroughError

_S, _I, _F, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
# model.frames records: a band of a frame (px), an OCR box, a container tag
_BAND = pa.struct([("x0", _I), ("y0", _I), ("x1", _I), ("y1", _I)])
_BOX = pa.struct([("box", pa.list_(pa.list_(_F))), ("text", _S), ("score", _F)])
_TAG = pa.struct([("key", _S), ("value", _S)])

# model.transcript.Span: a stretch of a recording and why (dropped, doubtful or uncovered), with the evidence of a
# language verdict (model.transcript.Evidence)
EVIDENCE = pa.struct([("p", _F), ("p_en", _F), ("speech_s", _F), ("word_p", _F), ("language", _S), ("how", _S),
                      ("rejected", _F)])
SPAN = pa.struct([("t0_ms", _I), ("t1_ms", _I), ("reason", _S), ("text", _S), ("lang", _S), ("words", _I),
                  ("evidence", EVIDENCE)])

SCHEMAS: dict[str, pa.Schema] = {
    # every path a recording's bytes were seen under (aliases)
    "sources": pa.schema([("path", _S), ("filename", _S), ("size_bytes", _I), ("mtime", _F), ("seen_at", _S)]),
    "probe": pa.schema([
        ("path", _S), ("filename", _S), ("kind", _S), ("container", _S), ("duration_ms", _I), ("size_bytes", _I),
        ("width", _I), ("height", _I), ("fps", _F), ("video_codec", _S), ("audio_codec", _S),
        ("has_audio", _B), ("has_video", _B), ("tags", pa.list_(_TAG)), ("file_mtime", _F),
        ("cap_hit", _B), ("max_seconds", _I), ("rotation", _I),
        # the header's duration when the readable media ends well before it (duration_ms is the decoded one)
        ("header_duration_ms", _I),
        # the tags as a JSON object, in rows written before ``tags`` (model.frames.tags reads both)
        ("tags_json", _S),
    ]),
    "wall_clock": pa.schema([
        ("start_utc", _S), ("tz_offset_min", _I), ("source", _S), ("confidence", _S), ("available", _B),
    ]),
    # a recording's transcript row (model.transcript.TranscriptMeta); its spans are lists of SPAN structs (an
    # older row holds them as JSON strings: LEGACY_JSON)
    "transcripts": pa.schema([
        ("available", _B), ("reason", _S), ("language", _S), ("language_probability", _F), ("model", _S),
        ("segment_count", _I), ("word_count", _I), ("audio_ms", _I), ("elapsed_s", _F),
        # segments the drop rules removed (stages/segments/rules.py): their count, each with why, their words
        ("dropped_count", _I), ("dropped", pa.list_(SPAN)), ("dropped_words", _I),
        # segments kept although the language check doubted them (too little speech to tell)
        ("doubtful_count", _I), ("doubtful", pa.list_(SPAN)),
        # voice activity (ms) and the speech no transcript word covers after it was decoded again on its own:
        # total ms and each span with why (derived from the chunk results, not a second ledger)
        ("speech_ms", _I), ("uncovered_ms", _I), ("uncovered", pa.list_(SPAN)),
    ]),
    "segments": pa.schema([
        ("seq", _I), ("t0_ms", _I), ("t1_ms", _I), ("text", _S), ("avg_logprob", _F), ("no_speech_prob", _F),
    ]),
    "words": pa.schema([("seq", _I), ("idx", _I), ("t0_ms", _I), ("t1_ms", _I), ("word", _S), ("prob", _F)]),
    # the audio's chunks for the segments stage (stages/chunks.py) and the key of each one's stored result;
    # what is covered is derived from these keys (chunkstore.coverage), never recorded a second time
    "chunks": pa.schema([("idx", _I), ("t0_ms", _I), ("t1_ms", _I), ("key", _S)]),
    # the key of each ocr row's stored result (stages/ocr_cache.py: the frame's pixels); what gc keeps
    "ocr_keys": pa.schema([("ms", _I), ("key", _S)]),
    "diarization": pa.schema([
        ("available", _B), ("requested", _B), ("reason", _S), ("engine", _S), ("engine_version", _S),
        ("segmentation_model", _S), ("embedding_model", _S), ("requested_num_speakers", _I),
        ("detected_num_speakers", _I), ("threshold", _F), ("elapsed_s", _F),
        # which speaker count was used and why ("found from the audio (--num-speakers auto)", "as given
        # (--num-speakers 4)", "2 of the 3 given (--num-speakers 3): <reason>")
        ("speaker_count", _S),
        # Whisper words no turn covered: given a speaker by their voice / left without one (under the floor)
        ("words_by_voice", _I), ("words_unassigned", _I),
    ]),
    "turns": pa.schema([("t0_ms", _I), ("t1_ms", _I), ("speaker", _S)]),
    "speakers": pa.schema([
        # OCR name candidates need the ocr branch too: the manifest stage adds them (speaker hints)
        ("label", _S), ("talk_time_ms", _I), ("turn_count", _I), ("first_ms", _I), ("last_ms", _I),
    ]),
    # attributed (possibly split) segments; joined at read time, whisper output untouched
    "speaker_segments": pa.schema([
        ("seq", _I), ("source_seq", _I), ("t0_ms", _I), ("t1_ms", _I), ("speaker", _S), ("text", _S),
        # the other speakers heard at the same time as this row's (their turns cover >= 500 ms of it)
        ("overlap", pa.list_(pa.string())),
    ]),
    # one voice per diarized label (the turns stage): the unit-norm centroid of its clean windows'
    # CAM++ embeddings, how many windows, its non-overlapped speech
    "voiceprints": pa.schema([
        ("label", _S), ("embedding", pa.list_(pa.float32())), ("windows", _I), ("speech_ms", _I), ("model", _S),
    ]),
    # people enrolled by `talkthrough name`: who a label of this recording was named as, when,
    # and a copy of its voiceprint then (so a later re-diarization cannot change whose voice it is)
    "people": pa.schema([
        ("person", _S), ("label", _S), ("named_at", _S), ("speech_ms", _I), ("embedding", pa.list_(pa.float32())),
    ]),
    "keyframes": pa.schema([
        ("ms", _I), ("file", _S), ("scene_score", _F), ("width", _I), ("height", _I), ("reason", _S),
    ]),
    # changed: the bands a new frame changed since the previous new one (null: all of it); changed_json, the same
    # as JSON in rows written before it (model.frames.bands reads both)
    "dedup": pa.schema([("ms", _I), ("dhash", _S), ("duplicate_of", _I), ("changed", pa.list_(_BAND)),
                        ("changed_json", _S)]),
    # boxes_json: the boxes as JSON in rows written before ``boxes`` (model.frames.boxes reads both)
    "ocr": pa.schema([("ms", _I), ("text", _S), ("boxes", pa.list_(_BOX)), ("mean_score", _F), ("engine", _S),
                      ("boxes_json", _S)]),
    # search index: one row per (document, term); documents are transcript segments and OCR frames
    "terms": pa.schema([
        ("source", _S), ("ref", _I), ("t_ms", _I), ("term", _S), ("tf", _I), ("doc_len", _I),
    ]),
    "recordings": pa.schema([
        ("filename", _S), ("path", _S), ("kind", _S), ("duration_ms", _I), ("size_bytes", _I),
        ("recorded_at", _S), ("tz_offset_min", _I), ("wall_clock_source", _S), ("wall_clock_confidence", _S),
        ("language", _S), ("segment_count", _I), ("frame_count", _I), ("unique_frame_count", _I),
        ("diarized", _B), ("speaker_count", _I), ("has_audio", _B), ("has_video", _B),
        ("transcript_available", _B), ("manifest_path", _S), ("processed_at", _S),
    ]),
    # one row per stage materialization (file per stage): what config/code produced the current output
    "stage_runs": pa.schema([
        ("stage", _S), ("status", _S), ("config_hash", _S), ("code_version", _S), ("reason", _S),
        ("finished_at", _S), ("elapsed_s", _F),
        # a failure that is not the input's fault (errors.InternalError: a bug, a broken install)
        ("internal", _B),
    ]),
}

TABLES = tuple(SCHEMAS)

# columns whose files written by an earlier version hold another type, still read: {table: {column: that type}}.
# The transcripts row's spans were JSON strings of the same objects (read as their structs by :func:`conform`)
LEGACY_TYPES: dict[str, dict[str, pa.DataType]] = {
    "transcripts": {"dropped": _S, "doubtful": _S, "uncovered": _S},
}


def legacy_type(table: str, column: str, type_: pa.DataType) -> bool:
    """Whether ``column`` of ``table`` stored as ``type_`` is an earlier version's form that :func:`conform` reads."""
    old = LEGACY_TYPES.get(table, {}).get(column)
    return old is not None and old.equals(type_)


def conform(table: str, data: pa.Table) -> pa.Table:
    """``data`` (a file of ``table`` read as it is) in the table's schema: a column in an earlier version's form
    (:data:`LEGACY_TYPES`: JSON text) parsed into its type now, a missing column NULL."""
    import json

    schema = SCHEMAS[table]
    cols = {}
    for f in schema:
        if f.name not in data.column_names:
            cols[f.name] = pa.nulls(data.num_rows, f.type)
            continue
        col = data.column(f.name)
        if legacy_type(table, f.name, col.type):
            col = pa.array([None if v is None else json.loads(v or "[]") for v in col.to_pylist()], type=f.type)
        cols[f.name] = col
    return pa.table(cols, schema=schema)


class SchemaMismatch(TalkthroughError, ValueError):
    """A row names a column its table's schema lacks: the value would be dropped without a word."""


def as_row(record) -> dict:
    """A stored row from a typed record (a dataclass of :mod:`talkthrough_assets.model`, nested records becoming
    Arrow structs) or a mapping."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return dataclasses.asdict(record)
    return record


def to_arrow(table: str, rows: Iterable) -> pa.Table:
    """``rows`` (typed records or mappings) as an Arrow table of ``table``'s schema. A missing column is NULL; a
    column the schema lacks raises :class:`SchemaMismatch` (declare it in SCHEMAS, or leave it out of the row)."""
    schema = SCHEMAS[table]
    rows = [as_row(r) for r in rows]
    names = set(schema.names)
    extra = sorted({k for r in rows for k in r} - names)
    if extra:
        raise SchemaMismatch(
            f"table {table!r} has no column {', '.join(map(repr, extra))}: add it to store.SCHEMAS[{table!r}] "
            f"or leave it out of the row (columns: {', '.join(schema.names)})")
    cols = {f.name: [r.get(f.name) for r in rows] for f in schema}
    return pa.table(cols, schema=schema)
