"""Every environment variable Talkthrough reads, declared once: its type, default and one-line doc.

:func:`get` is the one reader: it parses the variable's current value (cached per raw value, so a test or a
parent process that changes the environment is seen) and raises :class:`ConfigError` naming the variable,
the bad value and what it takes. Stage functions never read the environment: their callers pass what
they need from here. The environment table of docs/operations.md is generated from :data:`VARS`
(``python -m talkthrough_assets.core.config docs/operations.md`` rewrites it; a unit test fails while they disagree).

Per-recording settings whose default an environment variable replaces (``TALKTHROUGH_MAX_FRAMES`` ...)
name that variable in their ``stagespec.Setting``; engine settings that change a stage's output
(``TALKTHROUGH_DEVICE``, ``TALKTHROUGH_OCR_DET_SIDE``) are part of that stage's config hash through its
``StageSpec.engine``.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

from talkthrough_assets.core import doctables
from talkthrough_assets.core.errors import TalkthroughError


class ConfigError(TalkthroughError, ValueError):
    """An environment variable holds a value its declaration does not accept."""


_ON = {"1", "true", "yes", "on"}
_OFF = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Var:
    name: str
    type: type  # str, int, float or bool
    default: Any
    doc: str  # one line: what it does (the README table's last column)
    default_doc: str | None = None  # how the README states a computed default
    minimum: float | None = None  # numbers: the smallest accepted value

    def parse(self, raw: str) -> Any:
        text = raw.strip()
        if self.type is bool:
            if text.lower() in _ON:
                return True
            if text.lower() in _OFF:
                return False
            raise ConfigError(f"{self.name}={raw!r}: expected on or off (1/0, true/false, yes/no); {self.doc}")
        if self.type in (int, float):
            try:
                value = self.type(text)
            except ValueError:
                kind = "a whole number" if self.type is int else "a number"
                raise ConfigError(f"{self.name}={raw!r}: expected {kind}; {self.doc}") from None
            if self.minimum is not None and value < self.minimum:
                raise ConfigError(f"{self.name}={raw!r}: expected at least {self.minimum:g}; {self.doc}")
            return value
        return text

    def shown_default(self) -> str:
        if self.default_doc is not None:
            return self.default_doc
        if self.default is None:
            return "unset"
        if self.type is bool:
            return "on" if self.default else "off"
        return f"`{self.default}`"


_V = Var
VARS: tuple[Var, ...] = (
    # where things live
    _V("TALKTHROUGH_HOME", str, None, "The data root: a folder, or `s3://bucket/prefix` for an object store.",
       default_doc="`~/.talkthrough`"),
    _V("TALKTHROUGH_LOCAL_HOME", str, None, "This machine's folder (Dagster storage, models, locks, caches) when "
       "the data root is on an object store.", default_doc="`~/.talkthrough-local/<hash of the URL>`"),
    _V("TALKTHROUGH_MODELS_DIR", str, None, "The model cache (joined Whisper base, diarization models).",
       default_doc="`<home>/models`"),
    _V("TALKTHROUGH_PG_URL", str, None, "Postgres URL: shared Dagster storage and the per-recording lock "
       "across machines (else SQLite and `flock`)."),
    _V("TALKTHROUGH_CELERY_BROKER", str, None, "Celery broker URL (e.g. `amqp://user:pw@host:5672//`): the "
       "stages of each run launched by the UI's daemon become a task for `talkthrough worker` processes on any "
       "machine (needs `TALKTHROUGH_PG_URL` and an `s3://` data root; else they run in the run's process)."),
    # per-recording setting defaults (stagespec.Setting.env)
    _V("TALKTHROUGH_MAX_SECONDS", int, 4 * 3600, "Process at most this many seconds of a recording."),
    _V("TALKTHROUGH_MAX_FRAMES", int, 120, "Keyframe budget per recording.", minimum=1),
    _V("TALKTHROUGH_WHISPER_MODEL", str, "tiny.en", "Whisper model name (`tiny.en` embedded, `base` from "
       "PyPI) or a CTranslate2 folder."),
    _V("TALKTHROUGH_LANGUAGE", str, None, "Force the transcript's language code (e.g. `en`)."),
    _V("TALKTHROUGH_OCR", bool, True, "OCR of unique keyframes; off is recorded in the manifest, not a crash."),
    # engines
    _V("TALKTHROUGH_DEVICE", str, "cpu", "Whisper's device (`cuda` for the optional GPU path); in the "
       "`segments` config hash."),
    _V("TALKTHROUGH_COMPUTE_TYPE", str, None, "Whisper's compute type; in the `segments` config hash.",
       default_doc="`int8` (`float16` on cuda)"),
    _V("TALKTHROUGH_WHISPER_THREADS", int, None, "Whisper's CPU threads; when set, its encoder's too.",
       default_doc="half the cores (a quarter beside the visual branch), at least 1; the encoder on every core "
       "(up to 8)"),
    _V("TALKTHROUGH_CHUNK_S", float, 180.0, "Whisper decodes a recording in chunks of about this many seconds, "
       "cut at silences, each result stored as soon as decoded (bench/bench_chunks.py); the first chunk is cut near "
       "60 s (or this, if shorter), so the first partial transcript is readable sooner. 120 s read the bench meeting "
       "0.58 points worse than whole-file decoding; 180 s within 0.1.", minimum=1),
    _V("TALKTHROUGH_OCR_DET_SIDE", int, 1024, "OCR text detection scales a frame's longest side to at most "
       "this (0: no cap); in the `ocr` config hash.", minimum=0),
    _V("TALKTHROUGH_DIARIZATION_MODELS", str, None, "A folder holding the diarization ONNX models "
       "(authoritative: never downloads).", default_doc="the model cache"),
    _V("TALKTHROUGH_DIARIZATION_THREADS", int, 1, "ONNX threads per diarization model."),
    _V("TALKTHROUGH_STAGE_WORKERS", int, 2, "Stages of one recording run at once (1: one after another)."),
    _V("TALKTHROUGH_BACKFILL_BATCH", int, 12, "Recordings per run of a UI backfill (one run worker and one "
       "model load serve them, one after another); 1: a run per recording (the default on the Celery route).",
       minimum=1),
    _V("TALKTHROUGH_MIN_FREE_BYTES", int, 0, "Disk reserve the probe's preflight keeps free."),
    _V("TALKTHROUGH_LOG_LEVEL", str, "CRITICAL", "Dagster's console log level for the CLI's in-process runs."),
    # the drop folder (Dagster sensor)
    _V("TALKTHROUGH_DROP_DIR", str, None, "The folder the `drop_dir_sensor` watches (set: the sensor runs)."),
    _V("TALKTHROUGH_DROP_EXTS", str, None, "Comma-separated extensions the drop folder takes.",
       default_doc="every media extension"),
    _V("TALKTHROUGH_DROP_DIARIZE", bool, False, "Diarize recordings from the drop folder."),
    _V("TALKTHROUGH_DROP_NUM_SPEAKERS", str, None, "Speaker count for drop-folder recordings (N or auto).",
       default_doc="`auto`"),
    _V("TALKTHROUGH_DROP_INTERVAL_S", float, 15.0, "Seconds between drop-folder sensor ticks."),
    _V("TALKTHROUGH_DROP_ZERO_WAIT_S", float, 60.0, "Seconds an empty dropped file waits before it fails.",
       minimum=0),
    # the MCP read server
    _V("TALKTHROUGH_MCP_REFRESH_S", float, 1.0, "The MCP server refreshes its index at most this often.",
       minimum=0),
    _V("TALKTHROUGH_MCP_WARM_WAIT_S", float, 5.0, "Readers wait this long for the index warm-up before a "
       "partial answer.", minimum=0),
    _V("TALKTHROUGH_MCP_TOKEN", str, None, "Bearer token the MCP HTTP server requires (needed off loopback; "
       ">= 32 characters)."),
    # standard variables
    _V("DAGSTER_HOME", str, None, "Dagster's instance folder (its SQLite storage: runs, event logs); an operator's "
       "own `dagster.yaml` there is used as it is.", default_doc="`<home>/dagster`"),
    _V("TZ", str, None, "The time zone of time questions (`since`, `at`) that name none (IANA name, e.g. "
       "`Europe/Paris`).", default_doc="the machine's (`/etc/localtime`)"),
    # standard variables of the object store (pyarrow's S3 filesystem)
    _V("AWS_ENDPOINT_URL_S3", str, None, "S3-compatible endpoint for the data root (before AWS_ENDPOINT_URL)."),
    _V("AWS_ENDPOINT_URL", str, None, "S3-compatible endpoint for the data root."),
    _V("AWS_REGION", str, None, "The bucket's region (before AWS_DEFAULT_REGION).", default_doc="`us-east-1`"),
    _V("AWS_DEFAULT_REGION", str, None, "The bucket's region.", default_doc="`us-east-1`"),
    _V("AWS_ACCESS_KEY_ID", str, None, "S3 credentials (with AWS_SECRET_ACCESS_KEY, read by pyarrow itself)."),
)
del _V

BY_NAME: dict[str, Var] = {v.name: v for v in VARS}


@functools.lru_cache(maxsize=256)
def _parsed(name: str, raw: str) -> Any:
    return BY_NAME[name].parse(raw)


def raw(name: str) -> str | None:
    """The variable's text as set (None when unset or blank); ``name`` must be declared in :data:`VARS`."""
    if name not in BY_NAME:
        raise KeyError(f"{name} is not declared in talkthrough_assets.core.config.VARS")
    value = os.environ.get(name)
    return value if value is not None and value.strip() else None


