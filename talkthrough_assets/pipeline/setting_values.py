"""What each per-recording setting accepts, checked where a value enters (a `process` option, the UI's run
config, the drop-folder defaults, the environment, a settings file) and before anything is saved: a bad value is
a one-line :class:`UsageError` naming what the setting takes, never a stored value that fails every later run."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from talkthrough_assets.core.errors import UsageError

# Whisper names the embedded and wheel-shipped models go by, besides faster-whisper's own download names
LOCAL_MODEL_NAMES = ("tiny.en", "base")


def whole(name: str, lo: int, hi: int) -> Callable[[Any], int]:
    """A whole number from ``lo`` to ``hi`` (a string from the command line, or an int)."""

    def parse(value: Any) -> int:
        text = str(value).strip()
        if isinstance(value, bool) or not text.lstrip("+-").isdigit():
            raise UsageError(f"{name} must be a whole number from {lo} to {hi}, not {value!r}")
        n = int(text)
        if not lo <= n <= hi:
            raise UsageError(f"{name} must be from {lo} to {hi}, not {n}")
        return n

    return parse


def fraction(name: str) -> Callable[[Any], float]:
    """A number above 0 and below 1."""

    def parse(value: Any) -> float:
        try:
            x = float(value) if not isinstance(value, bool) else float("nan")
        except (TypeError, ValueError):
            x = float("nan")
        if not 0.0 < x < 1.0:
            raise UsageError(f"{name} must be a number between 0 and 1, not {value!r}")
        return x

    return parse


def recorded_at(value: Any) -> str:
    """An ISO-8601 instant with a real date and time ("2026-03-14T10:26:53+01:00"; naive = this machine's zone).
    An empty value is kept as empty: it clears a recorded_at given before."""
    from talkthrough_assets.stages.wall_clock import parse_iso

    text = str(value).strip()
    if not text:
        return ""
    if len(text) < 10 or parse_iso(text) is None:
        raise UsageError(f"recorded_at must be an ISO-8601 date and time such as 2026-03-14T10:26:53+01:00, "
                         f"not {value!r} (\"\" clears it)")
    return text


def language(value: Any) -> str:
    """A language code Whisper knows (en, de, zh, ...)."""
    from faster_whisper.tokenizer import _LANGUAGE_CODES

    code = str(value).strip().lower()
    if code not in _LANGUAGE_CODES:
        raise UsageError(f"language must be a Whisper language code (en, de, fr, es, zh, ...), not {value!r}")
    return code


def whisper_model(value: Any) -> str:
    """A CTranslate2 model folder, the embedded tiny.en, the wheel-shipped base, or a faster-whisper model name."""
    text = str(value).strip()
    path = Path(text).expanduser()
    if path.is_dir():
        if not (path / "model.bin").exists():
            raise UsageError(f"model folder {text} has no model.bin (a CTranslate2 Whisper model is expected)")
        return text
    if text in LOCAL_MODEL_NAMES:  # the shipped models: checked without importing faster-whisper (~0.3 s)
        return text
    from faster_whisper.utils import available_models

    if text in available_models():
        return text
    raise UsageError(f"model must be a CTranslate2 model folder or one of {', '.join(LOCAL_MODEL_NAMES)}, "
                     f"{', '.join(m for m in available_models() if m not in LOCAL_MODEL_NAMES)}; not {value!r}")