def is_set(name: str) -> bool:
    return raw(name) is not None


def get(name: str) -> Any:
    """The variable's value, parsed to its type, or its declared default when unset. Raises
    :class:`ConfigError` (naming the variable and what it takes) for a value it cannot take."""
    text = raw(name)
    return BY_NAME[name].default if text is None else _parsed(name, text)


def problems() -> list[str]:
    """One line per set variable whose value is refused (``talkthrough doctor`` can list them all at once)."""
    out = []
    for v in VARS:
        try:
            get(v.name)
        except ConfigError as e:
            out.append(str(e))
    return out


# --------------------------------------------------------------------------- the environment table (docs/operations.md)

ENV_TABLE_HEADER = "| variable | type | default | what it does |"


def env_table() -> str:
    rows = [ENV_TABLE_HEADER, "|---|---|---|---|"]
    for v in VARS:
        kind = "on/off" if v.type is bool else v.type.__name__
        rows.append(f"| `{v.name}` | {kind} | {v.shown_default()} | {v.doc} |")
    return "\n".join(rows) + "\n"


def readme_with_env_table(readme: str) -> str:
    """``readme`` with its environment table (header line up to the first blank line) replaced by :func:`env_table`."""
    return doctables.with_table(readme, ENV_TABLE_HEADER, env_table())


if __name__ == "__main__":  # python -m talkthrough_assets.core.config docs/operations.md: rewrite the table in place
    doctables.rewrite(readme_with_env_table, "docs/operations.md")


__all__ = ["Var", "VARS", "BY_NAME", "ConfigError", "get", "raw", "is_set", "problems", "env_table"]
